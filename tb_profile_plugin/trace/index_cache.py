"""The trace index kept in the disk cache beside its profile's columns, so a reopen costs no
rebuild.

An index is a function of its profile (the file's bytes) and of the code that builds it, so its
entry is `<file key>-index<INDEX_FORMAT_VERSION>.tbpi` in the profile cache's directory and
format (xspace/cache.py: one file, HMAC-SHA256 over everything, arrays read back with
`numpy.frombuffer`), its MAC keyed by that name: an entry of another file or of another version
of the index is a miss (a damaged one is removed), built and written again. Bump
`INDEX_FORMAT_VERSION` whenever what `trace/index.py` builds changes (tracks, their order,
derived tracks, columns).

The profile must come from the store (`ProfileStore` sets `profile.derived.disk_key`); a profile
made otherwise (tests, the CLI's own decodes) has no key and its index is only built.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tb_profile_plugin.trace.index import Process, Thread, TraceIndex
from tb_profile_plugin.trace.lod import FANOUT
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.model import Profile

INDEX_FORMAT_VERSION = 3
_SUFFIX = ".tbpi"
#: The index's arrays, in the entry's order, with the dtype each must have (`source_row`: int32
#: below 2^31 events, else int64).
_ARRAYS = {
    "track_bounds": np.int64, "start_ps": np.int64, "end_ps": np.int64, "name_id": np.int32,
    "source_row": np.int32, "segment_bounds": np.int64, "segment_track": np.int32,
    "segment_depth": np.int32, "segment_disjoint": np.bool_, "block_max_ps": np.int64,
    "track_source_line": np.int32, "derived_source_line": np.int32,
}
_EVENT_ARRAYS = ("start_ps", "end_ps", "name_id", "source_row")


def _entry_key(file_key: str) -> str:
    """The entry's name and MAC key: the file's key and the index format version."""
    return f"{file_key}-index{INDEX_FORMAT_VERSION}"


def save(index: TraceIndex, *, later: bool = False) -> None:
    """Writes `index` beside its profile's cache entry (nothing when the profile has none);
    with `later`, on the cache's writer thread (`cache.save_entry_later`), after the request
    that built it is answered."""
    where = index.profile.derived.disk_key
    if where is None:
        return
    file_key, directory = where
    planes = index.profile.planes
    line_number = {id(line): k for plane in planes for k, line in enumerate(plane.lines)}
    header = {
        "version": INDEX_FORMAT_VERSION,
        "processes": [[p.pid, p.name, p.sort_index, p.plane_index,
                       [[t.tid, t.name, t.sort_index, t.max_depth, t.num_events, t.track,
                         t.derived] for t in p.threads]] for p in index.processes],
        "names": index.names,
        "lines": [[p_index, line_number[id(line)]] for p_index, line in index.lines],
        "absolute_origin_ns": index.absolute_origin_ns,
        "num_derived_events": index.num_derived_events,
    }
    arrays = [getattr(index, name) for name in _ARRAYS]
    if later:
        cache.save_entry_later(_entry_key(file_key), _SUFFIX, header, arrays, directory)
    else:
        cache.save_entry(_entry_key(file_key), _SUFFIX, header, arrays, directory)


def load(profile: Profile) -> TraceIndex | None:
    """The index of `profile` from the disk cache, or None on a miss."""
    where = profile.derived.disk_key
    if where is None:
        return None
    file_key, directory = where
    return cache.load_entry(_entry_key(file_key), _SUFFIX,
                            lambda header, arrays: _index_of(profile, header, arrays), directory)


def _index_of(profile: Profile, header: dict[str, Any], arrays: list[np.ndarray]) -> TraceIndex:
    """The index the entry holds; raises ValueError unless it fits `profile` and itself."""
    if header.get("version") != INDEX_FORMAT_VERSION or len(arrays) != len(_ARRAYS):
        raise ValueError(f"index format version {header.get('version')!r}")
    columns = dict(zip(_ARRAYS, arrays, strict=True))
    n = len(columns["start_ps"])
    for name, dtype in _ARRAYS.items():
        if name == "source_row" and n >= 2**31:
            dtype = np.int64
        if columns[name].dtype != dtype or columns[name].ndim != 1:
            raise ValueError(f"index column {name} is not {np.dtype(dtype)}")
    lines = [(int(p), profile.planes[p].lines[k]) for p, k in header["lines"]]
    processes = [Process(pid, name, sort_index, plane_index,
                         [Thread(*t) for t in threads])
                 for pid, name, sort_index, plane_index, threads in header["processes"]]
    tracks = [t for p in processes for t in p.threads]
    names = header["names"]
    track_bounds, segment_bounds = columns["track_bounds"], columns["segment_bounds"]
    if (any(len(columns[c]) != n for c in _EVENT_ARRAYS)
            or len(track_bounds) != len(tracks) + 1 or track_bounds[0] != 0
            or track_bounds[-1] != n or np.any(np.diff(track_bounds) < 0)
            or len(segment_bounds) != len(columns["segment_track"]) + 1
            or (len(segment_bounds) and (segment_bounds[0] != 0 or segment_bounds[-1] != n))
            or np.any(np.diff(segment_bounds) < 0)
            or len(columns["segment_disjoint"]) != len(columns["segment_track"])
            or len(columns["segment_depth"]) != len(columns["segment_track"])
            or len(columns["track_source_line"]) != len(tracks)
            or len(columns["derived_source_line"]) != int(header["num_derived_events"])
            or [t.derived for t in tracks] != (columns["track_source_line"] < 0).tolist()
            or int(np.diff(track_bounds)[columns["track_source_line"] < 0].sum())
            != len(columns["derived_source_line"])
            or len(columns["block_max_ps"]) != -(-n // FANOUT)
            or (len(columns["segment_disjoint"])
                and int(columns["segment_disjoint"].view(np.uint8).max()) > 1)
            or [t.track for t in tracks] != list(range(len(tracks)))
            or not all(isinstance(s, str) for s in names)):
        raise ValueError("index columns do not fit together")
    if n and (int(columns["name_id"].min()) < 0 or int(columns["name_id"].max()) >= len(names)):
        raise ValueError("index names out of range")
    line_refs = np.concatenate([columns["track_source_line"], columns["derived_source_line"]])
    if (len(line_refs) and (int(line_refs.max()) >= len(lines)
                            or int(columns["derived_source_line"].min(initial=0)) < 0)
            or int(columns["segment_depth"].min(initial=0)) < 0):
        raise ValueError("index lines or depths out of range")
    return TraceIndex(
        profile=profile, processes=processes, tracks=tracks, names=names, lines=lines,
        absolute_origin_ns=int(header["absolute_origin_ns"]),
        num_derived_events=int(header["num_derived_events"]),
        track_bounds=track_bounds, start_ps=columns["start_ps"], end_ps=columns["end_ps"],
        name_id=columns["name_id"], source_row=columns["source_row"],
        segment_bounds=segment_bounds, segment_track=columns["segment_track"],
        segment_depth=columns["segment_depth"], segment_disjoint=columns["segment_disjoint"],
        block_max_ps=columns["block_max_ps"], track_source_line=columns["track_source_line"],
        derived_source_line=columns["derived_source_line"],
    )
