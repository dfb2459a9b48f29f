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

Packets are encoded in chunks with trace/wire.py: each field's varints are computed for a
whole column at once and the bytes of a chunk are gathered from a per-packet byte matrix.
"""

from __future__ import annotations

from typing import IO

import numpy as np

from tb_profile_plugin.trace.index import Thread
from tb_profile_plugin.trace.window import TraceSet
from tb_profile_plugin.trace.wire import VARINT, Rows, int_field, key, len_field

SEQUENCE_ID = 1
SLICE_BEGIN = 1
SLICE_END = 2
_CLEARED = 1
_NEEDS_STATE = 2
_CHUNK_EVENTS = 200_000
_TRACK_UUID_BASE = 1 << 20


def _shown_tid(thread: Thread) -> int:
    """The thread's tid in the file: its place in the order shown. The file carries no sort
    order of threads, and the index's tids put the derived device tracks after the streams
    (the trace viewer shows them above, by `sort_index`)."""
    return thread.sort_index + 1

def _packet(body: bytes) -> bytes:
    return len_field(1, body)


def _event_packets(timestamp_ns: np.ndarray, kind: np.ndarray, uuid: np.ndarray,
                   name_iid: np.ndarray) -> bytes:
    """The bytes of `Trace.packet` fields, one TrackEvent packet per row."""
    n = len(timestamp_ns)
    event = Rows(n)
    event.const(key(9, VARINT))
    event.varint(kind)
    event.const(key(10, VARINT))
    event.varint(name_iid)
    event.const(key(11, VARINT))
    event.varint(uuid)
    body = Rows(n)
    body.const(key(8, VARINT))
    body.varint(timestamp_ns)
    body.const(int_field(10, SEQUENCE_ID) + int_field(13, _NEEDS_STATE))
    body.nested(11, event)
    packet = Rows(n)
    packet.nested(1, body)
    return packet.tobytes()


def _slice_order(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boundaries of one thread's events in a valid begin/end order: (event, is_begin)."""
    n = len(start)
    rank = np.empty(n, np.int64)
    rank[np.lexsort((-end, start))] = np.arange(n)  # begin order: earlier, then longer
    begin_key = 2 * start
    end_key = np.where(end == start, 2 * start + 1, 2 * end)
    boundary = np.concatenate([begin_key, end_key])
    is_begin = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
    # ends first at one key; ends in reverse begin order, begins in begin order
    secondary = np.concatenate([rank, -rank])
    order = np.lexsort((secondary, is_begin, boundary))
    return np.concatenate([np.arange(n), np.arange(n)])[order], is_begin[order]


def write_perfetto(trace: TraceSet, out: IO[bytes]) -> int:
    """Writes the trace; returns the number of slices (events) written."""
    iid_of: dict[str, int] = {}
    host_iids = []
    for h in trace.hosts:
        host_iids.append(np.array([iid_of.setdefault(n, len(iid_of) + 1) for n in h.index.names],
                                  np.int64))
    names = b"".join(len_field(2, int_field(1, iid) + len_field(2, name.encode("utf-8")))
                     for name, iid in iid_of.items())
    out.write(_packet(int_field(10, SEQUENCE_ID) + int_field(13, _CLEARED)
                      + len_field(12, names)))
    track_uuid = 0
    for h in trace.hosts:
        for p in h.index.processes:
            pid = h.pid_offset + p.pid
            name = f"{h.host}: {p.name}" if trace.combined else p.name
            process_uuid = _TRACK_UUID_BASE + pid * _TRACK_UUID_BASE
            descriptor = (int_field(1, process_uuid) + len_field(
                3, int_field(1, pid) + len_field(6, name.encode("utf-8"))))
            out.write(_packet(len_field(60, descriptor)))
            for t in p.threads:
                track_uuid = process_uuid + _shown_tid(t)
                thread = int_field(1, pid) + int_field(2, _shown_tid(t)) + len_field(
                    5, t.name.encode("utf-8"))
                out.write(_packet(len_field(60, int_field(1, track_uuid) + int_field(
                    5, process_uuid) + len_field(4, thread))))
    written = 0
    for h, iids in zip(trace.hosts, host_iids, strict=True):
        index = h.index
        for p in index.processes:
            pid = h.pid_offset + p.pid
            for t in p.threads:
                lo, hi = int(index.track_bounds[t.track]), int(index.track_bounds[t.track + 1])
                event, is_begin = _slice_order(index.start_ps[lo:hi], index.end_ps[lo:hi])
                uuid = _TRACK_UUID_BASE + pid * _TRACK_UUID_BASE + _shown_tid(t)
                for c in range(0, len(event), 2 * _CHUNK_EVENTS):
                    e = event[c : c + 2 * _CHUNK_EVENTS] + lo
                    b = is_begin[c : c + 2 * _CHUNK_EVENTS]
                    time_ps = np.where(b, index.start_ps[e], index.end_ps[e]) + h.shift_ps
                    out.write(_event_packets(
                        np.maximum(time_ps // 1000, 0), np.where(b, SLICE_BEGIN, SLICE_END),
                        np.full(len(e), uuid, np.int64), iids[index.name_id[e]]))
                written += hi - lo
    return written
