"""Real JAX CPU captures (scripts/make_fixtures.py): XLA's CPU thunks are host ops.

xprof 2.24.2 lists no op at all on these captures (only a host IDLE row:
tests/data/reference/xprof_2.24.2_jax_cpu.json); we list the XLA ops that ran, one run per
module execution, and find the same steps as the reference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import DATA_DIR, build_view

REFERENCE = json.loads((DATA_DIR / "reference" / "xprof_2.24.2_jax_cpu.json").read_text())
#: Executions per XLA module in each capture (tests/data/README.md, distinct `run_id`s).
EXECUTIONS = {"jax_cpu_steps": {"jit_train_step": 20},
              "jax_cpu_plain": {"jit_train_step": 10, "jit_eval_step": 3}}


def _capture(name: str) -> Path:
    return next((DATA_DIR / name).glob("plugins/profile/*/*.xplane.pb"))


def _host_rows(name: str) -> list[dict[str, Any]]:
    doc = build_view("tensorflow_stats", _capture(name))
    return [r for r in doc["rows"] if r["host_or_device"] == "Host" and r["op_name"] != "IDLE"]


@pytest.mark.parametrize("name", sorted(EXECUTIONS))
def test_xla_thunks_are_host_ops(name: str) -> None:
    rows = _host_rows(name)
    assert REFERENCE["fixtures"][name]["framework_op_stats"]["num_host_rows"] == 0
    types = {r["op_type"] for r in rows}
    assert "dot" in types and any(t.endswith("fusion") for t in types)
    # Every XLA op runs once per execution of its module.
    runs = set(EXECUTIONS[name].values())
    assert rows and all(r["occurrences"] in runs for r in rows)
    assert {r["occurrences"] for r in rows} == runs
    assert all(r["total_self_time_us"] > 0 for r in rows)


def test_steps_are_the_references() -> None:
    reference = REFERENCE["fixtures"]["jax_cpu_steps"]
    doc = build_view("overview_page", _capture("jax_cpu_steps"))
    assert [s["step_num"] for s in doc["steps"]] == reference["step_numbers"]
    assert [s["step_time_ms"] for s in doc["steps"]] == pytest.approx(
        [s["step_time_ms"] for s in reference["steps"]], abs=1e-6)
    assert doc["run_environment"]["device_type"] == "CPU"
    assert doc["top_device_ops"] == []


def test_host_compute_per_step_is_the_references() -> None:
    """Host compute and all others per step, to the nanosecond: python-thread events of the
    step plus the span a zero-length `StartRegion` of the XLA run keeps open until the next
    host-compute end (analysis/steps/instant_spans.py), never the XLA thunks themselves."""
    reference = REFERENCE["fixtures"]["jax_cpu_steps"]["steps"]
    doc = build_view("overview_page", _capture("jax_cpu_steps"))
    for ours, theirs in zip(doc["steps"], reference, strict=True):
        assert ours["breakdown_ms"]["host_compute"] == pytest.approx(
            theirs["host_compute_ms"], abs=1e-6)
        assert ours["breakdown_ms"]["all_others"] == pytest.approx(
            theirs["all_others_ms"], abs=1e-6)
