"""Planes and lines of a decoded Kineto trace: `/host:CPU` with one line per (pid, tid), one
`/device:GPU:<n>` per GPU with one line per stream (and a DERIVED line per stream for its
`gpu_user_annotation`s), each line's events sorted by start (longer first on ties), stats in
each event's order."""

from __future__ import annotations

import numpy as np
import orjson

from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace.decode import MAX_LINES_ENV, max_lines
from tb_profile_plugin.xspace.dense_stats import densify, gather_strings
from tb_profile_plugin.xspace.kineto import fields as fl
from tb_profile_plugin.xspace.kineto.derive import DecodedEvents
from tb_profile_plugin.xspace.model import (
    EventColumns,
    EventMetadataTable,
    Line,
    Plane,
    StatColumns,
    StatMetadataTable,
    StringTable,
)
from tb_profile_plugin.xspace.producers import pytorch as pt
from tb_profile_plugin.xspace.schema import GPU_PLANE_PREFIX, HOST_PLANE_NAME, StatKind

#: Line ids of the annotation lines: past any stream id, outside the derived-line range.
_ANNOTATION_LINE_ID = 1 << 40


def build(d: DecodedEvents, doc: dict, dur_ps: np.ndarray, origin_ns: int) -> list[Plane]:
    f = d.f
    n = len(f)
    host_stats = _host_stats(doc)
    device_stats = _device_stats(doc)
    # Lines: host lines first (first-seen order), then per GPU its streams and annotations.
    num_host = len(d.thread_keys)
    dev_rows = np.flatnonzero(d.device)
    dev_keys = np.stack([d.gpu[dev_rows], d.annotation[dev_rows].astype(np.int64),
                         d.stream[dev_rows]], 1) if len(dev_rows) else np.zeros((0, 3), np.int64)
    lines_of_devices, dev_line = np.unique(dev_keys, axis=0, return_inverse=True)
    if num_host + len(lines_of_devices) > max_lines():
        raise UnreadableProfile(
            f"the trace has {num_host + len(lines_of_devices):,} threads and streams; at most "
            f"{max_lines():,} are read ({MAX_LINES_ENV} raises the limit): it is not a trace "
            "a profiler writes")
    line = d.host_line.copy()
    line[dev_rows] = num_host + dev_line.ravel()
    order = np.lexsort((-dur_ps, d.start_ps, line))
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    bounds = np.searchsorted(line[order], np.arange(num_host + len(lines_of_devices) + 1))
    # The events' columns in line order; what only placed them is dropped before the rows
    # are sorted (the caller is the last user of `d`).
    names = f.names.texts
    name_sorted = f.name[order]
    start_sorted, dur_sorted = d.start_ps[order], dur_ps[order]
    del line, dev_keys, dev_line, dev_rows, order
    d.drop_placement()
    # Stat names: every arg key and derived stat, then the planes' own.
    for name in [*host_stats, *[k for stats in device_stats.values() for k in stats]]:
        d.stat_names.code(name)
    stat_table = StatMetadataTable(
        ids=np.arange(1, len(d.stat_names.codes) + 1, dtype=np.int64),
        names=StringTable.from_strings(d.stat_names.texts),
        descriptions=StringTable.from_strings([""] * len(d.stat_names.codes)))
    stat_pos, stat_id, kind_all, value_all, length_all = _rows_in_line_order(d.rows, position)
    stat_bounds = np.searchsorted(stat_pos, bounds)
    blob = d.rows.blob()

    def make_line(k: int, line_id: int, display_id: int, label: str) -> Line:
        # (a line's stats are views of the rows in line order, rewritten in place)
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        s_lo, s_hi = int(stat_bounds[k]), int(stat_bounds[k + 1])
        row = stat_pos[s_lo:s_hi]
        row -= lo
        kind, length = kind_all[s_lo:s_hi], length_all[s_lo:s_hi]
        value, strings = gather_strings(blob, kind, value_all[s_lo:s_hi], length)
        stats = densify(StatColumns(row, stat_id[s_lo:s_hi], kind, value, length, strings),
                        hi - lo)
        events = EventColumns((name_sorted[lo:hi] + 1).astype(np.int32),
                              start_sorted[lo:hi].copy(), dur_sorted[lo:hi].copy(), None)
        return Line(id=line_id, display_id=display_id, name=label, display_name="",
                    timestamp_ns=origin_ns, duration_ps=0, events=events, stats=stats)

    def metadata(line_range: range) -> EventMetadataTable:
        parts = [name_sorted[int(bounds[k]):int(bounds[k + 1])] for k in line_range]
        used = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
        return EventMetadataTable(
            ids=used + 1, names=StringTable.from_strings([names[c] for c in used.tolist()]),
            display_names=StringTable.from_strings([""] * len(used)),
            metadata=StringTable.from_strings([b""] * len(used)), stats=StatColumns.empty(),
            child_offsets=np.zeros(len(used) + 1, np.int64), child_ids=np.zeros(0, np.int64))

    host_lines = []
    for k, (pid, tid) in enumerate(d.thread_keys):
        number = fl.number_of(tid)
        label = f.thread_names.get((pid, tid)) or f"thread {tid}"
        host_lines.append(make_line(k, k, number if number is not None else k, label))
    out = [Plane(id=0, name=HOST_PLANE_NAME, lines=host_lines,
                 event_metadata=metadata(range(num_host)), stat_metadata=stat_table,
                 stats=_plane_stats(host_stats, d.stat_names))]
    gpus = sorted(set(lines_of_devices[:, 0].tolist()) | set(device_stats))
    for gpu in gpus:
        ks = [num_host + j for j in np.flatnonzero(lines_of_devices[:, 0] == gpu).tolist()]
        gpu_lines = []
        for k in ks:
            _, annotation, stream = lines_of_devices[k - num_host].tolist()
            if annotation:
                gpu_lines.append(make_line(k, _ANNOTATION_LINE_ID + stream, stream,
                                           pt.gpu_annotation_line_name(stream)))
            else:
                gpu_lines.append(make_line(k, stream, stream, f"{pt.STREAM_LINE_PREFIX}{stream}"))
        out.append(Plane(id=gpu + 1, name=f"{GPU_PLANE_PREFIX}{gpu}", lines=gpu_lines,
                         event_metadata=metadata(range(ks[0], ks[-1] + 1) if ks else range(0)),
                         stat_metadata=stat_table,
                         stats=_plane_stats(device_stats.get(gpu, {}), d.stat_names)))
    return out


