"""Writing disk cache entries: now (`save_entry`), or on the cache's writer thread.

An entry is written to a temporary `.tmp-*` file and renamed into place, so that readers never
see a partial entry (`_write_entry`, in the format of cache/entry.py: each array's word sums
are taken as it is written, and the header, whose length does not depend on them, written
again after). The store and the trace index write their entries off the request's path
(`save_entry_later`: one writer thread, at a lower priority; `flush` waits for it, `quiet`
holds it between arrays while a request's build runs); until an entry is written, a load of it
in this process waits for it (`_wait_for_write`) rather than missing.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tb_profile_plugin.xspace.cache.directory import _TMP_PREFIX, _writable
from tb_profile_plugin.xspace.cache.entry import (
    _ALIGN,
    _MAC_BYTES,
    _MAGIC,
    _PREFIX_BYTES,
    _digest,
    _mac,
    _word_sums,
)

logger = logging.getLogger(__name__)


def save_entry(key: str, suffix: str, header: dict[str, Any], arrays: list[np.ndarray],
               directory: Path | None = None) -> Path | None:
    """Writes one entry (`header`, JSON, and `arrays`) as `<key><suffix>` in the file format of
    cache/entry.py, MAC keyed by `key`; returns the file, or None when it could not be
    written (caching off, an unsafe directory, a full disk)."""
    where = _writable(directory)
    return None if where is None else _write_entry(key, suffix, header, arrays, *where)


def save_entry_later(key: str, suffix: str, header: dict[str, Any], arrays: list[np.ndarray],
                     directory: Path | None = None) -> None:
    """`save_entry` on the cache's writer thread, so that the request that decoded or built
    what the entry holds is answered without waiting for the write (a 20M-event profile and
    its trace index are 1.1 GB: 2-4 s here). The directory and its secret are checked now, on
    the caller's thread (its warnings, its environment); the arrays are columns nobody writes
    to once made. Until the entry is written, `load_entry` of it in this process waits for it
    rather than missing, and `flush` waits for every write queued so far; the writer thread
    is joined at interpreter exit, so a process that ends leaves its entries written."""
    where = _writable(directory)
    if where is None:
        return
    path = where[0] / f"{key}{suffix}"

    def write() -> None:
        try:
            _write_entry(key, suffix, header, arrays, *where, True)
        except Exception:  # noqa: BLE001 - a cache that cannot be written is only a miss
            logger.exception("profile cache entry %s not written", path)

    with _writes_lock:
        global _writer
        if _writer is None:
            _writer = concurrent.futures.ThreadPoolExecutor(1, "tb-profile-cache-writer",
                                                            initializer=lower_priority)
        future = _writer.submit(write)
        _pending[str(path)] = future
    future.add_done_callback(lambda done: _forget(str(path), done))


def lower_priority() -> None:
    """The calling thread (the writer, the trace's prefetch) yields to the request threads
    (Linux gives each thread its own nice value): the zooms that follow a first window are not
    slowed by its 1 GB write."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _WRITER_NICE)


_WRITER_NICE = 10


def _forget(path: str, future: concurrent.futures.Future[None]) -> None:
    with _writes_lock:
        if _pending.get(path) is future:
            del _pending[path]


#: The longest the writer thread waits for `quiet` to end before each part it writes.
_QUIET_MAX_S = 10.0
#: The writer thread writes an array in parts of this many bytes (a multiple of 8: the word
#: sums of the parts add up to the array's), waiting for `quiet` to end before each: a trace
#: window asked while a 0.6 GB index is written waits for one part's copy and sums (~5 ms),
#: not a whole 80 MB column's.
_PART_BYTES = 8 << 20
_quiet_lock = threading.Lock()
_quiet_holders = 0
_may_write = threading.Event()
_may_write.set()


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Holds the writer thread between the parts it writes (`_PART_BYTES`) while the caller
    builds what a request waits for (the trace index of a profile just decoded, whose 0.65 GB
    entry is queued by then; the trace windows asked while it is written): the write's page
    cache and word sums compete with the build for memory and the second core (20M longer: the
    index and first window 1.2-1.9 s with the write going on, 0.6-1.1 s without). At most
    `_QUIET_MAX_S` per part, so a write is never held for long."""
    global _quiet_holders
    with _quiet_lock:
        _quiet_holders += 1
        _may_write.clear()
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_holders -= 1
            if not _quiet_holders:
                _may_write.set()


def flush(timeout_s: float | None = None) -> None:
    """Waits for every entry queued by `save_entry_later` so far to be written (or to fail)."""
    with _writes_lock:
        pending = list(_pending.values())
    concurrent.futures.wait(pending, timeout_s)


def write_queued(path: Path) -> bool:
    """Whether an entry at `path` is queued or being written (`save_entry_later`)."""
    with _writes_lock:
        return str(path) in _pending


def _wait_for_write(path: Path) -> None:
    """Waits for a queued write of the entry at `path`, if any."""
    with _writes_lock:
        future = _pending.get(str(path))
    if future is not None:
        concurrent.futures.wait([future])


_writes_lock = threading.Lock()
_writer: concurrent.futures.ThreadPoolExecutor | None = None
_pending: dict[str, concurrent.futures.Future[None]] = {}  # entry path -> its queued write


def _write_array(out: Any, data: memoryview, pausable: bool) -> tuple[int, int]:
    """Writes `data` to `out` and returns its word sums (`_word_sums`); `pausable`: in parts,
    each after any `quiet` ends (at most `_QUIET_MAX_S` later)."""
    if not pausable:
        out.write(data)
        return _word_sums(data)
    total = xor = 0
    for at in range(0, max(len(data), 1), _PART_BYTES):
        _may_write.wait(_QUIET_MAX_S)
        part = data[at : at + _PART_BYTES]
        part_total, part_xor = _word_sums(part)  # (only the last part has a partial word)
        total, xor = (total + part_total) % 2**64, xor ^ part_xor
        out.write(part)
    return total, xor


def _write_entry(key: str, suffix: str, header: dict[str, Any], arrays: list[np.ndarray],
                 directory: Path, secret: bytes, pausable: bool = False) -> Path | None:
    """Writes the entry to a temporary file and renames it into place (readers never see a
    partial entry); None when it could not be written. `pausable` (the writer thread): waits
    before each part of an array while a `quiet` is held (`_write_array`). Each array's word
    sums are kept in the header (`checks`), so that a reader can check one array without the others
    (`EntryArrays`): they are taken as each array is written (one pass over the data), and the
    header, whose length does not depend on them (16 hex digits each), written again after."""
    table: list[tuple[str, list[int], int]] = []
    offset = 0
    for array in arrays:
        table.append((array.dtype.str, list(array.shape), offset))
        offset += -(-array.nbytes // _ALIGN) * _ALIGN
    sums = np.zeros((len(arrays), 2), np.uint64)

    def head_of(sums: np.ndarray) -> bytes:
        header_bytes = json.dumps(dict(header, arrays=table,
                                       checks=sums.astype("<u8").tobytes().hex())).encode()
        data_start = -(-(_PREFIX_BYTES + len(header_bytes)) // _ALIGN) * _ALIGN
        return (len(header_bytes).to_bytes(8, "little") + header_bytes
                + b"\0" * (data_start - _PREFIX_BYTES - len(header_bytes)))

    tmp_name = ""
    try:
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=_TMP_PREFIX, suffix=suffix)
        with os.fdopen(fd, "wb") as out:
            out.write(_MAGIC + b"\0" * _MAC_BYTES)
            placeholder = head_of(sums)
            out.write(placeholder)
            for k, array in enumerate(arrays):
                data = np.ascontiguousarray(array).data.cast("B")
                sums[k] = _write_array(out, data, pausable)
                out.write(b"\0" * (-len(data) % _ALIGN))
            head = head_of(sums)
            if len(head) != len(placeholder):
                raise OSError("the entry's header changed length")
            mac = _mac(secret, key)
            mac.update(head)
            mac.update(_digest(offset, sums))
            out.seek(len(_MAGIC))
            out.write(mac.digest() + head)
        final = directory / f"{key}{suffix}"
        os.replace(tmp_name, final)
        return final
    except OSError as exc:
        logger.warning("profile cache not written in %s: %s", directory, exc)
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        return None
