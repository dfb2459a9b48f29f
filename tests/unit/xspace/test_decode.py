"""The columnar decoder equals protobuf's own parse, on real captures and synthetic spaces."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.table import build_event_table
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace.decode import compiled_decoder_available, decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.pb import xplane_pb2
from tb_profile_plugin.xspace.schema import PLANES_READ_BY_NAME, SCOPE_RANGE_PLANE_NAME, StatKind
from tests.fixtures import xplane_files
from tests.xspace_builder import Ref, Uint, XSpaceBuilder, kernel_details

DECODERS = [pytest.param(True, id="numpy")] + (
    [pytest.param(False, id="compiled")] if compiled_decoder_available() else []
)


def _expected_stat(stat: xplane_pb2.XStat) -> tuple[int, int, object]:
    case = stat.WhichOneof("value")
    kinds = {
        "double_value": StatKind.DOUBLE, "uint64_value": StatKind.UINT64,
        "int64_value": StatKind.INT64, "str_value": StatKind.STR,
        "bytes_value": StatKind.BYTES, "ref_value": StatKind.REF, None: StatKind.NONE,
    }
    value = getattr(stat, case) if case else None
    return stat.metadata_id, int(kinds[case]), _comparable(value)


def _comparable(value: object) -> object:
    """Doubles by their bits, so NaN (which real captures hold) equals itself."""
    return struct.pack("<d", value) if isinstance(value, float) else value


def assert_same_as_protobuf(data: bytes, profile: Profile) -> None:
    space = xplane_pb2.XSpace.FromString(data)
    assert profile.hostnames == list(space.hostnames)
    assert profile.errors == list(space.errors)
    assert profile.warnings == list(space.warnings)
    assert len(profile.planes) == len(space.planes)
    for plane, expected_plane in zip(profile.planes, space.planes, strict=True):
        assert (plane.id, plane.name) == (expected_plane.id, expected_plane.name)
        if plane.name in PLANES_READ_BY_NAME:  # by name alone: no tables, no stats
            expected_plane = xplane_pb2.XPlane(id=expected_plane.id, name=expected_plane.name,
                                               lines=expected_plane.lines)
        assert sorted(plane.event_metadata.ids.tolist()) == sorted(expected_plane.event_metadata)
        for row, meta_id in enumerate(plane.event_metadata.ids.tolist()):
            meta = expected_plane.event_metadata[meta_id]
            assert plane.event_metadata.names[row] == meta.name
            assert plane.event_metadata.display_names[row] == meta.display_name
        assert plane.stat_metadata.ids.tolist() == sorted(expected_plane.stat_metadata)
        for row, stat_id in enumerate(plane.stat_metadata.ids.tolist()):
            assert plane.stat_metadata.names[row] == expected_plane.stat_metadata[stat_id].name
        assert len(plane.stats) == len(expected_plane.stats)
        assert len(plane.lines) == len(expected_plane.lines)
        for line, expected in zip(plane.lines, expected_plane.lines, strict=True):
            assert (line.id, line.display_id, line.name, line.display_name) == (
                expected.id, expected.display_id, expected.name, expected.display_name)
            assert (line.timestamp_ns, line.duration_ps) == (
                expected.timestamp_ns, expected.duration_ps)
            events = expected.events
            assert len(line.events) == len(events)
            shift_ps = (line.timestamp_ns - profile.origin_ns) * 1000
            np.testing.assert_array_equal(
                line.events.metadata_id, [e.metadata_id for e in events])
            np.testing.assert_array_equal(
                line.events.start_ps - shift_ps, [e.offset_ps for e in events])
            np.testing.assert_array_equal(
                line.events.duration_ps, [e.duration_ps for e in events])
            expected_stats = [
                (i, *_expected_stat(s)) for i, e in enumerate(events) for s in e.stats
            ]
            every = line.stats.sparse(len(events))  # dense stats too, in file order
            assert len(every) == line.stats.count(len(events)) == len(expected_stats)
            got = [
                (int(every.row[k]), int(every.metadata_id[k]), int(every.kind[k]),
                 _comparable(every.python_value(k)) if every.kind[k] else None)
                for k in range(len(every))
            ]
            assert got == expected_stats


@pytest.mark.parametrize("pure", DECODERS)
@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(p.parents[4])))
def test_real_captures_decode_like_protobuf(path: Path, pure: bool) -> None:
    data = path.read_bytes()
    profile = decode_xspace(data, pure=pure)
    assert profile.num_events > 0
    assert_same_as_protobuf(data, profile)


def test_every_fixture_is_there() -> None:
    assert len(xplane_files()) >= 6


def synthetic_space() -> bytes:
    b = XSpaceBuilder(hostnames=["worker0"])
    b.warning("some tracer warning")
    cpu = b.plane("/host:CPU")
    t = cpu.line("tf_Compute", line_id=7, timestamp_ns=1_000)
    t.event("train", offset_ps=0, duration_ps=10_000_000, step_num=1, _r=1)
    t.event("MatMul", offset_ps=5, duration_ps=2**40, long_name="dense/MatMul:MatMul")
    t.event("aggregate", num_occurrences=12, duration_ps=3)
    t.event("zero")
    t.event("neg", offset_ps=7, duration_ps=1, delta=-5, ratio=0.25, blob=b"\x00\xff",
            big=Uint(2**64 - 1), kind=Ref("kernel"), utf="日本")
    gpu = b.gpu_plane(0)
    s = gpu.line("Stream #12(Compute)", line_id=12, timestamp_ns=900)
    s.kernel("volta_sgemm_128x64_nn", offset_ps=2_000, duration_ps=5_000, correlation_id=7,
             details=kernel_details(grid=(4, 2, 1)), tf_op="dense/MatMul:MatMul", group_id=1)
    s.memcpy("HtoD", offset_ps=9_000, duration_ps=1_000, correlation_id=8, num_bytes=4096)
    return b.serialize()


@pytest.mark.parametrize("pure", DECODERS)
def test_synthetic_space_exact(pure: bool) -> None:
    data = synthetic_space()
    profile = decode_xspace(data, pure=pure)
    assert_same_as_protobuf(data, profile)
    assert profile.origin_ns == 900
    cpu = profile.planes[0].lines[0]
    # timestamp 1000 ns is 100 ns after the origin: starts shift by 100_000 ps.
    assert cpu.events.start_ps.tolist() == [100_000, 100_005, 100_000, 100_000, 100_007]
    assert cpu.events.num_occurrences is not None
    assert cpu.events.num_occurrences.tolist() == [0, 0, 12, 0, 0]
    gpu = profile.planes[1]
    assert gpu.stat_values()["devcap_core_count"] == 80
    assert gpu.stat_values()["gpu_model"] == "NVIDIA H100"
    corr = gpu.stat_metadata.id_of("correlation_id")
    assert gpu.lines[0].stats.int_column(corr, 2).tolist() == [7, 8]


def test_both_decoders_give_identical_columns() -> None:
    if not compiled_decoder_available():
        pytest.skip("compiled decoder not built")
    for path in xplane_files()[:3]:
        data = path.read_bytes()
        a, b = decode_xspace(data, pure=True), decode_xspace(data, pure=False)
        for pa, pb in zip(a.planes, b.planes, strict=True):
            for la, lb in zip(pa.lines, pb.lines, strict=True):
                for name in ("metadata_id", "start_ps", "duration_ps"):
                    np.testing.assert_array_equal(
                        getattr(la.events, name), getattr(lb.events, name))
                for name in ("row", "metadata_id", "kind", "value", "length", "strings"):
                    np.testing.assert_array_equal(getattr(la.stats, name), getattr(lb.stats, name))


@pytest.mark.parametrize("pure", DECODERS)
@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "empty"),
        (b"\x0a\xff\xff\xff\x0f", "truncated"),
        (bytes(range(256)) * 16, "not"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not"),
    ],
    ids=["empty", "truncated-length", "random", "png"],
)
def test_bad_bytes_are_unreadable(data: bytes, message: str, pure: bool) -> None:
    with pytest.raises(UnreadableProfile, match=message):
        decode_xspace(data, pure=pure)


@pytest.mark.parametrize("pure", DECODERS)
def test_truncated_real_capture_is_unreadable(pure: bool) -> None:
    data = synthetic_space()
    for cut in (len(data) // 3, len(data) // 2, len(data) - 1):
        with pytest.raises(UnreadableProfile):
            decode_xspace(data[:cut], pure=pure)


def test_space_without_events_decodes() -> None:
    b = XSpaceBuilder()
    b.plane("/host:CPU").line("idle thread")
    profile = decode_xspace(b.serialize())
    assert profile.num_events == 0
    assert profile.origin_ns == 0


@pytest.mark.parametrize("pure", DECODERS)
@pytest.mark.parametrize("what", ["lines", "planes"])
def test_a_million_empty_lines_or_planes_are_refused_fast(pure: bool, what: str) -> None:
    """Decoding costs per line and plane: a 6 MB file of 10**6 empty ones is refused with a
    sentence naming the limit, in well under 2 s, instead of minutes and gigabytes."""
    space = xplane_pb2.XSpace()
    if what == "lines":
        plane = space.planes.add(name="/host:CPU", id=1)
        for k in range(1_000_000):
            plane.lines.add(id=k)
    else:
        for k in range(1_000_000):
            space.planes.add(id=k)
    data = space.SerializeToString()
    began = time.perf_counter()
    with pytest.raises(UnreadableProfile, match=f"1,000,000 {what}.*TB_PROFILE_MAX_LINES"):
        decode_xspace(data, pure=pure)
    assert time.perf_counter() - began <= 2.0


def test_line_limit_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    builder = XSpaceBuilder()
    plane = builder.plane("/host:CPU")
    for k in range(3):
        plane.line(f"t{k}", line_id=k + 1).event("op", 0, 10)
    data = builder.serialize()
    monkeypatch.setenv("TB_PROFILE_MAX_LINES", "2")
    with pytest.raises(UnreadableProfile, match="3 lines .*at most 2"):
        decode_xspace(data)
    monkeypatch.setenv("TB_PROFILE_MAX_LINES", "3")
    assert len(decode_xspace(data).planes[0].lines) == 3


def _many_stats_space(count: int) -> bytes:
    builder = XSpaceBuilder()
    line = builder.plane("/host:CPU").line("t", line_id=1)
    event = line.event("op", 5, 10, first=1)
    plane = builder.space.planes[0]
    stat_id = plane.stat_metadata[1].id if 1 in plane.stat_metadata else 1
    for k in range(count):  # int, double and string stats in turn, as real events mix them
        stat = event.stats.add(metadata_id=stat_id)
        if k % 3 == 0:
            stat.int64_value = k
        elif k % 3 == 1:
            stat.double_value = k / 2
        else:
            stat.str_value = f"s{k}"
    line.event("after", 20, 5)
    return builder.serialize()


def test_an_event_with_very_many_stats_decodes_alike_and_fast() -> None:
    """Beyond the lock-step rounds the pure decoder walks the event by doubling jumps: the same
    columns as protobuf's reading, in n·log n (an event with 10**6 stats took minutes)."""
    data = _many_stats_space(5_000)
    pure = decode_xspace(data, pure=True)
    line = pure.planes[0].lines[0]
    assert line.events.duration_ps.tolist() == [10, 5]
    stats = line.stats
    expected = xplane_pb2.XSpace.FromString(data).planes[0].lines[0].events[0].stats
    assert int(np.count_nonzero(stats.row == 0)) == len(expected) == 5_001
    if compiled_decoder_available():
        compiled = decode_xspace(data, pure=False).planes[0].lines[0].stats
        for column in ("row", "metadata_id", "kind", "value", "length"):
            assert getattr(stats, column).tolist() == getattr(compiled, column).tolist()
    big = _many_stats_space(300_000)
    began = time.perf_counter()
    assert decode_xspace(big, pure=True).planes[0].lines[0].events.duration_ps.tolist() == [10, 5]
    assert time.perf_counter() - began <= 3.0


