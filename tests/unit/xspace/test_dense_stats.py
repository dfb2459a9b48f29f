"""A line's stats as dense coded columns (xspace/dense_stats.py): what is made dense, what stays
sparse rows, and every reader's answer equal to the one read from the sparse rows."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.dense_stats import densify
from tb_profile_plugin.xspace.model import Line, Plane, StatColumns
from tb_profile_plugin.xspace.schema import StatKind
from tests.unit.xspace.test_decode import DECODERS, assert_same_as_protobuf
from tests.xspace_builder import Ref, Uint, XSpaceBuilder, kernel_details

KERNELS = 3_000


def _gpu_space(kernels: int = KERNELS) -> bytes:
    """A CUPTI stream as JAX on GPU writes it (producers.md): kernels with correlation_id,
    context_id (a short string), kernel_details (a few distinct texts), the XLA op and module as
    refs, a stat on a few events only (flow), and memsets among them with stats of their own."""
    b = XSpaceBuilder()
    gpu = b.gpu_plane(0)
    line = gpu.line("Stream #14(Compute)", line_id=14, timestamp_ns=1_000)
    details = [kernel_details(registers_per_thread=r, grid=(g, 1, 1))
               for r in (32, 64, 128) for g in (1, 80)]
    for i in range(kernels):
        at = i * 10_000
        if i % 50 == 7:
            line.event("Memset (Device)", offset_ps=at, duration_ps=2_000,
                       correlation_id=Uint(i), context_id="1",
                       memset_details="num_bytes:4096", hlo_module=Ref("jit_step"))
            continue
        stats: dict[str, object] = {
            "correlation_id": Uint(i // 3), "context_id": "1",
            "kernel_details": details[i % len(details)],
            "hlo_op": Ref(f"fusion.{i % 40}"), "hlo_module": Ref("jit_step"),
            "theoretical_occupancy_pct": 50.0 + (i % 3),
        }
        if i % 97 == 0:
            stats["flow"] = Uint(10**15 + i)
        line.event(f"fusion_{i % 40}", offset_ps=at, duration_ps=5_000, **stats)
    return b.serialize()


def _line(profile_planes: list[Plane]) -> tuple[Plane, Line]:
    plane = next(p for p in profile_planes if p.name.startswith("/device:GPU"))
    return plane, plane.lines[0]


@pytest.mark.parametrize("pure", DECODERS)
def test_regular_stats_are_dense_and_read_back_in_file_order(pure: bool) -> None:
    data = _gpu_space()
    profile = decode_xspace(data, pure=pure)
    assert_same_as_protobuf(data, profile)  # every stat, in the file's order (via `sparse`)
    plane, line = _line(profile.planes)
    stats, n = line.stats, len(line.events)
    names = {plane.stat_metadata.name_of(int(i)): k for k, i in enumerate(stats.dense_ids)}
    assert set(names) >= {"correlation_id", "context_id", "kernel_details", "hlo_op",
                          "hlo_module", "theoretical_occupancy_pct"}
    widths = {name: int(stats.dense_width[k]) for name, k in names.items()}
    assert widths["hlo_module"] == 0  # one value on every event: no codes at all
    assert widths["context_id"] == 0  # the same string on every event, told apart by bytes
    assert widths["hlo_op"] == widths["kernel_details"] == 1
    assert widths["correlation_id"] == 2  # ~1,000 distinct ids
    flow = plane.stat_metadata.id_of("flow")
    assert flow not in stats.dense_ids.tolist()  # on 1% of the events: cheaper as rows
    assert stats.select(flow, n).row.tolist() == [i for i in range(KERNELS)
                                                  if i % 97 == 0 and i % 50 != 7]
    # 6 distinct kernel_details texts (~75 bytes) and one context id are stored once each,
    # not once per kernel (2,940 x 76 bytes); the 60 memsets' details stay rows (14 bytes each)
    assert len(stats.strings) < 6 * 80 + 1 + 60 * 14 + 1
    sparse_bytes = stats.sparse(n).nbytes
    assert stats.nbytes * 4 < sparse_bytes, (stats.nbytes, sparse_bytes)


def test_every_reader_answers_as_the_sparse_rows_do() -> None:
    profile = decode_xspace(_gpu_space())
    plane, line = _line(profile.planes)
    dense, n = line.stats, len(line.events)
    rows = dense.sparse(n)
    assert not len(rows.dense_ids)
    for stat_id in rows.stat_ids().tolist():
        assert np.array_equal(dense.int_column(stat_id, n, -7), rows.int_column(stat_id, n, -7))
        assert np.array_equal(dense.float_column(stat_id, n), rows.float_column(stat_id, n),
                              equal_nan=True)
        got, want = dense.select(stat_id, n), rows.select(stat_id, n)
        assert got.row.tolist() == want.row.tolist()
        assert [got.python_value(k, plane.stat_metadata) for k in range(len(got))] == [
            want.python_value(k, plane.stat_metadata) for k in range(len(want))]
        assert np.array_equal(dense.positions(stat_id, n) >= 0, rows.positions(stat_id, n) >= 0)
    assert np.array_equal(dense.stat_ids(), rows.stat_ids())
    assert dense.count(n) == len(rows)
    for event in (0, 7, 97, n - 1):
        one = dense.event_stats(event, n)
        lo, hi = np.searchsorted(rows.row, [event, event + 1])
        assert one.metadata_id.tolist() == rows.metadata_id[lo:hi].tolist()
        assert [one.python_value(k) for k in range(len(one))] == [
            rows.python_value(k) for k in range(lo, hi)]


def test_positions_order_two_stats_of_an_event_as_the_file_lists_them() -> None:
    profile = decode_xspace(_gpu_space())
    plane, line = _line(profile.planes)
    n = len(line.events)
    first = line.stats.positions(plane.stat_metadata.id_of("correlation_id"), n)
    later = line.stats.positions(plane.stat_metadata.id_of("hlo_module"), n)
    both = (first >= 0) & (later >= 0)
    assert both.sum() == n and np.all(later[both] > first[both])


def _rows(row: list[int], stat: list[int], kind: list[int], value: list[int]) -> StatColumns:
    return StatColumns(np.array(row, np.int32), np.array(stat, np.int32),
                       np.array(kind, np.uint8), np.array(value, np.int64),
                       np.zeros(len(row), np.uint8), np.zeros(0, np.uint8))


def test_a_stat_twice_on_an_event_or_of_two_kinds_stays_rows() -> None:
    n = 200
    row = [e for e in range(n) for _ in range(3)]
    stat = [1, 2, 3] * n
    kind = [StatKind.UINT64, StatKind.INT64, StatKind.INT64] * n
    value = [e % 4 for e in range(n) for _ in range(3)]
    stat[5] = 2  # event 1 carries stat 2 twice (and no stat 3)
    kind[6] = StatKind.DOUBLE  # event 2's stat 1 is a double: two kinds
    out = densify(_rows(row, stat, kind, value), n)
    assert out.dense_ids.tolist() == [3]
    assert sorted(set(out.metadata_id.tolist())) == [1, 2]
    assert out.int_column(2, n)[1] == value[5]  # the last of the two wins, as before


def test_events_listing_stats_against_one_order_keep_rows() -> None:
    """A TF host thread lists (4, 2, 3, 4) on some events: no one order of the line's stat ids
    gives the file's order back, so its rows are kept as they are."""
    n = 100
    row = [e for e in range(n) for _ in range(4)]
    stat = [4, 2, 3, 4] * n
    kind = [StatKind.INT64] * len(row)
    out = densify(_rows(row, stat, kind, list(range(len(row)))), n)
    assert not len(out.dense_ids) and len(out) == len(row)


def test_a_damaged_entry_is_refused() -> None:
    profile = decode_xspace(_gpu_space())
    _, line = _line(profile.planes)
    stats, n = line.stats, len(line.events)
    stats.check_dense(n)
    with pytest.raises(ValueError, match="do not fit"):
        stats.check_dense(n + 1)
    codes = stats.codes8.copy()
    codes[0] = 255
    broken = StatColumns(**{**stats.__dict__, "codes8": codes})
    with pytest.raises(ValueError, match="outside their table"):
        broken.check_dense(n)
