"""The input pipeline analyzer reads the evidence the overview reads (issue 29 item 2): the
device's host-to-device copies, which the step breakdown counts as input time, are input ops,
with their copies and their share of device time as the overview's top device ops give them.
jax_nvidia_train (JAX on an H200): MemcpyH2D is the top device op, and the input page used to
say the profile "holds no ... host-to-device copy events"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tb_profile_plugin.analysis.steps.step_db import is_host_to_device
from tests.fixtures import build_view, xplane_files

_JAX_NVIDIA = ("jax_nvidia_train", "jax_nvidia_train_nograph", "jax_nvidia_plain")


def _capture(name: str) -> Path:
    (path,) = [p for p in xplane_files() if p.parent.parent.parent.parent.name == name]
    return path


@pytest.mark.parametrize("name", _JAX_NVIDIA)
def test_device_host_to_device_copies_are_input_ops(name: str) -> None:
    path = _capture(name)
    overview = build_view("overview_page", path)
    pipeline = build_view("input_pipeline_analyzer", path)
    copies = [op for op in overview["top_device_ops"] if is_host_to_device(op["name"])]
    assert copies, "the capture's device copies its input from the host"
    rows = {op["op_name"]: op for op in pipeline["input_ops"] if op["side"] == "device"}
    assert set(rows) == {op["name"] for op in copies}
    for op in copies:
        row = rows[op["name"]]
        assert row["category"] == "enqueue"
        assert row["count"] == op["occurrences"]
        assert row["self_time_ms"] == pytest.approx(op["self_time_ms"])
        assert row["device_time_percent"] == pytest.approx(100 * op["self_time_fraction"])
    assert not any("no input ops" in m for m in pipeline["diagnostics"]["info"])
    # Host-side input time stays the host's: the device's copies are no host time.
    assert pipeline["host_breakdown_us"]["enqueue"] == 0


def test_jax_nvidia_train_lists_its_twelve_copies_as_the_top_input_op() -> None:
    path = _capture("jax_nvidia_train")
    overview = build_view("overview_page", path)
    top = overview["top_device_ops"][0]
    assert top["name"] == "MemcpyH2D" and top["occurrences"] == 12
    assert overview["categories"]["input"]["percent"] > 0  # the overview counts it as input
    first = build_view("input_pipeline_analyzer", path)["input_ops"][0]
    assert (first["op_name"], first["count"], first["side"]) == ("MemcpyH2D", 12, "device")
    assert first["device_time_percent"] == pytest.approx(100 * top["self_time_fraction"])


def test_host_rows_carry_no_device_share() -> None:
    doc = build_view("input_pipeline_analyzer", _capture("tfdata_slow"))
    assert doc["input_ops"] and all(op["side"] == "host" and op["device_time_percent"] is None
                                    for op in doc["input_ops"])
