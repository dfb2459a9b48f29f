"""Pure-numpy decoding of encoded XEvents into columns (the reference path, no compiler needed).

Protobuf's own parser hands each event over as bytes (`XLineWire.events`); this module decodes
them all at once. The core is `scan_records`: for many messages laid side by side in one
buffer, it reads their top-level fields in lock-step, one field of every still-unfinished
message per round, so the number of Python-level rounds is the largest field count of any
message (a handful), never the number of messages (beyond `LOCKSTEP_ROUNDS` rounds, the few
messages left are walked by doubling jumps, `_field_starts`):

    msg 0: [tag v][tag v][tag len ....]          round 1 reads the first field of msg 0, 1, 2
    msg 1: [tag v][tag v]                        round 2 the second of each, and so on;
    msg 2: [tag v][tag v][tag len ..][tag len ..] finished messages drop out of later rounds.

Events are then columns picked from the records by field number, and the records of field 4
(stats) are themselves scanned the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.xspace.schema import StatKind

_MAX_VARINT_BYTES = 10
_PAD = np.zeros(_MAX_VARINT_BYTES + 8, np.uint8)


#: (row, metadata_id, kind, value, length) columns of decoded stats.
StatArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class MalformedWire(ValueError):
    """The bytes are not a well-formed protobuf message of the expected shape."""


@dataclass(frozen=True)
class Records:
    """Top-level fields of many messages: one entry per field occurrence, in read order."""

    owner: np.ndarray  # int64: index of the message the field belongs to
    field: np.ndarray  # int64: field number
    wire_type: np.ndarray  # int64
    value: np.ndarray  # uint64: varint value, fixed64 bits, or payload length
    data_start: np.ndarray  # int64: payload start for length-delimited fields


def _read_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode one varint at each position; returns (values, positions after them)."""
    values = np.zeros(len(pos), np.uint64)
    cursor = pos.copy()
    active = np.arange(len(pos))
    for shift in range(0, 7 * _MAX_VARINT_BYTES, 7):
        byte = buf[cursor[active]]
        values[active] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        cursor[active] += 1
        active = active[byte >= 0x80]
        if active.size == 0:
            return values, cursor
    raise MalformedWire("varint longer than 10 bytes")


#: Rounds read in lock-step before the few messages still unfinished (one event with a
#: million stats) are walked by `_field_starts` instead: n·log(n) in their size, not n rounds.
LOCKSTEP_ROUNDS = 64