def _two_lines(second_timestamp_ns: int = 2_000, offset_ps: int = 0,
               duration_ps: int = 5) -> bytes:
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    cpu.line("a", line_id=1, timestamp_ns=1_000).event("x", offset_ps=0, duration_ps=10)
    cpu.line("b", line_id=2, timestamp_ns=second_timestamp_ns).event(
        "y", offset_ps=offset_ps, duration_ps=duration_ps)
    return b.serialize()


_DAY_NS = 86_400 * 10**9


@pytest.mark.parametrize("pure", DECODERS)
@pytest.mark.parametrize(("data", "message"), [
    (_two_lines(second_timestamp_ns=1_000 + 107 * _DAY_NS), "days from the start"),
    (_two_lines(second_timestamp_ns=1_000 + 4 * _DAY_NS), "days from the start"),
    (_two_lines(second_timestamp_ns=2**63 - 1), "days from the start"),
    (_two_lines(second_timestamp_ns=-(2**63)), "days from the start"),
    (_two_lines(duration_ps=-1), "negative duration"),
    (_two_lines(duration_ps=-(2**63)), "negative duration"),
    (_two_lines(duration_ps=2**62), "days from the start"),
    (_two_lines(duration_ps=2**63 - 1), "days from the start"),
    (_two_lines(offset_ps=2**63 - 1), "days from the start"),
    (_two_lines(offset_ps=-(2**63)), "days from the start"),
    (_two_lines(offset_ps=2**58, duration_ps=1), "days from the start"),
])
def test_times_that_would_wrap_are_unreadable(data: bytes, message: str, pure: bool) -> None:
    with pytest.raises(UnreadableProfile, match=f"line '[ab]' of plane '/host:CPU'.*{message}"):
        decode_xspace(data, pure=pure)