def _rows_in_line_order(rows: fl.StatRows, position: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The stat rows sorted by their event's position (stable: each event's stats in their
    order) as the lines' columns: the position (int32), the stat id (int32), kind, value,
    length. `rows`' columns are moved a column at a time (the rows are held about once; the
    caller is their last user)."""
    key = position.astype(np.int32)[rows.event]
    rows.event = np.zeros(0, np.int32)
    stat_order = np.argsort(key, kind="stable").astype(np.int32)  # (rows < 2^31: read.py)
    stat_pos = key[stat_order]
    del key
    stat_id = rows.stat[stat_order]
    rows.stat = np.zeros(0, np.int32)
    stat_id += 1
    stat_id = stat_id.astype(np.int32, copy=False)
    kind = rows.kind[stat_order]
    rows.kind = np.zeros(0, np.uint8)
    value = rows.value[stat_order]
    rows.value = np.zeros(0, np.int64)
    length = rows.length[stat_order].astype(np.int32, copy=False)
    rows.length = np.zeros(0, np.int32)
    return stat_pos, stat_id, kind, value, length


def _host_stats(doc: dict) -> dict[str, object]:
    """The host plane's stats: the source, every scalar top-level key, distributedInfo."""
    stats: dict[str, object] = {pt.PROFILE_SOURCE_STAT: pt.KINETO_SOURCE}
    for key, value in doc.items():
        if key in (pt.DEVICE_PROPERTIES_KEY, pt.DISTRIBUTED_INFO_KEY):
            continue
        if isinstance(value, str | int | float | bool):
            stats[pt.PYTORCH_VERSION_STAT if key in pt.VERSION_KEYS else str(key)] = value
    info = doc.get(pt.DISTRIBUTED_INFO_KEY)
    if isinstance(info, dict):
        for key, value in info.items():
            if value is not None:
                stats[f"{pt.DISTRIBUTED_STAT_PREFIX}{key}"] = value
    return stats


def _device_stats(doc: dict) -> dict[int, dict[str, object]]:
    """deviceProperties by device id, under CUPTI's plane stat names where XPlane has one."""
    out: dict[int, dict[str, object]] = {}
    devices = doc.get(pt.DEVICE_PROPERTIES_KEY)
    for entry in devices if isinstance(devices, list) else []:
        if not isinstance(entry, dict):
            continue
        number = entry.get(pt.DEVICE_ID_KEY)
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number < 4096:
            continue
        stats: dict[str, object] = {}
        for key, value in entry.items():
            if key != pt.DEVICE_ID_KEY and value is not None:
                stats[pt.DEVICE_PROPERTY_STATS.get(key) or str(key)] = value
        name = entry.get(pt.DEVICE_NAME_KEY)
        vendor = pt.device_vendor(name) if isinstance(name, str) else ""
        if vendor:
            stats[pt.DEVICE_VENDOR_STAT] = vendor
        out[number] = stats
    return out


def _plane_stats(values: dict[str, object], stat_names: fl.Interner) -> StatColumns:
    """A plane's stats (row 0) from Python values: ints, floats, strings, else JSON text."""
    if not values:
        return StatColumns.empty()
    kinds, raws, lengths, parts = [], [], [], []
    at = 0
    for value in values.values():
        if isinstance(value, bool) or (isinstance(value, int) and -(2**63) <= value < 2**63):
            kinds.append(StatKind.INT64)
            raws.append(int(value))
            lengths.append(0)
            continue
        if isinstance(value, float):
            kinds.append(StatKind.DOUBLE)
            raws.append(int(np.array([value]).view(np.int64)[0]))
            lengths.append(0)
            continue
        text = value.encode("utf-8", "replace") if isinstance(value, str) else orjson.dumps(
            value if not isinstance(value, int) else str(value))
        kinds.append(StatKind.STR)
        raws.append(at)
        lengths.append(len(text))
        parts.append(text)
        at += len(text)
    count = len(values)
    return StatColumns(
        np.zeros(count, np.int32),
        np.array([stat_names.codes[k] + 1 for k in values], np.int32),
        np.array(kinds, np.uint8), np.array(raws, np.int64), np.array(lengths, np.int32),
        np.frombuffer(b"".join(parts), np.uint8).copy())
