"""The compiled line walk hands its id and length columns over already narrowed, widening a
column in place at the first entry that does not fit; the result must be the pure path's
(wire_numpy + `_narrowed_ids` / `_narrowed_lengths`) to the dtype and every value."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from tb_profile_plugin.xspace import decode
from tb_profile_plugin.xspace.pb import xplane_pb2


def _line_bytes(event_ids: Sequence[int],
                stats: Sequence[Sequence[tuple[int, int | str]]]) -> bytes:
    """An encoded XLine: event k of metadata id event_ids[k] with stats[k] as (stat id, int
    or str value) pairs."""
    line = xplane_pb2.XLine(id=3, name="line", timestamp_ns=5)
    for k, (meta, event_stats) in enumerate(zip(event_ids, stats, strict=True)):
        event = line.events.add(metadata_id=meta, offset_ps=10 * k, duration_ps=k + 1)
        for stat_id, value in event_stats:
            if isinstance(value, str):
                event.stats.add(metadata_id=stat_id, str_value=value)
            else:
                event.stats.add(metadata_id=stat_id, int64_value=value)
    return line.SerializeToString()


def _both(data: bytes) -> tuple[decode._RawLine, decode._RawLine]:
    return (decode._decode_line(lambda: memoryview(data), True),
            decode._decode_line(lambda: memoryview(data), False))


def _assert_same(pure: decode._RawLine, compiled: decode._RawLine) -> None:
    for name in ("metadata_id", "offset_ps", "event_duration_ps"):
        a, b = getattr(pure, name), getattr(compiled, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b)
    for field in dataclasses.fields(pure.dense_stats):
        a = getattr(pure.dense_stats, field.name)
        b = getattr(compiled.dense_stats, field.name)
        assert a.dtype == b.dtype, field.name
        np.testing.assert_array_equal(a, b, err_msg=field.name)


needs_compiled = pytest.mark.skipif(not decode.compiled_decoder_available(),
                                    reason="compiled decoder not built")


@needs_compiled
@pytest.mark.parametrize("longest", [3, 255, 256, 300, 65_535, 65_536, 70_000])
def test_lengths_widen_mid_line_as_the_pure_path_narrows(longest: int) -> None:
    """Short strings first, then one of `longest` bytes, then short ones again: the walk's
    uint8 lengths become uint16 or int32 where they must, keeping every earlier length."""
    stats: list[list[tuple[int, int | str]]] = [[(1, "ab"), (2, k)] for k in range(40)]
    stats[25] = [(1, "x" * longest), (2, 25)]
    data = _line_bytes([7] * 40, stats)
    raw = decode._RawLine()
    decode._decode_line_compiled(memoryview(data), raw)
    expected = np.uint8 if longest <= 255 else np.uint16 if longest <= 65_535 else np.int32
    assert raw.stats[4].dtype == expected
    assert raw.stats[4].tolist() == [len(v) if isinstance(v, str) else 0
                                     for event in stats for _, v in event]
    _assert_same(*_both(data))


@needs_compiled
@pytest.mark.parametrize("wide", [2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40])
def test_ids_widen_mid_line_as_the_pure_path_narrows(wide: int) -> None:
    """Small event and stat ids first, then one at (or past) the edge of int32: int64 from
    there on only where an id does not fit, every earlier id kept."""
    event_ids = [3 + k % 4 for k in range(30)]
    event_ids[20] = wide
    stats: list[list[tuple[int, int | str]]] = [[(5, k), (6, "s")] for k in range(30)]
    stats[21] = [(5, 21), (wide, 9), (6, "s")]
    data = _line_bytes(event_ids, stats)
    raw = decode._RawLine()
    decode._decode_line_compiled(memoryview(data), raw)
    fits = -(2**31) <= wide < 2**31
    assert raw.metadata_id.dtype == (np.int32 if fits else np.int64)
    assert raw.stats[1].dtype == (np.int32 if fits else np.int64)
    assert raw.metadata_id.tolist() == event_ids
    _assert_same(*_both(data))


@needs_compiled
def test_an_empty_line_keeps_the_wide_empty_columns() -> None:
    """No events: the columns as `_narrowed_*` leave empty ones (int64 ids, int32 lengths)."""
    raw = decode._RawLine()
    decode._decode_line_compiled(memoryview(_line_bytes([], [])), raw)
    assert raw.metadata_id.dtype == np.int64
    assert raw.stats[1].dtype == np.int64
    assert raw.stats[4].dtype == np.int32
    _assert_same(*_both(_line_bytes([], [])))
    events_without_stats = _line_bytes([1, 2], [[], []])
    raw = decode._RawLine()
    decode._decode_line_compiled(memoryview(events_without_stats), raw)
    assert raw.metadata_id.dtype == np.int32
    assert raw.stats[1].dtype == np.int64
    assert raw.stats[4].dtype == np.int32
    _assert_same(*_both(events_without_stats))
