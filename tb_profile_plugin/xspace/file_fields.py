"""Where the fields of an XSpace are, in its bytes or in a file read a range at a time.

`FileBytes` is the file as the decoder reads it: bytes in memory (ranges are views, no copy),
or a `RangeSource` (`fs.LocalFile`) read a range at a time, so that the decoder holds one
line's bytes at once, never the whole file (an 8-GPU capture's file is ~100 bytes an event,
its decoded profile ~40). `fields_of` finds a message's fields: scanned whole in memory
(`_wire.scan_fields`, or the numpy scanner), or walked from their headers in a file, so that a
plane's lines are skipped, not read. `sampled_stats_per_event` reads a line's first events'
headers to choose how the line is walked (decode.py).
"""

from __future__ import annotations

import os
from typing import Protocol

import numpy as np

from tb_profile_plugin.xspace import wire_numpy

try:
    from tb_profile_plugin.xspace import _wire  # type: ignore[attr-defined]
except ImportError:  # no compiler at install time: the numpy scanner does the same work
    _wire = None

#: Set TB_PROFILE_PURE_DECODER=1 to force the pure-numpy decoder (tests compare both).
PURE_DECODER_ENV = "TB_PROFILE_PURE_DECODER"


def pure_path(pure: bool | None) -> bool:
    """Whether the decoder's numpy path runs: `pure` when given (True, or the compiled module
    not built), else TB_PROFILE_PURE_DECODER=1 or no compiled module."""
    if pure is None:
        return _wire is None or os.environ.get(PURE_DECODER_ENV) == "1"
    return pure or _wire is None


class RangeSource(Protocol):
    """A profile file read a range at a time (`fs.LocalFile`): the decoder holds one plane's
    bytes while it finds the lines, then each line's while it decodes it, never the whole
    file (an 8-GPU capture's file is ~100 bytes an event, its decoded profile ~40)."""

    size_bytes: int

    def read_range(self, start: int, end: int) -> bytes: ...

    def read_range_into(self, start: int, end: int, out: memoryview) -> None: ...


class FileBytes:
    """The bytes of the file: `data` itself (ranges are views, no copy), or a `RangeSource`
    read a range at a time (each range a fresh bytes object, dropped with its last view)."""

    def __init__(self, data: bytes | RangeSource) -> None:
        if isinstance(data, bytes | bytearray | memoryview):
            self.view: memoryview | None = memoryview(data)
            self.ranges: RangeSource | None = None
            self.size = len(self.view)
        else:
            self.view, self.ranges, self.size = None, data, data.size_bytes

    def read(self, start: int, end: int) -> memoryview:
        if not 0 <= start <= end <= self.size:
            raise ValueError("a field reaches past the end of the file")
        if self.view is not None:
            return self.view[start:end]
        assert self.ranges is not None
        return memoryview(self.ranges.read_range(start, end))

    def read_into(self, start: int, end: int, memory: np.ndarray | None) -> memoryview:
        """`read`, a range of a file read into `memory` (uint8, `end - start` or more: the
        caller's to reuse once the walk is done, line_budget.py) where given; bytes in
        memory are a view, as `read` gives them."""
        if memory is None or self.view is not None or not 0 <= start <= end <= self.size:
            return self.read(start, end)
        assert self.ranges is not None
        out = memoryview(memory[: end - start])  # type: ignore[arg-type]  # (a uint8 array)
        self.ranges.read_range_into(start, end, out)
        return out


def fields_of(source: FileBytes, start: int, end: int, pure: bool) -> np.ndarray:
    """`_scan`'s rows of the message at [start, end) of the file, positions in the file. Bytes
    in memory are scanned whole; a file read by ranges is walked a header at a time
    (`walk_fields`: no line or plane is read to find the fields around it)."""
    walked, rest_at = walk_fields(source, start, end)
    rest = source.read(rest_at, end)
    fields = scan(rest, 0, len(rest), pure)
    if rest_at:
        fields = fields + np.array([0, 0, rest_at, rest_at, rest_at], np.int64)
    return np.concatenate([walked, fields]) if len(walked) else fields


