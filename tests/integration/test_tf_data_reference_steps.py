"""Six real tf.data captures against the reference plugin, step for step.

tests/data/reference/xprof_2.24.2_tfdata_steps.json holds xprof 2.24.2's step rows on the
fixtures `tfdata_{map_seq,map_parallel,interleave,cache,batch_map,py_function}`
(scripts/make_fixtures.py; tests/data/README.md). Every step and every category of our
overview must equal the reference's to the nanosecond (1e-6 ms), and so must the input
pipeline analyzer's step rows. (`tfdata_map_seq` pins the forest's rules that thread-pool
regions nest nothing and negative flow ids link: docs/analysis.md "Which events a step
counts".)
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures import DATA_DIR, build_view

REFERENCE = json.loads(
    (DATA_DIR / "reference" / "xprof_2.24.2_tfdata_steps.json").read_text())["captures"]
ONE_NS_MS = 1e-6
CATEGORY_KEYS = {  # reference key -> our category
    "device_compute_ms": "device_compute", "device_to_device_ms": "device_to_device",
    "device_collectives_ms": "device_collectives", "host_compute_ms": "host_compute",
    "kernel_launch_ms": "kernel_launch", "input_ms": "input", "output_ms": "output",
    "compile_ms": "compilation", "all_others_ms": "all_others",
}

def _doc(view: str, name: str) -> dict[str, Any]:
    return build_view(view, DATA_DIR / REFERENCE[name]["xplane"])


ALL = sorted(REFERENCE)


def test_every_new_capture_is_pinned() -> None:
    assert set(ALL) == {f"tfdata_{v}" for v in (
        "map_seq", "map_parallel", "interleave", "cache", "batch_map", "py_function")}
    assert all(REFERENCE[name]["num_steps"] == 18 for name in ALL)


@pytest.mark.parametrize("name", ALL)
def test_same_steps_and_step_times(name: str) -> None:
    ref = REFERENCE[name]["steps"]
    steps = _doc("overview_page", name)["steps"]
    assert [s["step_num"] for s in steps] == [r["step_num"] for r in ref]
    for ours, theirs in zip(steps, ref, strict=True):
        assert ours["step_time_ms"] == pytest.approx(theirs["step_time_ms"], abs=ONE_NS_MS)
        # Input wait (IteratorGetNext*) agrees everywhere, map_seq included.
        assert ours["breakdown_ms"]["input"] == pytest.approx(theirs["input_ms"], abs=ONE_NS_MS)


@pytest.mark.parametrize("name", ALL)
def test_breakdown_per_step_equals_the_references(name: str) -> None:
    ref = REFERENCE[name]["steps"]
    for view in ("overview_page", "input_pipeline_analyzer"):
        steps = _doc(view, name)["steps"]
        assert len(steps) == len(ref)
        for ours, theirs in zip(steps, ref, strict=True):
            for ref_key, key in CATEGORY_KEYS.items():
                assert ours["breakdown_ms"][key] == pytest.approx(
                    theirs[ref_key], abs=ONE_NS_MS), (view, ours["step_num"], key)