@pytest.mark.parametrize("pure", DECODERS)
def test_times_up_to_the_span_limit_decode(pure: bool) -> None:
    from tb_profile_plugin.xspace.decode import MAX_SPAN_PS

    shift_ns = 3 * _DAY_NS  # 3 days: within the 3.3-day span
    data = _two_lines(second_timestamp_ns=1_000 + shift_ns, offset_ps=7,
                      duration_ps=MAX_SPAN_PS - shift_ns * 1000 - 7)
    line = decode_xspace(data, pure=pure).planes[0].lines[1]
    assert line.events.start_ps.tolist() == [shift_ns * 1000 + 7]
    assert int(line.events.start_ps[0] + line.events.duration_ps[0]) == MAX_SPAN_PS


@pytest.mark.parametrize("pure", DECODERS)
def test_an_empty_line_far_away_is_ignored(pure: bool) -> None:
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    cpu.line("a", line_id=1, timestamp_ns=1_000).event("x", offset_ps=3, duration_ps=10)
    cpu.line("empty", line_id=2, timestamp_ns=2**63 - 1)
    profile = decode_xspace(b.serialize(), pure=pure)
    assert profile.origin_ns == 1_000
    assert profile.planes[0].lines[0].events.start_ps.tolist() == [3]


@pytest.mark.parametrize("pure", DECODERS)
def test_long_string_stats_cost_their_size(pure: bool) -> None:
    """A long string is copied as one slice (an 8 MiB string needed 136 MiB of index); the
    pure decoder's copies (events as bytes, joined, then the blob) stay within 4x."""
    import tracemalloc

    text = "=" * (8 << 20)
    b = XSpaceBuilder()
    line = b.plane("/host:CPU").line("a", line_id=1, timestamp_ns=1)
    line.event("x", offset_ps=0, duration_ps=1, short="abc", long=text, after=b"\x01\x02")
    line.event("y", offset_ps=2, duration_ps=1, short2="de")
    data = b.serialize()
    tracemalloc.start()
    try:
        profile = decode_xspace(data, pure=pure)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_same_as_protobuf(data, profile)
    assert peak < 4 * len(data)