def scan_records(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Records:
    """Read the top-level fields of the messages buf[starts[i]:ends[i]], all in parallel."""
    padded = np.concatenate([buf, _PAD])
    pos = starts.astype(np.int64, copy=True)
    chunks: list[tuple[np.ndarray, ...]] = []
    active = np.flatnonzero(pos < ends)
    rounds = 0
    while active.size:
        if rounds == LOCKSTEP_ROUNDS:
            for message in active.tolist():  # a few messages with very many fields
                at = _field_starts(padded, int(pos[message]), int(ends[message]))
                owner = np.full(len(at), message, np.int64)
                chunks.append((owner, *_read_fields(padded, len(buf), at, ends[owner])[:4]))
            break
        field, wire_type, value, data_start, next_pos, _ = _read_fields(
            padded, len(buf), pos[active], ends[active])
        chunks.append((active, field, wire_type, value, data_start))
        pos[active] = next_pos
        active = active[next_pos < ends[active]]
        rounds += 1
    if not chunks:
        empty = np.zeros(0, np.int64)
        return Records(empty, empty, empty, np.zeros(0, np.uint64), empty)
    parts = list(zip(*chunks, strict=True))
    return Records(*(np.concatenate(p) for p in parts))


def _read_fields(padded: np.ndarray, buf_len: int, at: np.ndarray, ends: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The field starting at each position `at` (its message ends at `ends`): field number,
    wire type, value, payload start, the next field's position and the position after the tag.
    Raises MalformedWire."""
    tag, after_tag = _read_varints(padded, at)
    field = (tag >> np.uint64(3)).astype(np.int64)
    wire_type = (tag & np.uint64(7)).astype(np.int64)
    value = np.zeros(len(at), np.uint64)
    data_start = np.zeros(len(at), np.int64)
    next_pos = np.empty(len(at), np.int64)

    varint = np.flatnonzero((wire_type == 0) | (wire_type == 2))
    vals, after = _read_varints(padded, after_tag[varint])
    value[varint] = vals
    next_pos[varint] = after
    delimited = varint[wire_type[varint] == 2]
    if np.any(value[delimited] > np.uint64(buf_len)):
        raise MalformedWire("field runs past the end of its message")
    data_start[delimited] = next_pos[delimited]
    next_pos[delimited] += value[delimited].astype(np.int64)

    fixed64 = np.flatnonzero(wire_type == 1)
    if fixed64.size:
        gather = padded[after_tag[fixed64, None] + np.arange(8)]
        value[fixed64] = np.ascontiguousarray(gather).view("<u8").ravel()
        next_pos[fixed64] = after_tag[fixed64] + 8
    fixed32 = np.flatnonzero(wire_type == 5)
    if fixed32.size:
        gather = padded[after_tag[fixed32, None] + np.arange(4)]
        value[fixed32] = np.ascontiguousarray(gather).view("<u4").ravel()
        next_pos[fixed32] = after_tag[fixed32] + 4
    if np.any((wire_type == 3) | (wire_type == 4) | (wire_type > 5)) or np.any(field == 0):
        raise MalformedWire("unsupported wire type or field number 0")
    if np.any(next_pos > ends):
        raise MalformedWire("field runs past the end of its message")
    return field, wire_type, value, data_start, next_pos, after_tag


def _field_starts(padded: np.ndarray, start: int, end: int) -> np.ndarray:
    """Where the fields of the message padded[start:end] begin, in order, without reading
    them one after another: a field is read speculatively at every byte (its would-be next
    field), and the chain from `start` is followed by doubling the jumps, log(fields) rounds.
    Positions that are not fields are never used (the caller reads the chain strictly)."""
    size = end - start
    seg = padded[start : min(len(padded), end + 2 * _MAX_VARINT_BYTES + 8)]
    n = len(seg)
    index = np.int32 if n < np.iinfo(np.int32).max - 64 else np.int64  # halves the gathers
    # Each varint ends at the first byte below 0x80 at or after its start: found for every
    # byte at once by a minimum accumulated from the right (n: no end in sight).
    ends_here = np.where(seg < 0x80, np.arange(n, dtype=index), index(n))
    varint_end = np.empty(n + 1, index)
    varint_end[n] = n
    if n:
        np.minimum.accumulate(ends_here[::-1], out=varint_end[n - 1 :: -1])
    wire_type = seg[:size] & 7
    after_tag = varint_end[:size] + 1
    after = varint_end[np.minimum(after_tag, n)] + 1  # after the value's varint
    nxt = np.full(size, size, index)  # unreadable: the chain ends there (read strictly)
    varint = np.flatnonzero(wire_type == 0)
    nxt[varint] = after[varint]
    delimited = np.flatnonzero(wire_type == 2)
    length_at = after_tag[delimited]
    length_bytes = after[delimited] - length_at
    length = np.zeros(len(delimited), np.int64)
    for k in range(5):  # lengths below 2**35: protobuf messages are under 2 GiB
        byte = seg[np.minimum(length_at + k, n - 1)].astype(np.int64) & 0x7F
        length |= np.where(k < length_bytes, byte << (7 * k), 0)
    fits = (length_bytes <= 5) & (length <= size)
    nxt[delimited[fits]] = after[delimited[fits]] + length[fits]
    fixed = np.flatnonzero(wire_type == 1)
    nxt[fixed] = after_tag[fixed] + 8
    fixed = np.flatnonzero(wire_type == 5)
    nxt[fixed] = after_tag[fixed] + 4
    jump = np.append(np.minimum(nxt, index(size)), index(size))  # `size` is the end
    chain = np.zeros(1, index)
    while True:  # chain holds the first 2**r positions, jump = 2**r jumps
        reached = jump[chain]
        reached = reached[reached < size]
        if len(reached) == 0:
            return chain.astype(np.int64) + start
        chain = np.concatenate([chain, reached])
        jump = jump[jump]


def _last_value(column: np.ndarray, records: Records, mask: np.ndarray) -> None:
    """column[owner] = value for the selected records; a later record wins, as in protobuf."""
    sel = np.flatnonzero(mask)
    column[records.owner[sel]] = records.value[sel].view(np.int64)


def decode_events(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, StatArrays]:
    """Decode XEvents laid out in buf; returns the same columns as the compiled decoder.

    Returns (metadata_id, offset_ps, duration_ps, num_occurrences or None,
    (stat_row, stat_metadata_id, stat_kind, stat_value, stat_length)), where string stat
    values are offsets into buf.
    """
    n = len(starts)
    ev = scan_records(buf, starts, ends)
    metadata_id = np.zeros(n, np.int64)
    offset_ps = np.zeros(n, np.int64)
    duration_ps = np.zeros(n, np.int64)
    occurrences = np.zeros(n, np.int64)
    varint = ev.wire_type == 0
    _last_value(metadata_id, ev, varint & (ev.field == 1))
    _last_value(duration_ps, ev, varint & (ev.field == 3))
    # offset_ps (2) and num_occurrences (5) share a oneof: the later one clears the other.
    data_case = np.flatnonzero(varint & ((ev.field == 2) | (ev.field == 5)))
    case_is_offset = ev.field[data_case] == 2
    case_value = ev.value[data_case].view(np.int64)
    offset_ps[ev.owner[data_case]] = np.where(case_is_offset, case_value, 0)
    occurrences[ev.owner[data_case]] = np.where(case_is_offset, 0, case_value)
    any_occurrences = bool(np.any(occurrences))

    stat_sel = np.flatnonzero((ev.wire_type == 2) & (ev.field == 4))
    stat_sel = stat_sel[np.argsort(ev.data_start[stat_sel], kind="stable")]
    stat_start = ev.data_start[stat_sel]
    stat_end = stat_start + ev.value[stat_sel].astype(np.int64)
    stats = decode_stats(buf, stat_start, stat_end, ev.owner[stat_sel].astype(np.int32))
    return metadata_id, offset_ps, duration_ps, occurrences if any_occurrences else None, stats


def decode_stats(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, rows: np.ndarray
) -> StatArrays:
    """Decode XStats laid out in buf; `rows` names the event (or metadata row) of each."""
    m = len(starts)
    rec = scan_records(buf, starts, ends)
    metadata_id = np.zeros(m, np.int64)
    kind = np.zeros(m, np.uint8)
    value = np.zeros(m, np.int64)
    length = np.zeros(m, np.int32)
    _last_value(metadata_id, rec, (rec.wire_type == 0) & (rec.field == 1))
    kinds = {
        (2, 1): StatKind.DOUBLE, (3, 0): StatKind.UINT64, (4, 0): StatKind.INT64,
        (5, 2): StatKind.STR, (6, 2): StatKind.BYTES, (7, 0): StatKind.REF,
    }
    is_value = np.zeros(len(rec.owner), bool)
    code = np.zeros(len(rec.owner), np.uint8)
    for (field_number, wire_type), stat_kind in kinds.items():
        match = (rec.field == field_number) & (rec.wire_type == wire_type)
        is_value |= match
        code[match] = stat_kind
    sel = np.flatnonzero(is_value)
    owners = rec.owner[sel]
    kind[owners] = code[sel]
    delimited = rec.wire_type[sel] == 2
    value[owners] = np.where(delimited, rec.data_start[sel], rec.value[sel].view(np.int64))
    length[owners] = np.where(delimited, rec.value[sel].astype(np.int64), 0)
    return rows.astype(np.int32), metadata_id, kind, value, length


#: How scan_fields reads a message's top-level fields: one Python step per field while fields
#: are big or few; after `_SMALL_RUN` small fields in a row (under `_BIG_FIELD_BYTES`), windows
#: of bytes are read at once by `_field_starts`, doubling from `_FIRST_WINDOW_BYTES` up to
#: `_MAX_WINDOW_BYTES` (about 100 bytes of temporaries per window byte). A plane of a million
#: small fields then costs a few numpy passes, not a million Python steps.
_SMALL_RUN = 256
_BIG_FIELD_BYTES = 4096
_FIRST_WINDOW_BYTES = 1 << 16
_MAX_WINDOW_BYTES = 1 << 20


def scan_fields(view: memoryview, start: int, end: int) -> np.ndarray:
    """Top-level fields of the message view[start:end].

    Same rows as the compiled `_wire.scan_fields`: (field, wire_type, record_start, value_start,
    end). Used above the event level (planes, lines, metadata entries). Raises MalformedWire.
    """
    buf = np.frombuffer(view, np.uint8)
    parts: list[np.ndarray] = []
    stepped: list[tuple[int, int, int, int, int]] = []
    pos = start
    small_run = 0
    window = _FIRST_WINDOW_BYTES
    while pos < end:
        if small_run < _SMALL_RUN:
            row = _step_field(view, pos, end)
            stepped.append(row)
            small_run = small_run + 1 if row[4] - row[2] < _BIG_FIELD_BYTES else 0
            pos = row[4]
            continue
        if stepped:
            parts.append(np.array(stepped, np.int64))
            stepped = []
        rows = _window_fields(buf, pos, min(end, pos + window), end)
        parts.append(rows)
        pos = int(rows[-1, 4])
        if len(rows) * _BIG_FIELD_BYTES < window or rows[-1, 4] - rows[-1, 2] >= _BIG_FIELD_BYTES:
            small_run, window = 0, _FIRST_WINDOW_BYTES  # big fields again: step them
        else:
            window = min(2 * window, _MAX_WINDOW_BYTES)
    if stepped:
        parts.append(np.array(stepped, np.int64))
    return np.concatenate(parts) if parts else np.zeros((0, 5), np.int64)


def _window_fields(buf: np.ndarray, pos: int, window_end: int, end: int) -> np.ndarray:
    """Rows of the fields that start in buf[pos:window_end], following the chain from `pos`;
    the last one may run past `window_end` (its end is where the next window starts)."""
    size = window_end - pos
    # Each field's header (tag and length, at most 20 bytes) lies within 32 bytes past the window.
    local = np.concatenate([buf[pos : min(len(buf), window_end + 32)], _PAD])
    at = _field_starts(local, 0, size)
    field, wire_type, _, data_start, next_pos, after_tag = _read_fields(
        local, end - pos, at, np.full(len(at), end - pos, np.int64))
    value_start = np.where(wire_type == 2, data_start, after_tag)
    if np.any(at[1:] != next_pos[:-1]):
        raise MalformedWire("fields do not follow one another")
    return np.stack([field, wire_type, at + pos, value_start + pos, next_pos + pos], axis=1)


def _step_field(view: memoryview, pos: int, end: int) -> tuple[int, int, int, int, int]:
    """One field read in Python: (field, wire_type, record_start, value_start, end)."""

    def varint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            if at >= end or shift >= 70:
                raise MalformedWire("truncated varint")
            byte = view[at]
            value |= (byte & 0x7F) << shift
            at += 1
            if byte < 0x80:
                return value, at
            shift += 7

    record = pos
    tag, pos = varint(pos)
    field, wire_type = tag >> 3, tag & 7
    if field == 0:
        raise MalformedWire("field number 0")
    value_start = pos
    if wire_type == 0:
        _, pos = varint(pos)
    elif wire_type == 2:
        length, value_start = varint(pos)
        pos = value_start + length
    elif wire_type in (1, 5):
        pos += 8 if wire_type == 1 else 4
    else:
        raise MalformedWire(f"unsupported wire type {wire_type}")
    if pos > end:
        raise MalformedWire("field runs past the end of its message")
    return field, wire_type, record, value_start, pos
