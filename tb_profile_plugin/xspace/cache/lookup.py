"""Disk cache entries by key: loading them, and the profile's own entry (`.tbpc`).

Two ways to load. `load`/`load_entry` read the whole regular file into memory (so a later
truncation of the file cannot fault the process, as a mapping would), check the MAC over the
real data, then wrap each array with `numpy.frombuffer` (read-only, no parsing of the columns)
and check that the columns fit together. `load_entry_lazily` does the same for an entry under
`LAZY_MIN_BYTES` (64 MiB); a bigger one is opened by its header alone: the MAC is checked with
the arrays' sums the header states, so those sums can be trusted, and each array is read (into
memory of this process, never a mapping) and checked against its own sums when it is first
asked for (`EntryArrays.get`, cache/entry.py); one that does not match (damaged, or the file
truncated since) raises `DamagedEntry` and removes the entry, and the caller takes that part
from a fresh decode or build instead (cache/lazy.py for the profile's lines,
trace/index_cache.py for the trace index's columns). A 20M-event trace then reopens in
0.03-0.15 s instead of reading 1.1 GB first (docs/trace_viewer.md). Loading opens without
blocking (a FIFO or device at the path is a miss, never a hang). Any failure is a miss: the
file is removed and the profile decoded and cached again.

Other results kept beside the columns use the same format through `save_entry`/`load_entry`
(their own suffix and MAC key): the trace index, `<key>-index<version>.tbpi`
(trace/index_cache.py). The profile's entry is written off the request's path by `save_later`
(cache/writer.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tb_profile_plugin.xspace import model
from tb_profile_plugin.xspace.cache.directory import _checked_dir, _Refused, _warn_once, cache_dir
from tb_profile_plugin.xspace.cache.entry import EntryArrays, _parse, _parse_lazily
from tb_profile_plugin.xspace.cache.files import _read_all, _remove, open_regular
from tb_profile_plugin.xspace.cache.tree import _profile_entry, _profile_of
from tb_profile_plugin.xspace.cache.writer import (
    _wait_for_write,
    save_entry,
    save_entry_later,
    write_queued,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")


def save(profile: model.Profile, key: str, directory: Path | None = None) -> Path | None:
    """Write `profile` under `key`; returns the file, or None when it could not be written."""
    return save_entry(key, ".tbpc", *_profile_entry(profile), directory)


def save_later(profile: model.Profile, key: str, directory: Path | None = None) -> None:
    """`save`, written off the caller's path (`save_entry_later`)."""
    save_entry_later(key, ".tbpc", *_profile_entry(profile), directory)


def load(key: str, directory: Path | None = None) -> model.Profile | None:
    """The cached profile for `key`, or None on a miss: absent, old format, written by someone
    else, damaged, not a regular file. A file that is there but not a valid entry is removed."""
    return load_entry(key, ".tbpc", _profile_of, directory)


def load_entry(key: str, suffix: str, parse: Callable[[dict[str, Any], list[np.ndarray]], T],
               directory: Path | None = None) -> T | None:
    """`parse(header, arrays)` of the entry `<key><suffix>` (arrays read-only, wrapping the
    file's bytes), or None on a miss; an entry that is there but damaged (its MAC, its layout,
    or `parse` raising) is removed."""
    return load_entry_lazily(key, suffix, lambda header, arrays: parse(header, arrays.all()),
                             directory, lazy=False)


def entry_exists(key: str, suffix: str, directory: Path | None = None) -> bool:
    """Whether the entry `<key><suffix>` is there or queued for writing; reading it may still
    find it damaged (a miss then)."""
    directory = directory or cache_dir()
    if directory is None:
        return False
    path = directory / f"{key}{suffix}"
    return write_queued(path) or path.is_file()


#: Entries of at least this many bytes are read array by array, when an array is first used
#: (`EntryArrays`), by `load_entry_lazily`; smaller ones are read and checked whole.
LAZY_MIN_BYTES = 64 << 20


def load_entry_lazily(key: str, suffix: str, parse: Callable[[dict[str, Any], EntryArrays], T],
                      directory: Path | None = None, lazy: bool = True) -> T | None:
    """`parse(header, arrays)` of the entry `<key><suffix>`, or None on a miss.

    With `lazy`, an entry of at least `LAZY_MIN_BYTES` is not read whole: its header is read
    and checked (the MAC covers the header and, through each array's word sums in it, the
    arrays), and each array is read and checked against its sums only when `arrays.get` asks
    for it (a mismatch then raises `DamagedEntry` and removes the entry). A smaller entry is
    read and checked whole first, as `load_entry` does. An entry that is there but damaged
    (its MAC, its layout, or `parse` raising) is removed."""
    directory = directory or cache_dir()
    if directory is None:
        return None
    try:
        secret = _checked_dir(directory)
    except _Refused as exc:
        _warn_once(directory, str(exc))
        return None
    path = directory / f"{key}{suffix}"
    _wait_for_write(path)
    fd = open_regular(path)
    if fd is None:
        if os.path.lexists(path):
            logger.warning("ignoring profile cache entry %s: not a regular file of this user",
                           path)
            _remove(path)
        return None
    arrays: EntryArrays | None = None
    try:
        size = os.fstat(fd).st_size
        if not lazy or size < LAZY_MIN_BYTES:
            data = _read_all(fd, size)
            if data is None:
                raise ValueError("the file changed while it was read")
            header, loaded = _parse(data, secret, key)
            arrays = EntryArrays.whole(loaded)
        else:
            header, arrays = _parse_lazily(fd, size, path, secret, key)
        return parse(header, arrays)
    except Exception as exc:  # noqa: BLE001 - whatever a damaged file does, it is a miss
        logger.warning("ignoring damaged profile cache entry %s: %s: %s", path,
                       type(exc).__name__, exc)
        _remove(path)
        return None
    finally:
        if arrays is None or not arrays.lazy:
            os.close(fd)