def walk_fields(source: FileBytes, start: int, end: int) -> tuple[np.ndarray, int]:
    """The fields (`_scan`'s rows) of the message at [start, end) of a file read by ranges,
    from their headers (read `_WINDOW_BYTES` at a time: a run of small fields is one read, a
    large field is skipped, not read), and where the rest begins: the end, unless the walk
    stopped at `_MAX_WALKED` fields (no profiler writes that many), whose rest is then read
    whole. Bytes in memory are not walked (rest: all of it)."""
    rows: list[tuple[int, int, int, int, int]] = []
    at = start
    if source.ranges is None:
        return np.zeros((0, 5), np.int64), at
    window, window_at = b"", start
    while at < end and len(rows) < _MAX_WALKED:
        if at + _HEADER_BYTES > window_at + len(window) and window_at + len(window) < end:
            window, window_at = bytes(source.read(at, min(at + _WINDOW_BYTES, end))), at
        tag, value_at = varint(window, at - window_at)
        wire_type = tag & 7
        if wire_type == 2:
            length, payload_at = varint(window, value_at)
            value, field_end = window_at + payload_at, window_at + payload_at + length
        elif wire_type == 0:
            value, field_end = window_at + value_at, window_at + varint(window, value_at)[1]
        elif wire_type in (1, 5):
            value = window_at + value_at
            field_end = value + (8 if wire_type == 1 else 4)
        else:
            raise ValueError("malformed message: truncated or not protobuf")
        if tag >> 3 == 0 or field_end > end:
            raise ValueError("malformed message: truncated or not protobuf")
        rows.append((tag >> 3, wire_type, at, value, field_end))
        at = field_end
    return np.array(rows, np.int64).reshape(-1, 5), at


#: Bytes read at a time while walking fields' headers.
_WINDOW_BYTES = 64 << 10
#: Fields of one message walked by their headers at most (a plane's lines and metadata
#: entries; the file's planes, hostnames and messages).
_MAX_WALKED = 100_000


def records_of(source: FileBytes, rows: np.ndarray) -> bytes:
    """The encoded fields of `rows` (positions in the file), tags included, joined: a message
    holding just those. Each run of adjacent fields is one read (a plane's metadata is one run
    of fields however many entries it holds: no Python step per field)."""
    if len(rows) == 0:
        return b""
    begin, end = rows[:, 2], rows[:, 4]
    cut = np.flatnonzero(begin[1:] != end[:-1]) + 1
    starts = begin[np.concatenate([[0], cut])].tolist()
    ends = end[np.concatenate([cut - 1, [len(rows) - 1]])].tolist()
    return b"".join(bytes(source.read(a, b)) for a, b in zip(starts, ends, strict=True))


#: Bytes read for one field's header: a tag and a length, 10 bytes each at most.
_HEADER_BYTES = 20


def varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at data[at:] and where it ends (ValueError: cut or longer than 10 bytes)."""
    value = shift = 0
    for k in range(at, min(at + 10, len(data))):
        value |= (data[k] & 0x7F) << shift
        if data[k] < 0x80:
            return value, k + 1
        shift += 7
    raise ValueError("malformed varint: truncated or not protobuf")


def scan(view: memoryview, start: int, end: int, pure: bool) -> np.ndarray:
    """Top-level fields of the message view[start:end] as rows
    (field, wire_type, record_start, value_start, end)."""
    if not pure:
        return np.frombuffer(_wire.scan_fields(view, start, end), np.int64).reshape(-1, 5)
    return wire_numpy.scan_fields(view, start, end)


def sampled_stats_per_event(line_bytes: memoryview, pure: bool) -> float:
    """Stats per event among the line's first `_SAMPLE_EVENTS` events within its first
    `_SAMPLE_BYTES` (0 for a line without events there): read from their headers before the
    line is walked, to choose the walk."""
    end = min(len(line_bytes), _SAMPLE_BYTES)
    window = bytes(line_bytes[:end])
    at, events, stats = 0, 0, 0
    try:
        while at < end and events < _SAMPLE_EVENTS:
            tag, value_at = varint(window, at)
            if tag & 7 == 2:
                length, payload_at = varint(window, value_at)
                at = payload_at + length
                if at > end:
                    break
                if tag >> 3 == 4:  # an event: its stats are its fields 4
                    fields = scan(line_bytes, payload_at, at, pure)
                    stats += int(np.count_nonzero(fields[:, 0] == 4))
                    events += 1
            elif tag & 7 == 0:
                at = varint(window, value_at)[1]
            elif tag & 7 in (1, 5):
                at = value_at + (8 if tag & 7 == 1 else 4)
            else:
                break
    except ValueError:  # a cut or malformed start: the walk says what is wrong
        pass
    return stats / events if events else 0.0


#: What `sampled_stats_per_event` reads of a line at most.
_SAMPLE_EVENTS = 256
_SAMPLE_BYTES = 64 << 10
