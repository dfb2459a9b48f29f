"""A line's stats as dense coded columns (xspace/dense_stats.py): what is made dense, what stays
sparse rows, and every reader's answer equal to the one read from the sparse rows."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.dense_stats import _compiled_plan, densify
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
        for stats in (dense, rows):
            carried, values = stats.last_values(stat_id, n)
            assert carried.tolist() == sorted(set(want.row.tolist()))
            assert values.tolist() == [want.value[want.row == r][-1] for r in carried.tolist()]
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
    carried, values = out.last_values(2, n)
    assert carried.tolist() == list(range(n)) and values[1] == value[5]


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


# -- the compiled path (_wire.dense_plan) against the numpy path ---------------------------

def _columns(row: np.ndarray, stat: np.ndarray, kind: np.ndarray, value: np.ndarray,
             length: np.ndarray, strings: np.ndarray) -> Callable[[], StatColumns]:
    """A maker of fresh copies of one line's sparse rows (each densify call its own)."""
    def make() -> StatColumns:
        return StatColumns(row.copy(), stat.copy(), kind.copy(), value.copy(), length.copy(),
                           strings)
    return make


def _regular_line(rng: np.random.Generator, n: int, *, id_dtype: type = np.int32,
                  length_dtype: type = np.uint8, id_base: int = 1
                  ) -> Callable[[], StatColumns]:
    """A line of `n` events, each listing a few of 12 stats in one order: small and wide
    integers, doubles, refs, one value everywhere, thousands of distinct values, strings of
    0-12 bytes (equal bytes at different offsets), and stats on some events only."""
    pieces = [b"", b"a", b"$$1", b"ab\x00", b"12345678", b"123456789", b"kernel_details:x",
              b"kernel_details:y", b"\xff\x00\x01"]
    blob = np.frombuffer(b"".join(pieces * 3), np.uint8)
    starts = np.cumsum([0] + [len(p) for p in pieces * 3])[:-1]
    lengths = np.array([len(p) for p in pieces * 3])
    rows, stats, kinds, values, lens = [], [], [], [], []
    columns: list[tuple[int, object, Callable[[int], int], float]] = [
        (StatKind.UINT64, None, lambda e: e // 3, 1.0),  # ~n/3 distinct: uint16 codes
        (StatKind.INT64, None, lambda e: -5 + e % 7, 1.0),
        (StatKind.INT64, None, lambda e: (e % 5) * 10**15 - 2**62, 1.0),  # wide: hashed
        (StatKind.DOUBLE, None, lambda e: int(np.float64(e % 4 / 3).view(np.int64)), 0.9),
        (StatKind.REF, None, lambda e: 42, 1.0),  # one value on every event
        (StatKind.REF, None, lambda e: 42, 0.5),  # one value, on half the events
        (StatKind.STR, "text", lambda e: e % len(starts), 1.0),
        (StatKind.BYTES, "text", lambda e: (e * 7) % len(starts), 0.7),
        (StatKind.UINT64, None, lambda e: 10**15 + e, 0.02),  # a flow on 2%: stays rows
        (StatKind.UINT64, None, lambda e: int(rng.integers(0, 300)), 1.0),  # > 255 distinct
        (StatKind.INT64, None, lambda e: int(rng.integers(-2**40, 2**40)), 0.3),  # all distinct
        (StatKind.UINT64, None, lambda e: 2**64 - 1 - e % 3 if e % 2 else e % 3, 1.0),
        (StatKind.INT64, None, lambda e: e, 1.0),  # all distinct: int32 codes past 65,535
        (StatKind.INT64, None, lambda e: 5 * e + 3, 1.0),  # all distinct, spread: hashed
        (StatKind.INT64, None, lambda e: [-2**63, 2**63 - 1, 0][e % 3], 1.0),  # the full range
    ]
    for e in range(n):
        for j, (kind, text, value, share) in enumerate(columns):
            if rng.random() >= share:
                continue
            rows.append(e)
            stats.append(id_base + 3 * j)
            kinds.append(kind)
            v = value(e)
            if text:
                values.append(int(starts[v]))
                lens.append(int(lengths[v]))
            else:
                values.append(v if v < 2**63 else v - 2**64)
                lens.append(0)
    return _columns(np.array(rows, np.int32), np.array(stats, id_dtype),
                    np.array(kinds, np.uint8), np.array(values, np.int64),
                    np.array(lens, length_dtype), blob)


def _assert_same_columns(got: StatColumns, want: StatColumns) -> None:
    for field in dataclasses.fields(StatColumns):
        a, b = getattr(got, field.name), getattr(want, field.name)
        assert a.dtype == b.dtype, (field.name, a.dtype, b.dtype)
        assert np.array_equal(a, b), field.name


def _odd_lines(rng: np.random.Generator) -> list[tuple[str, Callable[[], StatColumns], int]]:
    """Lines the compiled path must refuse or get right in its checks (the numpy path's
    answer is the reference)."""
    n = 300
    lines = []
    twice = _regular_line(rng, n)()
    stat, kind = twice.metadata_id.copy(), twice.kind.copy()
    stat[1] = stat[0]  # event 0 carries its first stat twice
    kind[40] = StatKind.NONE
    lines.append(("twice and NONE", _columns(twice.row, stat, kind, twice.value, twice.length,
                                             twice.strings), n))
    mixed = _regular_line(rng, n)()
    kind = mixed.kind.copy()
    kind[np.flatnonzero(mixed.kind == StatKind.INT64)[3]] = StatKind.UINT64
    lines.append(("two kinds", _columns(mixed.row, mixed.metadata_id, kind, mixed.value,
                                        mixed.length, mixed.strings), n))
    row = np.repeat(np.arange(n, dtype=np.int32), 4)
    against = np.tile(np.array([4, 2, 3, 4], np.int32), n)
    lines.append(("against one order", _columns(
        row, against, np.full(4 * n, StatKind.INT64, np.uint8), np.arange(4 * n),
        np.zeros(4 * n, np.uint8), np.zeros(0, np.uint8)), n))
    many = np.tile(np.arange(70, dtype=np.int32), n)
    lines.append(("70 stat ids", _columns(
        np.repeat(np.arange(n, dtype=np.int32), 70), many,
        np.full(70 * n, StatKind.INT64, np.uint8), many.astype(np.int64) % 3,
        np.zeros(70 * n, np.uint8), np.zeros(0, np.uint8)), n))
    shuffled = _regular_line(rng, n)()
    order = rng.permutation(len(shuffled))
    lines.append(("rows out of event order", _columns(
        shuffled.row[order], shuffled.metadata_id[order], shuffled.kind[order],
        shuffled.value[order], shuffled.length[order], shuffled.strings), n))
    lines.append(("events past the line", _regular_line(rng, n), n - 10))
    lines.append(("wide int64 ids", _regular_line(rng, n, id_dtype=np.int64,
                                                  id_base=2**40), n))
    lines.append(("int64 ids, uint16 lengths", _regular_line(
        rng, n, id_dtype=np.int64, length_dtype=np.uint16), n))
    lines.append(("int32 lengths", _regular_line(rng, n, length_dtype=np.int32), n))
    return lines


@pytest.mark.parametrize("pure", DECODERS)
def test_compiled_and_numpy_paths_give_equal_columns(pure: bool) -> None:
    """`densify` by `_wire.dense_plan` (pure=False) gives the numpy path's columns, every array
    equal in dtype and values, on regular lines and on every line its checks must send back
    to numpy or keep as rows."""
    rng = np.random.default_rng(7)
    long_line = _regular_line(rng, 70_000)
    lines = [("regular", _regular_line(rng, 1_000), 1_000),
             ("regular, events without stats", _regular_line(rng, 1_000), 1_300),
             ("70,000 events", long_line, 70_000)]
    for name, make, n in lines + _odd_lines(rng):
        try:
            want = densify(make(), n, pure=True)
        except IndexError:  # rows past the line's events: refused alike
            with pytest.raises(IndexError):
                densify(make(), n, pure=pure)
            continue
        got = densify(make(), n, pure=pure)
        try:
            _assert_same_columns(got, want)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from exc
    out = densify(long_line(), 70_000, pure=pure)
    assert len(out.dense_ids) >= 10 and set(out.dense_width.tolist()) == {0, 1, 2, 4}
    if not pure:  # the compiled pass did these lines itself (None: sent back to numpy)
        assert _compiled_plan(long_line(), 70_000) is not None


@pytest.mark.parametrize("pure", DECODERS)
def test_both_decoders_densify_the_gpu_line_alike(pure: bool) -> None:
    data = _gpu_space()
    _, want = _line(decode_xspace(data, pure=True).planes)
    _, got = _line(decode_xspace(data, pure=pure).planes)
    _assert_same_columns(got.stats, want.stats)


def test_host_threads_with_few_stats_an_event_keep_rows() -> None:
    """A TF host thread's events carry about one stat each: coding them saves little and cost
    40% of the decode, so such a line keeps rows; a host line whose first events carry two or
    more (a JAX launch thread) is coded, and a device line always; every path alike."""
    b = XSpaceBuilder()
    host = b.plane("/host:CPU")
    sparse_line = host.line("tf_Compute", line_id=1, timestamp_ns=1_000)
    launch_line = host.line("launches", line_id=2, timestamp_ns=1_000)
    for i in range(600):
        stats = {"step_num": i // 100} if i % 2 else {}
        sparse_line.event("op", offset_ps=i * 10, duration_ps=5, **stats)
        launch_line.event("cuLaunchKernel", offset_ps=i * 10, duration_ps=5,
                          correlation_id=Uint(i), group_id=i // 100, device_id=0)
    data = b.serialize()
    columns = []
    for pure in [param.values[0] for param in DECODERS]:
        profile = decode_xspace(data, pure=pure)
        assert_same_as_protobuf(data, profile)
        by_name = {line.name: line.stats for line in profile.planes[0].lines}
        assert not len(by_name["tf_Compute"].dense_ids)  # 0.5 stats an event: rows
        assert len(by_name["launches"].dense_ids) == 3  # 3 stats an event: coded
        columns.append({name: {f: getattr(stats, f).tolist() for f in stats.__dataclass_fields__}
                        for name, stats in by_name.items()})
    assert all(c == columns[0] for c in columns)
