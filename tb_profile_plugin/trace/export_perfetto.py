"""Perfetto's protobuf trace format, written with numpy (no generated code, no per-event loop).

A Perfetto trace is `Trace { repeated TracePacket packet = 1; }`. We write, on one packet
sequence (`trusted_packet_sequence_id` 1):

1. one packet with `sequence_flags` = INCREMENTAL_STATE_CLEARED and `interned_data` holding
   every event name (`EventName {iid, name}`), so slices carry a small `name_iid`;
2. a `TrackDescriptor` packet per process and per thread (`uuid`, `parent_uuid`,
   `ProcessDescriptor {pid, process_name}` / `ThreadDescriptor {pid, tid, thread_name}`);
3. per event a `TrackEvent` SLICE_BEGIN at its start and SLICE_END at its end
   (`timestamp` in ns from the trace origin, `track_uuid` of its thread), ordered per thread
   so that ends come before begins at one instant and close the innermost open slice first
   (a zero-length event ends just after it begins).

Field numbers (from Perfetto's public protos): TracePacket timestamp 8,
trusted_packet_sequence_id 10, track_event 11, interned_data 12, sequence_flags 13,
track_descriptor 60; TrackEvent type 9 (SLICE_BEGIN 1, SLICE_END 2), name_iid 10,
track_uuid 11; TrackDescriptor uuid 1, name 2, process 3, thread 4, parent_uuid 5;
ProcessDescriptor pid 1, process_name 6; ThreadDescriptor pid 1, tid 2, thread_name 5;
InternedData event_names 2; EventName iid 1, name 2.

Packets are encoded in chunks: each field's varints are computed for a whole column at once
and the bytes of a chunk are gathered from a per-packet byte matrix.
"""

from __future__ import annotations

from typing import IO

import numpy as np

from tb_profile_plugin.trace.window import TraceSet

