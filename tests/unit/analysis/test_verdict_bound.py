"""What bounds the step (analysis/steps/breakdown.py `Verdict.bound_by`, `headline`): input
where the run is highly input-bound, else the category that takes the most of the step time,
in the page's words."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.steps.breakdown import verdict
from tb_profile_plugin.analysis.steps.step_db import NUM_TYPES, EventType, StepDb


def _steps(has_device: bool, **ps: int) -> StepDb:
    """One step whose time is `ps` (EventType name -> ps)."""
    row = np.zeros((1, NUM_TYPES), np.int64)
    for name, value in ps.items():
        row[0, EventType[name]] = value
    one = np.array([1], np.int64)
    return StepDb(one, one, np.zeros(1, np.int64), np.array([row.sum()], np.int64), row,
                  has_device, 0, 0)


@pytest.mark.parametrize(("ps", "has_device", "bound_by", "headline"), [
    ({"DEVICE_COMPUTE_32": 936, "UNKNOWN_TIME": 64}, True, "computation",
     "Bounded by device compute (93.6 %)"),
    ({"HOST_PREPARE": 600, "DEVICE_COMPUTE_16": 380, "UNKNOWN_TIME": 20}, True,
     "kernel_launch", "Bounded by kernel launch (60.0 %)"),
    ({"UNKNOWN_TIME": 892, "DEVICE_COMPUTE_32": 108}, True, "all_others",
     "Bounded by 'All others' time (89.2 %)"),
    ({"HOST_COMPUTE": 803, "UNKNOWN_TIME": 197}, False, "computation",
     "Bounded by host compute (80.3 %)"),
    ({"HOST_COMPUTE": 978, "DEVICE_COMPUTE_32": 22}, True, "host",
     "Bounded by host compute with the device idle (97.8 %)"),
    ({"DEVICE_TO_DEVICE": 700, "DEVICE_COMPUTE_32": 300}, True, "transfers",
     "Bounded by device-to-device transfers (70.0 %)"),
    ({"HOST_WAIT_INPUT": 349, "HOST_COMPUTE": 574, "UNKNOWN_TIME": 77}, False, "input",
     "Bounded by input (34.9 %)"),
])
def test_the_headline_names_what_bounds_the_step(ps: dict[str, int], has_device: bool,
                                                  bound_by: str, headline: str) -> None:
    v = verdict(_steps(has_device, **ps))
    assert (v.bound_by, v.headline) == (bound_by, headline)


def test_a_moderately_input_bound_step_is_bounded_by_its_largest_category() -> None:
    v = verdict(_steps(False, HOST_WAIT_INPUT=88, HOST_COMPUTE=777, UNKNOWN_TIME=135))
    assert v.input_bound == v.stated_level == "moderately"
    assert v.headline == "Bounded by host compute (77.7 %)"


def test_no_steps_no_bound() -> None:
    v = verdict(_steps(False))
    assert (v.input_bound, v.bound_by, v.headline) == ("unknown", "", "")


def test_kernel_launch_bound_says_where_to_look() -> None:
    v = verdict(_steps(True, HOST_PREPARE=600, DEVICE_COMPUTE_16=400))
    assert v.input_bound == "not"
    assert v.statement.endswith("Kernel launch takes the most of the step time (60.0 %): "
                                "focus there.")
