"""The host op table is summed over parts of whole lines (`column_sizes.CHUNK_EVENTS` events
each, a long line alone in its part): every column equals the one-part table's, on the committed
real captures (TensorFlow, JAX, NVIDIA) and on lines of nested ops with `tf_op`-tagged events
spread over many lines."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.nesting import compute_nesting
from tb_profile_plugin.analysis.events.table import build_event_table
from tb_profile_plugin.analysis.ops.op_metrics import OpTable, build_op_tables
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.fixtures import xplane_files
from tests.xspace_builder import XSpaceBuilder


def _host_table(profile: Profile) -> OpTable:
    table = build_event_table(profile)
    parent = compute_nesting(table.start_ps, table.end_ps, table.line_bounds).parent
    return build_op_tables(table, parent).host


def _columns(ops: OpTable) -> dict[str, list[object]]:
    return {name: list(np.asarray(getattr(ops, name)).tolist())
            for name in ("name", "type", "category", "occurrences", "total_ps", "self_ps",
                         "eager_self_ps", "min_ps")}


def _in_parts(profile: Profile, monkeypatch: pytest.MonkeyPatch,
              events_per_part: int) -> dict[str, list[object]]:
    monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", events_per_part)
    try:
        return _columns(_host_table(profile))
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("path", xplane_files(),
                         ids=lambda p: str(p.parent.parent.parent.parent.name))
def test_real_captures_in_parts_equal_one_part(path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    profile = decode_xspace(path.read_bytes())
    whole = _columns(_host_table(profile))
    assert whole["name"], "a capture with host ops"
    for events_per_part in (1, 37):
        assert _in_parts(profile, monkeypatch, events_per_part) == whole


def _random_host(rng: np.random.Generator, num_lines: int) -> bytes:
    """Lines of nested TensorFlow ops, allocations tagged with `tf_op` inside them (counted as
    zero-time runs of the op), eager ops and non-op events between."""
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    ops = ["a/MatMul:MatMul", "b/AddV2:AddV2", "loop:While", "c/Relu:Relu"]
    for k in range(num_lines):
        line = cpu.line(f"thread {k}", line_id=k + 1, timestamp_ns=int(rng.integers(0, 50)))
        at = 0
        for _ in range(int(rng.integers(0, 30))):
            length = int(rng.integers(1, 400))
            root = "EagerKernelExecute" if rng.random() < 0.3 else "ExecutorState::Process"
            line.event(root, at, length)
            line.event(ops[int(rng.integers(0, 4))], at + 1, max(length - 2, 0))
            inner = int(rng.integers(0, max(length - 4, 1)))
            line.event(ops[int(rng.integers(0, 4))], at + 2, inner)
            if rng.random() < 0.5:
                line.event("MemoryAllocation", at + 2, 0, tf_op=ops[int(rng.integers(0, 4))])
            if rng.random() < 0.3:
                line.event("tagged by name", at + 3, 0, tf_op="d/Conv2D")  # the name alone
            if rng.random() < 0.3:
                line.event("not an op", at + 1, 1)
            at += length + int(rng.integers(0, 50))
    return b.serialize()


def test_random_lines_in_parts_equal_one_part(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(19)
    for _ in range(40):
        profile = decode_xspace(_random_host(rng, int(rng.integers(1, 9))))
        whole = _columns(_host_table(profile))
        for events_per_part in (1, int(rng.integers(2, 60))):
            assert _in_parts(profile, monkeypatch, events_per_part) == whole


def test_tagged_events_count_as_zero_time_runs_of_their_op() -> None:
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    first = cpu.line("one", line_id=1)
    first.event("a/MatMul:MatMul", 0, 100)
    first.event("MemoryAllocation", 10, 0, tf_op="a/MatMul:MatMul")
    second = cpu.line("two", line_id=2)
    second.event("MemoryAllocation", 5, 0, tf_op="d/Conv2D")
    second.event("b/AddV2:AddV2", 20, 30)
    ops = _columns(_host_table(decode_xspace(b.serialize())))
    rows = {name: i for i, name in enumerate(ops["name"])}
    assert set(rows) == {"a/MatMul", "b/AddV2", "d/Conv2D", "IDLE"}
    assert ops["occurrences"][rows["a/MatMul"]] == 2
    assert ops["total_ps"][rows["a/MatMul"]] == 100 and ops["min_ps"][rows["a/MatMul"]] == 0
    assert ops["occurrences"][rows["d/Conv2D"]] == 1 and ops["total_ps"][rows["d/Conv2D"]] == 0
    # Line one spans [0, 100] all op time; line two [5, 50]: 45 ps, of which 30 is op time.
    assert ops["self_ps"][rows["IDLE"]] == 15


def _device_figures(path: Path) -> tuple[dict[str, list[object]], dict[str, list[object]],
                                         list[tuple[object, ...]]]:
    """A fresh decode's device op table, per-op table and jitted functions' dispatch figures
    (the analyses are kept per decoded profile: each part size decodes anew)."""
    from tb_profile_plugin.analysis.events.profile_cache import profile_forest
    from tb_profile_plugin.analysis.ops.jitted_functions import jitted_functions
    from tb_profile_plugin.analysis.steps.xla_executions import profile_executions

    profile = decode_xspace(path.read_bytes())
    table = build_event_table(profile)
    parent = compute_nesting(table.start_ps, table.end_ps, table.line_bounds).parent
    tables = build_op_tables(table, parent)
    jitted = jitted_functions(profile_forest(profile), profile_executions(profile))
    return (_columns(tables.device), _columns(tables.device_tf_ops),
            [(j.module, j.dispatches,
              None if math.isnan(j.dispatch_mean_ps) else j.dispatch_mean_ps) for j in jitted])


@pytest.mark.parametrize("name", ["jax_nvidia_train", "jax_nvidia_device_bound", "jax_cpu_plain"])
def test_device_sums_and_dispatches_in_parts_equal_one_part(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The device op sums (`_OpSums.add`) and the jitted functions' dispatches (`_dispatches`)
    are taken `CHUNK_EVENTS` events at a time: any part size gives the one-part figures."""
    path = next(p for p in xplane_files() if name in str(p))
    whole = _device_figures(path)
    assert whole[2], "a capture with jitted functions"
    assert bool(whole[0]["name"]) == ("nvidia" in name), "device ops where there is a GPU"
    assert any(count for _, count, _ in whole[2]), "dispatches counted"
    for events_per_part in (1, 53):
        monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", events_per_part)
        try:
            assert _device_figures(path) == whole
        finally:
            monkeypatch.undo()