SEQUENCE_ID = 1
SLICE_BEGIN = 1
SLICE_END = 2
_CLEARED = 1
_NEEDS_STATE = 2
_CHUNK_EVENTS = 200_000
_TRACK_UUID_BASE = 1 << 20


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _len_field(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _int_field(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _packet(body: bytes) -> bytes:
    return _len_field(1, body)


def _varint_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Varint bytes of uint64 `values`: (matrix [n, 10] uint8, length per row)."""
    v = values.astype(np.uint64)
    shifts = np.arange(10, dtype=np.uint64) * np.uint64(7)
    groups = (v[:, None] >> shifts[None, :]) & np.uint64(0x7F)
    bits = np.zeros(len(v), np.int64)
    x = v.copy()
    while np.any(x):
        bits += x > 0
        x >>= np.uint64(7)
    lengths = np.maximum(bits, 1)
    cont = np.arange(10)[None, :] < (lengths[:, None] - 1)
    matrix = (groups | np.where(cont, np.uint64(0x80), np.uint64(0))).astype(np.uint8)
    return matrix, lengths


class _Rows:
    """Per-row byte strings built part by part: each part a byte matrix and a mask of the
    bytes in use, so a row's bytes are its masked matrix cells in column order."""

    def __init__(self, n: int) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.n = n

    def const(self, data: bytes) -> None:
        matrix = np.tile(np.frombuffer(data, np.uint8), (self.n, 1))
        self.parts.append((matrix, np.ones(matrix.shape, bool)))

    def varint(self, values: np.ndarray) -> None:
        matrix, lengths = _varint_matrix(values)
        self.parts.append((matrix, np.arange(10)[None, :] < lengths[:, None]))

    def nested(self, rows: _Rows) -> None:
        self.parts.append(rows.join())

    @property
    def lengths(self) -> np.ndarray:
        return np.sum([np.count_nonzero(mask, axis=1) for _, mask in self.parts], axis=0)

    def join(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.concatenate([m for m, _ in self.parts], axis=1),
                np.concatenate([k for _, k in self.parts], axis=1))


def _event_packets(timestamp_ns: np.ndarray, kind: np.ndarray, uuid: np.ndarray,
                   name_iid: np.ndarray) -> bytes:
    """The bytes of `Trace.packet` fields, one TrackEvent packet per row."""
    n = len(timestamp_ns)
    event = _Rows(n)
    event.const(_key(9, 0))
    event.varint(kind)
    event.const(_key(10, 0))
    event.varint(name_iid)
    event.const(_key(11, 0))
    event.varint(uuid)
    body = _Rows(n)
    body.const(_key(8, 0))
    body.varint(timestamp_ns)
    body.const(_int_field(10, SEQUENCE_ID) + _int_field(13, _NEEDS_STATE) + _key(11, 2))
    body.varint(event.lengths)
    body.nested(event)
    packet = _Rows(n)
    packet.const(_key(1, 2))
    packet.varint(body.lengths)
    packet.nested(body)
    matrix, mask = packet.join()
    return matrix[mask].tobytes()


def _slice_order(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boundaries of one thread's events in a valid begin/end order: (event, is_begin)."""
    n = len(start)
    rank = np.empty(n, np.int64)
    rank[np.lexsort((-end, start))] = np.arange(n)  # begin order: earlier, then longer
    begin_key = 2 * start
    end_key = np.where(end == start, 2 * start + 1, 2 * end)
    key = np.concatenate([begin_key, end_key])
    is_begin = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
    # ends first at one key; ends in reverse begin order, begins in begin order
    secondary = np.concatenate([rank, -rank])
    order = np.lexsort((secondary, is_begin, key))
    return np.concatenate([np.arange(n), np.arange(n)])[order], is_begin[order]


def write_perfetto(trace: TraceSet, out: IO[bytes]) -> int:
    """Writes the trace; returns the number of slices (events) written."""
    iid_of: dict[str, int] = {}
    host_iids = []
    for h in trace.hosts:
        host_iids.append(np.array([iid_of.setdefault(n, len(iid_of) + 1) for n in h.index.names],
                                  np.int64))
    names = b"".join(_len_field(2, _int_field(1, iid) + _len_field(2, name.encode("utf-8")))
                     for name, iid in iid_of.items())
    out.write(_packet(_int_field(10, SEQUENCE_ID) + _int_field(13, _CLEARED)
                      + _len_field(12, names)))
    track_uuid = 0
    for h in trace.hosts:
        for p in h.index.processes:
            pid = h.pid_offset + p.pid
            name = f"{h.host}: {p.name}" if trace.combined else p.name
            process_uuid = _TRACK_UUID_BASE + pid * _TRACK_UUID_BASE
            descriptor = (_int_field(1, process_uuid) + _len_field(
                3, _int_field(1, pid) + _len_field(6, name.encode("utf-8"))))
            out.write(_packet(_len_field(60, descriptor)))
            for t in p.threads:
                track_uuid = process_uuid + t.tid
                thread = _int_field(1, pid) + _int_field(2, t.tid) + _len_field(
                    5, t.name.encode("utf-8"))
                out.write(_packet(_len_field(60, _int_field(1, track_uuid) + _int_field(
                    5, process_uuid) + _len_field(4, thread))))
    written = 0
    for h, iids in zip(trace.hosts, host_iids, strict=True):
        index = h.index
        for p in index.processes:
            pid = h.pid_offset + p.pid
            for t in p.threads:
                lo, hi = int(index.track_bounds[t.track]), int(index.track_bounds[t.track + 1])
                event, is_begin = _slice_order(index.start_ps[lo:hi], index.end_ps[lo:hi])
                uuid = _TRACK_UUID_BASE + pid * _TRACK_UUID_BASE + t.tid
                for c in range(0, len(event), 2 * _CHUNK_EVENTS):
                    e = event[c : c + 2 * _CHUNK_EVENTS] + lo
                    b = is_begin[c : c + 2 * _CHUNK_EVENTS]
                    time_ps = np.where(b, index.start_ps[e], index.end_ps[e]) + h.shift_ps
                    out.write(_event_packets(
                        np.maximum(time_ps // 1000, 0), np.where(b, SLICE_BEGIN, SLICE_END),
                        np.full(len(e), uuid, np.int64), iids[index.name_id[e]]))
                written += hi - lo
    return written
