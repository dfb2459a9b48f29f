"""Kernel stats, device op facts, device self times and IDLE, and the compute precision
are made `column_sizes.CHUNK_EVENTS` events at a time (the self times and IDLE by parts of
whole lines and planes) and their parts merged: the 10M-event overview's peak was a key
table of every kernel. On the committed real captures every row and figure equals the
one-part result's, for parts of one event and of a few."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.nesting import compute_nesting
from tb_profile_plugin.analysis.events.table import build_event_table
from tb_profile_plugin.analysis.ops.kernel_stats import build_kernel_stats
from tb_profile_plugin.analysis.ops.op_metrics import (
    OpTable,
    build_op_tables,
    compute_precision_ps,
)
from tb_profile_plugin.analysis.steps.step_db import EventType
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.fixtures import xplane_files


def _results(profile: Profile) -> tuple[object, ...]:
    """Kernel rows, the device op tables (self times and IDLE by parts of whole lines and
    planes) and facts, and the compute precision, each event typed 16 or 32-bit
    compute by its index (every device event counts in one of the two sums)."""
    table = build_event_table(profile)
    parent = compute_nesting(table.start_ps, table.end_ps, table.line_bounds).parent
    kernels = build_kernel_stats(table)
    ops = build_op_tables(table, parent)
    types = np.where(np.arange(len(table)) % 2 == 0, EventType.DEVICE_COMPUTE_16,
                     EventType.DEVICE_COMPUTE_32)
    return (kernels.rows, kernels.num_gpu_planes, kernels.num_gpu_events,
            repr(sorted(ops.device_op_facts.items())), _columns(ops.device),
            _columns(ops.device_tf_ops), compute_precision_ps(table, types))


def _columns(ops: OpTable) -> dict[str, object]:
    return {name: np.asarray(getattr(ops, name)).tolist()
            for name in ("name", "type", "category", "occurrences", "total_ps", "self_ps",
                         "eager_self_ps", "min_ps", "idle_ps")}


@pytest.mark.parametrize("path", xplane_files(),
                         ids=lambda p: str(p.parent.parent.parent.parent.name))
def test_real_captures_in_parts_equal_one_part(path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    profile = decode_xspace(path.read_bytes())
    whole = _results(profile)
    for events_per_part in (1, 29):
        monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", events_per_part)
        try:
            assert _results(profile) == whole
        finally:
            monkeypatch.undo()


@pytest.mark.parametrize("chunk", [1, 3, 64, column_sizes.CHUNK_EVENTS])
def test_event_indices_are_flatnonzero(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`event_indices` (int32, made in parts) holds `np.flatnonzero`'s indices."""
    mask = np.random.default_rng(5).random(1000) < 0.3
    monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", chunk)
    got = column_sizes.event_indices(mask)
    assert got.dtype == np.int32
    assert got.tolist() == np.flatnonzero(mask).tolist()
    assert len(column_sizes.event_indices(np.zeros(0, bool))) == 0
