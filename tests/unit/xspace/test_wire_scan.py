"""The pure decoder's field scan (`wire_numpy.scan_fields`) against a plain field-by-field walk.

Above the event level the pure decoder reads a message's top-level fields in windows of bytes
at once; these tests hold it to the obvious sequential reading on real captures and on
messages mixing every wire type, field sizes on both sides of the window and of the
big-field threshold, and broken bytes.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from tb_profile_plugin.trace.wire import varint as _varint
from tb_profile_plugin.xspace import wire_numpy
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import xplane_files


def _walk(data: bytes, start: int, end: int) -> np.ndarray:
    view = memoryview(data)
    rows = []
    pos = start
    while pos < end:
        row = wire_numpy._step_field(view, pos, end)
        rows.append(row)
        pos = row[4]
    return np.array(rows, np.int64).reshape(-1, 5)


def _mixed_fields(count: int, seed: int) -> bytes:
    """`count` fields of every wire type; most small, a few bigger than the big-field
    threshold and than the first window, in runs long enough to switch between both readings."""
    rng = np.random.default_rng(seed)
    parts = []
    for k in range(count):
        field = int(rng.integers(1, 2000))
        kind = int(rng.integers(0, 4))
        if k % 5000 in range(300, 305):  # a run of big fields every 5,000
            size = int(rng.choice([5_000, 70_000, 200_000]))
            parts.append(_varint(field << 3 | 2) + _varint(size) + bytes(rng.integers(0, 256, size,
                                                                                     np.uint8)))
        elif kind == 0:
            parts.append(_varint(field << 3) + _varint(int(rng.integers(0, 2**63))))
        elif kind == 1:
            parts.append(_varint(field << 3 | 1) + bytes(rng.integers(0, 256, 8, np.uint8)))
        elif kind == 2:
            size = int(rng.integers(0, 40))
            parts.append(_varint(field << 3 | 2) + _varint(size) + bytes(rng.integers(0, 256, size,
                                                                                     np.uint8)))
        else:
            parts.append(_varint(field << 3 | 5) + bytes(rng.integers(0, 256, 4, np.uint8)))
    return b"".join(parts)


@pytest.mark.parametrize("path", xplane_files()[:4], ids=lambda p: p.name)
def test_real_captures_scan_like_a_sequential_walk(path) -> None:
    data = path.read_bytes()
    view = memoryview(data)
    top = wire_numpy.scan_fields(view, 0, len(data))
    np.testing.assert_array_equal(top, _walk(data, 0, len(data)))
    planes = top[top[:, 0] == 1]
    assert len(planes) >= 1
    for plane in planes:
        start, end = int(plane[3]), int(plane[4])
        np.testing.assert_array_equal(wire_numpy.scan_fields(view, start, end),
                                      _walk(data, start, end))


@pytest.mark.parametrize("seed", [0, 1])
def test_mixed_fields_scan_like_a_sequential_walk(seed: int) -> None:
    body = _mixed_fields(60_000, seed)
    data = b"\x07" * 13 + body + b"\xff" * 9  # the message sits inside a larger buffer
    start, end = 13, 13 + len(body)
    rows = wire_numpy.scan_fields(memoryview(data), start, end)
    assert len(rows) == 60_000
    assert set(rows[:, 1].tolist()) == {0, 1, 2, 5}
    np.testing.assert_array_equal(rows, _walk(data, start, end))


@pytest.mark.parametrize("cut", [1, 2, 3, 7, 200_001])
def test_a_cut_message_is_malformed_as_in_a_walk(cut: int) -> None:
    body = _mixed_fields(20_000, 2)
    data = body[: len(body) - cut]
    with pytest.raises(wire_numpy.MalformedWire):
        _walk(data, 0, len(data))
    with pytest.raises(wire_numpy.MalformedWire):
        wire_numpy.scan_fields(memoryview(data), 0, len(data))


def test_a_plane_of_a_million_small_fields_is_scanned_in_numpy_passes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A million empty lines took 1.6 s as a million Python steps; now all but the first few
    hundred fields are read in windows of bytes at once (counted: the Python steps taken),
    with the same rows."""
    plane = xplane_pb2.XPlane(id=1, name="/host:CPU")
    for k in range(1_000_000):
        plane.lines.add(id=k)
    data = plane.SerializeToString()
    steps = 0
    step_field = wire_numpy._step_field

    def counted(view: memoryview, pos: int, end: int) -> tuple[int, int, int, int, int]:
        nonlocal steps
        steps += 1
        return step_field(view, pos, end)

    monkeypatch.setattr(wire_numpy, "_step_field", counted)
    began = time.perf_counter()
    rows = wire_numpy.scan_fields(memoryview(data), 0, len(data))
    elapsed_s = time.perf_counter() - began
    assert int(np.count_nonzero(rows[:, 0] == 3)) == 1_000_000
    assert steps <= 2 * wire_numpy._SMALL_RUN
    assert elapsed_s <= 3.0
    monkeypatch.setattr(wire_numpy, "_step_field", step_field)
    sample = slice(0, len(rows), 997)
    np.testing.assert_array_equal(rows[sample], _walk(data, 0, len(data))[sample])
