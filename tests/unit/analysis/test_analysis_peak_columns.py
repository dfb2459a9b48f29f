"""The analysis' smaller temporaries give what the wider ones gave (issue 31): canonical
columns no line writes are one shared value, stat columns read per plane or as a mask equal
the kept column's, int64 code tables equal their stacks, and the trace window's density blocks
and pixel columns equal the gathered-column formulas they replace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.profile_cache import profile_nested
from tb_profile_plugin.analysis.ops.device_time import by_plane_and_start
from tb_profile_plugin.analysis.steps.step_db import union_per_group, union_sorted
from tb_profile_plugin.trace.derived import _rows_of
from tb_profile_plugin.trace.window import _narrower_than, density_blocks
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.producers import CORRELATION_ID_STAT, NO_DEVICE_OFFSET
from tb_profile_plugin.xspace.unique_rows import int64_rows

DATA = Path(__file__).resolve().parents[2] / "data"


def _table(capture: str):  # type: ignore[no-untyped-def]
    path = next((DATA / capture).glob("**/*.xplane.pb"))
    return profile_nested(decode_xspace(path.read_bytes())).table


def test_unwritten_canonical_columns_are_one_shared_default() -> None:
    canon = _table("jax_nvidia_train").canonical  # GPU: no device offsets, FLOPs or bytes
    for column, default in ((canon.device_offset_ps, NO_DEVICE_OFFSET),
                            (canon.flops, np.nan), (canon.bytes_accessed, np.nan)):
        assert column.strides == (0,)
        assert not column.flags.writeable
        assert len(column) == len(canon.op_name)
        np.testing.assert_array_equal(column, np.full(len(column), default))
    # written columns are columns (text codes int16: fewer than 32,768 texts)
    assert canon.op_name.strides == (2,) and canon.op_name.dtype == np.int16


def test_rows_of_a_shared_column_stay_one_value() -> None:
    shared = np.broadcast_to(np.float64(np.nan), (6,))
    rows = np.array([True, False, True, True, False, False])
    picked = _rows_of(shared, rows, 3)
    assert picked.strides == (0,) and len(picked) == 3 and np.isnan(picked).all()
    assert len(_rows_of(shared, np.zeros(6, bool), 0)) == 0
    column = np.arange(6)
    np.testing.assert_array_equal(_rows_of(column, rows, 3), column[rows])


def test_stat_masks_and_plane_rows_equal_the_kept_column() -> None:
    table = _table("jax_nvidia_train")
    mask = table.int_stat_at_least(CORRELATION_ID_STAT, 0)
    plane = table.plane_index == table.plane_index[0]
    rows = np.flatnonzero(plane)
    lo, hi = int(rows[0]), int(rows[-1]) + 1
    fresh = table.int_stat_rows(CORRELATION_ID_STAT, lo, hi)  # no kept column yet
    column = table.int_stat(CORRELATION_ID_STAT)
    assert mask.any()
    np.testing.assert_array_equal(mask, column >= 0)
    np.testing.assert_array_equal(fresh, column[lo:hi])
    np.testing.assert_array_equal(table.int_stat_rows(CORRELATION_ID_STAT, lo + 7, hi - 3),
                                  column[lo + 7 : hi - 3])  # (from the kept column now)
    np.testing.assert_array_equal(table.int_stat_rows("no such stat", lo, hi, 5),
                                  np.full(hi - lo, 5))


def test_a_column_not_kept_equals_the_kept_one() -> None:
    table = _table("jax_nvidia_train")
    once = table.int_stat(CORRELATION_ID_STAT, keep=False)
    assert table._stat_cache == {}  # made for the caller alone
    np.testing.assert_array_equal(once, table.int_stat(CORRELATION_ID_STAT))
    assert table.int_stat(CORRELATION_ID_STAT, keep=False) is table.int_stat(
        CORRELATION_ID_STAT)  # a kept column is handed out as it is


def test_int64_rows_equal_the_stacked_codes() -> None:
    a = np.array([3, -1, 7], np.int32)
    b = np.array([2**40, 0, -5], np.int64)
    out = int64_rows(a, b)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np.stack([a, b], axis=1).astype(np.int64))


def test_device_idle_order_equals_the_union_of_unsorted_columns() -> None:
    table = _table("jax_nvidia_train")
    events = np.flatnonzero(table.on_device)
    duration = table.end_ps[events] - table.start_ps[events]
    plane, start, end = by_plane_and_start(table, events, duration)
    n = len(table.profile.planes)
    wide = table.plane_index[events].astype(np.int64)
    np.testing.assert_array_equal(
        union_sorted(plane, start, end, n),
        union_per_group(wide, table.start_ps[events], table.start_ps[events] + duration, n))
    same_plane = plane[1:] == plane[:-1]
    assert np.all((plane[1:] > plane[:-1]) | (same_plane & (start[1:] >= start[:-1])))
    np.testing.assert_array_equal(np.sort(end - start), np.sort(duration))


def _gathered_blocks(ids, segment, start, end, pixel_ps):  # type: ignore[no-untyped-def]
    """The density blocks as gathered columns of every narrow event gave them."""
    sub = (end - start) < pixel_ps
    joins = np.zeros(len(ids), bool)
    joins[1:] = (sub[1:] & sub[:-1] & (segment[1:] == segment[:-1])
                 & (start[1:] <= end[:-1] + pixel_ps))
    members = np.flatnonzero(sub)
    if len(members) == 0:
        return None
    offsets = np.flatnonzero(~joins[members])
    counts = np.diff(np.append(offsets, len(members)))
    ends = np.maximum.reduceat(end[members], offsets)
    firsts = members[offsets]
    keep = counts >= 2
    firsts = firsts[keep]
    return segment[firsts], start[firsts], ends[keep], counts[keep], ids[firsts]


@pytest.mark.parametrize("seed", range(12))
def test_density_blocks_equal_the_gathered_columns(seed: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", 7)  # parts of the joins and widths
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    segment = np.sort(rng.integers(0, 4, n)).astype(np.int64)
    start = np.zeros(n, np.int64)
    for s in np.unique(segment).tolist():
        here = segment == s
        start[here] = np.sort(rng.integers(0, 1000, int(here.sum())))
    end = start + rng.integers(0, 40, n) * (rng.random(n) < 0.9) + rng.integers(0, 3, n)
    ids = np.arange(n, dtype=np.int64) * 3 + 1
    pixel_ps = float(rng.choice([0.5, 5.0, 12.5, 30.0]))
    expected = _gathered_blocks(ids, segment, start, end, pixel_ps)
    narrow = _narrower_than(start, end, pixel_ps)
    np.testing.assert_array_equal(narrow, (end - start) < pixel_ps)
    for got in (density_blocks(ids, segment, start, end, pixel_ps),
                density_blocks(ids, segment, start, end, pixel_ps, narrow.copy())):
        if expected is None:
            assert len(got) == 0
            continue
        for field, want in zip(("segment", "start_ps", "end_ps", "count", "first_id"), expected,
                               strict=True):
            np.testing.assert_array_equal(getattr(got, field), want)