def test_max_of_offsets_plus_durations_by_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The end check sums a line's columns a chunk at a time: the largest end is found in any
    chunk, the last one short, or a line shorter than a chunk."""
    from tb_profile_plugin.xspace import decode

    monkeypatch.setattr(decode, "_SUM_CHUNK", 7)
    rng = np.random.default_rng(2)
    for n in (1, 6, 7, 8, 14, 15, 50):
        a = rng.integers(-10**12, 10**12, n)
        b = rng.integers(0, 10**12, n)
        for where in {0, n // 2, n - 1}:
            b2 = b.copy()
            b2[where] = 5 * 10**12
            assert decode._max_sum(a, b2) == int((a + b2).max())


@pytest.mark.parametrize("pure", DECODERS)
def test_the_scope_range_plane_is_kept_by_name_alone(pure: bool) -> None:
    """JAX's `/host:__ScopeRangeCallStack__` plane: one stat per scope range (490,000 in a
    10,000-step NVIDIA capture) that no view reads. It is decoded by its id and name only, in
    far less time than a plane of that many stats takes; the other planes are whole."""
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    cpu.line("main", line_id=1).event("train", offset_ps=0, duration_ps=10)
    scope = b.plane(SCOPE_RANGE_PLANE_NAME)
    space = xplane_pb2.XSpace.FromString(b.serialize())
    scope_proto = next(p for p in space.planes if p.name == SCOPE_RANGE_PLANE_NAME)
    for k in range(200_000):  # ids as JAX writes them: high bits set, parent the previous
        scope_proto.stat_metadata[2**48 + k].id = 2**48 + k
        scope_proto.stats.add(metadata_id=2**48 + k, int64_value=2**48 + max(k - 1, 0))
    data = space.SerializeToString()
    del scope
    began = time.perf_counter()
    profile = decode_xspace(data, pure=pure)
    elapsed = time.perf_counter() - began
    plane = profile.plane(SCOPE_RANGE_PLANE_NAME)
    assert plane is not None and len(plane.stats) == 0 and len(plane.stat_metadata.ids) == 0
    cpu_plane = profile.plane("/host:CPU")
    assert cpu_plane is not None and cpu_plane.num_events == 1
    assert_same_as_protobuf(data, profile)
    assert elapsed < 1.0, elapsed


@pytest.mark.parametrize("pure", DECODERS)
def test_metadata_ids_are_int32_unless_a_line_holds_a_wider_one(pure: bool) -> None:
    """Real ids are small: a line keeps its event and stat metadata ids in 4 bytes each; a
    line with an id past int32 (negative or 2^40) keeps int64, and every event still finds its
    name, every stat its rows."""
    b = XSpaceBuilder()
    cpu = b.plane("/host:CPU")
    small = cpu.line("small ids", line_id=1)
    small.event("a:MatMul", 0, 10)
    small.event("b:AddV2", 20, 10)
    wide = cpu.line("wide ids", line_id=2)
    wide.event("a:MatMul", 0, 10)
    plane = b.space.planes[0]
    for meta_id, name in ((2**40, "far"), (-(2**33), "below")):
        plane.event_metadata[meta_id].id = meta_id
        plane.event_metadata[meta_id].name = name
        plane.lines[1].events.add(metadata_id=meta_id, offset_ps=30, duration_ps=5)
    small.event("c:Relu", 40, 1, step_num=7)  # a stat of a small id
    plane.stat_metadata[2**35].id = 2**35  # and one past int32, on the wide line
    plane.stat_metadata[2**35].name = "far stat"
    plane.lines[1].events[0].stats.add(metadata_id=2**35, int64_value=11)
    data = b.serialize()
    profile = decode_xspace(data, pure=pure)
    assert_same_as_protobuf(data, profile)
    lines = profile.planes[0].lines
    assert lines[0].events.metadata_id.dtype == np.int32
    assert lines[1].events.metadata_id.dtype == np.int64
    assert lines[0].stats.metadata_id.dtype == np.int32
    assert lines[1].stats.metadata_id.dtype == np.int64
    assert lines[1].stats.select(2**35, len(lines[1].events)).row.tolist() == [0]
    assert lines[0].stats.int_column(plane.stat_metadata[1].id, 3).tolist() == [-1, -1, 7]
    table = build_event_table(profile)
    assert [table.names[i] for i in table.name_id.tolist()] == [
        "a:MatMul", "b:AddV2", "c:Relu", "a:MatMul", "far", "below"]
