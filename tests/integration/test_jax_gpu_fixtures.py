"""Real JAX GPU captures (AMD MI300X/MI355X, ROCm tracer; tests/data/README.md) against the
reference's figures on the same files (tests/data/reference/xprof_2.24.2_jax_gpu.json).

Every kernel's `tf_op` is the constant "XlaModule:" there; the ops are the JAX op paths in the
kernels' `name` stat (xspace/producers/).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import DATA_DIR, build_view

REFERENCE = json.loads((DATA_DIR / "reference" / "xprof_2.24.2_jax_gpu.json").read_text())
CAPTURES = ("jax_gpu_conv", "jax_gpu_attention")
IDLE_TOLERANCE = 0.05


def _capture(name: str) -> Path:
    return next((DATA_DIR / name).glob("plugins/profile/*/*.xplane.pb"))


def _reference_device_rows(name: str) -> list[dict[str, Any]]:
    with_idle = REFERENCE[name]["framework_op_stats"][0]
    return [r for r in with_idle if r["host_or_device"] == "Device"]


def _reference_top_ops(name: str) -> list[str]:
    return [r["operation"] for r in REFERENCE[name]["overview_tables"]["0"]]


@pytest.mark.parametrize("name", CAPTURES)
def test_top_device_ops_are_the_references(name: str) -> None:
    ours = [r["name"] for r in build_view("overview_page", _capture(name))["top_device_ops"]]
    theirs = _reference_top_ops(name)
    assert ours[0] == theirs[0]
    assert len(set(ours[:3]) & set(theirs[:3])) >= 2
    assert not any("XlaModule" in n for n in ours)


@pytest.mark.parametrize("name", CAPTURES)
def test_device_idle_within_five_percent_of_the_reference(name: str) -> None:
    rows = build_view("tensorflow_stats", _capture(name))["rows"]
    ours = next(r["total_self_time_us"] for r in rows
                if r["host_or_device"] == "Device" and r["op_name"] == "IDLE")
    theirs = next(r["total_self_time"] for r in _reference_device_rows(name)
                  if r["operation"] == "IDLE")
    assert ours == pytest.approx(theirs, rel=IDLE_TOLERANCE)
    assert not any("XlaModule" in r["op_name"] for r in rows)


@pytest.mark.parametrize("name", CAPTURES)
def test_device_op_types_and_times_are_the_references(name: str) -> None:
    """The reference's top op: same name, type and self time to the ns."""
    rows = build_view("tensorflow_stats", _capture(name))["rows"]
    top = next(r for r in _reference_device_rows(name) if r["operation"] != "IDLE")
    ours = next(r for r in rows if r["op_name"] == top["operation"])
    assert ours["op_type"] == top["type"]
    assert ours["total_self_time_us"] == pytest.approx(top["total_self_time"], abs=1e-3)


@pytest.mark.parametrize("name", CAPTURES)
def test_kernel_rows_name_their_jax_op(name: str) -> None:
    rows = build_view("kernel_stats", _capture(name))["rows"]
    theirs = {r["kernel_name"]: r for r in REFERENCE[name]["kernel_stats"][0]}
    assert not any("XlaModule" in r["op_name"] for r in rows)
    top = sorted(theirs.values(), key=lambda r: -r["total_duration_us"])[:3]
    for ref in top:
        ours = [r for r in rows if r["kernel_name"] == ref["kernel_name"]]
        assert ref["op_name"] in {r["op_name"] for r in ours}
        assert sum(r["occurrences"] for r in ours) == ref["occurrences"]
        assert sum(r["total_duration_us"] for r in ours) == pytest.approx(
            ref["total_duration_us"], abs=1e-3)
        if ref["is_kernel_using_tensor_core"]:
            assert all(r["uses_tensor_core"] for r in ours)


@pytest.mark.parametrize("name", CAPTURES)
def test_run_environment_names_the_amd_gpu(name: str) -> None:
    env = build_view("overview_page", _capture(name))["run_environment"]
    theirs = REFERENCE[name]["overview_p"]["2"]
    assert env["device_type"] == theirs["device_type"]
    assert env["device_type"].startswith("AMD GPU - gfx9")
    assert env["device_core_count"] == int(theirs["device_core_count"])  # CUSTOM plane left out
