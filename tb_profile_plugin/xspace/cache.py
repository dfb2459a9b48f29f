"""On-disk cache of decoded profiles, so a second open of the same file costs milliseconds.

Where: `$TB_PROFILE_CACHE_DIR` if set, else `$XDG_CACHE_HOME/tb_profile_plugin`, else
`~/.cache/tb_profile_plugin`; never the user's logdir. Set `TB_PROFILE_CACHE_DIR=off` to disable.
The directory must belong to the user running the plugin and must not be world-writable;
otherwise caching is switched off with a warning (it is created with mode 0700).

Key: the source's path, size and modification time, and `schema.FORMAT_VERSION`; any change to
one of them is a miss, and the stale entry is simply overwritten later.

File format (one file per profile, written to a temporary `.tmp-*` name and renamed into place;
temporary files left by a killed writer are removed after an hour):

    b"TBPCOLS4" | MAC (32 bytes) | header length (uint64 LE) | header (JSON) | arrays, each
    64-byte aligned

The header holds the profile's structure as a small JSON tree in which every numpy array is a
reference `{"@a": index}` into the array list `[dtype, shape, offset]`, and `checks`: per array
the sum (mod 2^64) and XOR of its little-endian 64-bit words (the last one padded with zeros),
as hex. The MAC is HMAC-SHA256, keyed by the cache directory's own secret (`.secret`, 32 random
bytes, mode 0600, made on first use), over the entry's key, the header (with its length and
padding), and the data region's length, sum and XOR (the sums and XORs of the arrays: the
zeros between them add nothing): a file that someone else wrote, damaged, truncated or renamed
from another key is a miss. The words' sum and XOR stand in for hashing the arrays themselves
(numpy reductions at ~5 GB/s against SHA-256's ~1 GB/s: a 20M-event profile and its trace
index are 1.1 GB): any flipped bit, zeroed stretch or truncation changes them; what they do not
catch is a deliberate edit that keeps both (two words swapped), which needs write access to
this user's 0700 directory, where `.secret` can be read anyway, so the full hash never
protected against it; the structure checks on load (`_check`, trace/index_cache.py) stay as
they were. Loading opens without blocking (a FIFO or device at the path is a miss, never a
hang). Nothing is unpickled. Any failure is a miss: the file is removed and the profile
decoded and cached again.

Two ways to load. `load`/`load_entry` read the whole regular file into memory (so a later
truncation of the file cannot fault the process, as a mapping would), check the MAC over the
real data, then wrap each array with `numpy.frombuffer` (read-only, no parsing of the columns)
and check that the columns fit together. `load_entry_lazily` does the same for an entry under
`LAZY_MIN_BYTES` (64 MiB); a bigger one is opened by its header alone: the MAC is checked with
the arrays' sums the header states, so those sums can be trusted, and each array is read (into
memory of this process, never a mapping) and checked against its own sums when it is first
asked for (`EntryArrays.get`); one that does not match (damaged, or the file truncated since)
raises `DamagedEntry` and removes the entry, and the caller takes that part from a fresh
decode or build instead (xspace/cache_lazy.py for the profile's lines, trace/index_cache.py
for the trace index's columns). A 20M-event trace then reopens in 0.03-0.15 s instead of
reading 1.1 GB first (docs/trace_viewer.md).

Other results kept beside the columns use the same format through `save_entry`/`load_entry`
(their own suffix and MAC key): the trace index, `<key>-index<version>.tbpi`
(trace/index_cache.py). The store and the trace index write their entries off the request's
path (`save_later`, `save_entry_later`: one writer thread; `flush` waits for it).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import hmac
import json
import logging
import math
import mmap
import os
import secrets
import stat
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tb_profile_plugin.xspace import model
from tb_profile_plugin.xspace.schema import FORMAT_VERSION, StatKind

logger = logging.getLogger(__name__)
T = TypeVar("T")

CACHE_DIR_ENV = "TB_PROFILE_CACHE_DIR"
_MAGIC = b"TBPCOLS4"
_MAC_BYTES = 32
_PREFIX_BYTES = len(_MAGIC) + _MAC_BYTES + 8  # magic, MAC, header length
_ALIGN = 64
_SECRET_NAME = ".secret"
_SECRET_BYTES = 32
_TMP_PREFIX = ".tmp-"
#: A temporary file older than this was left by a writer that died.
STALE_TMP_S = 3600.0
_TYPES = {
    cls.__name__: cls
    for cls in (
        model.Profile, model.Plane, model.Line, model.EventColumns, model.StatColumns,
        model.EventMetadataTable, model.StatMetadataTable, model.StringTable,
    )
}


def cache_dir() -> Path | None:
    """The cache directory, or None when caching is switched off."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return None if configured.lower() in ("off", "0", "none") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tb_profile_plugin"


class _Refused(Exception):
    """The cache directory is unsafe or unusable: caching is off for it."""


_state_lock = threading.Lock()
_secrets: dict[str, bytes] = {}  # checked directory -> its secret
_warned: set[str] = set()


def _warn_once(directory: Path, message: str) -> None:
    with _state_lock:
        if str(directory) in _warned:
            return
        _warned.add(str(directory))
    logger.warning("%s; the profile cache is off for this directory", message)


def open_regular(path: Path | str) -> int | None:
    """A file descriptor on `path` opened for reading without blocking and without following a
    final symlink, or None when it is absent or not a regular file owned by this user (a FIFO,
    a device, a directory, a link: none of them is ever read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        return None
    return fd


def _buffer(size: int) -> memoryview:
    """`size` writable bytes, uninitialised where the system allows (a zero-filled buffer
    costs a pass over 1 GB entries)."""
    if size < 1 << 20:
        return np.empty(size, np.uint8).data.cast("B")
    anonymous = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    with contextlib.suppress(AttributeError, OSError):  # not on every system
        anonymous.madvise(mmap.MADV_HUGEPAGE)
    return memoryview(anonymous)


def _read_all(fd: int, size: int) -> memoryview | None:
    """Exactly `size` bytes of `fd` into memory, or None when the file is shorter or longer."""
    view = _read_at(fd, 0, size)
    if view is None or os.pread(fd, 1, size):
        return None  # truncated or grown since fstat
    return view


def _read_at(fd: int, offset: int, size: int) -> memoryview | None:
    """`size` bytes of `fd` from `offset` into memory, or None when the file ends first.

    The buffer is an anonymous mapping advised to use huge pages (memory of this process, not
    a mapping of the file: a later truncation cannot fault it): reading 0.6 GB into it took
    0.18-0.34 s here against 0.95-5.5 s into a numpy buffer, whose 4 KiB pages fault one by
    one. 64 MiB or more are read in two halves by two threads (the copy and the first touch
    of its pages on both cores): a 20M-event trace reopened in a median 1.1 s instead of
    1.8 s (0.39-1.79 s against 0.57-2.61 s, six runs each, load 1)."""
    view = _buffer(size)
    if size < _PARALLEL_READ_BYTES:
        whole = _read_range(fd, view, 0, size, offset)
    else:  # two halves at once: the copy and the first touch of the pages take both cores
        half = size // 2 // _HUGE_PAGE_BYTES * _HUGE_PAGE_BYTES
        second: list[bool] = []
        other = threading.Thread(
            target=lambda: second.append(_read_range(fd, view, half, size, offset)),
            name="tb-profile-cache-read")
        other.start()
        whole = _read_range(fd, view, 0, half, offset)
        other.join()
        whole = whole and second == [True]
    return view if whole else None


_PARALLEL_READ_BYTES = 64 << 20
_HUGE_PAGE_BYTES = 2 << 20


def _read_range(fd: int, view: memoryview, start: int, end: int, offset: int = 0) -> bool:
    """Reads bytes [offset + start, offset + end) of `fd` into bytes [start, end) of `view`;
    False when the file ends first."""
    while start < end:
        got = os.preadv(fd, [view[start:end]], offset + start)
        if got == 0:
            return False
        start += got
    return True


def _checked_dir(directory: Path) -> bytes:
    """The directory's secret, after checking that the directory is safe (owned by this user,
    not world-writable, a real directory); raises _Refused otherwise. Creates the directory
    (0700) and its secret on first use, and removes stale temporary files once per process."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(directory)
    except OSError as exc:
        raise _Refused(f"profile cache directory {directory} is unusable: {exc}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise _Refused(f"profile cache directory {directory} is not a directory")
    if info.st_uid != os.geteuid():
        raise _Refused(f"profile cache directory {directory} belongs to another user "
                       f"(uid {info.st_uid}); set {CACHE_DIR_ENV} to a directory of your own")
    if info.st_mode & stat.S_IWOTH:
        raise _Refused(f"profile cache directory {directory} is world-writable (mode "
                       f"{stat.S_IMODE(info.st_mode):o}); run chmod 700 on it or set "
                       f"{CACHE_DIR_ENV} to a private directory")
    with _state_lock:
        known = _secrets.get(str(directory))
    if known is not None and _read_secret(directory) == known:
        return known
    _remove_stale_tmp(directory)
    secret = _read_secret(directory) or _new_secret(directory)
    with _state_lock:
        _secrets[str(directory)] = secret
    return secret


def _read_secret(directory: Path) -> bytes | None:
    fd = open_regular(directory / _SECRET_NAME)
    if fd is None:
        return None
    try:
        info = os.fstat(fd)
        if info.st_size != _SECRET_BYTES or stat.S_IMODE(info.st_mode) & 0o077:
            return None  # damaged, or readable by others: replaced
        data = _read_all(fd, _SECRET_BYTES)
        return bytes(data) if data is not None else None
    finally:
        os.close(fd)


def _new_secret(directory: Path) -> bytes:
    """Writes a new secret (entries keyed by an old one become misses); the first of two
    racing writers wins and both use its secret."""
    path = directory / _SECRET_NAME
    try:
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=_TMP_PREFIX, suffix=".secret")
        try:
            os.write(fd, secrets.token_bytes(_SECRET_BYTES))
        finally:
            os.close(fd)
        if os.path.lexists(path):
            with contextlib.suppress(FileNotFoundError):
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)
        with contextlib.suppress(FileExistsError):
            os.link(tmp_name, path)
        os.unlink(tmp_name)
    except OSError as exc:
        raise _Refused(f"cannot write the profile cache's secret in {directory}: {exc}") from exc
    secret = _read_secret(directory)
    if secret is None:
        raise _Refused(f"the profile cache's secret {path} cannot be read back")
    return secret


def _remove_stale_tmp(directory: Path) -> None:
    cutoff = time.time() - STALE_TMP_S
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if not entry.name.startswith(_TMP_PREFIX):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)


def _mac(secret: bytes, key: str) -> hmac.HMAC:
    return hmac.new(secret, key.encode("utf-8") + b"\0", hashlib.sha256)


def cache_key(source: str, size_bytes: int, mtime_ns: int) -> str:
    text = json.dumps([source, size_bytes, mtime_ns, FORMAT_VERSION])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _flatten(obj: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        arrays.append(obj)
        return {"@a": len(arrays) - 1}
    if dataclasses.is_dataclass(obj):
        return {
            "@t": type(obj).__name__,
            "f": {f.name: _flatten(getattr(obj, f.name), arrays) for f in dataclasses.fields(obj)},
        }
    if isinstance(obj, list):
        return [_flatten(item, arrays) for item in obj]
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    raise TypeError(f"cannot cache a {type(obj).__name__}")


#: Builds an object of one class from its fields' trees and its path (`_unflatten`'s
#: `special`: xspace/cache_lazy.py makes lines whose columns are read on first use).
Special = Callable[[dict[str, Any], tuple[Any, ...]], Any]


def _unflatten(tree: Any, array: Callable[[Any], np.ndarray], where: tuple[Any, ...] = (),
               special: Mapping[type, Special] | None = None) -> Any:
    """The object `_flatten` made `tree` of: `array(ref)` is the array of each `{"@a": i}`;
    `special[cls](fields, where)` builds the classes it names; `where` is the path of field
    names and list positions from the root."""
    if isinstance(tree, dict):
        if "@a" in tree:
            return array(tree)
        cls = _TYPES[tree["@t"]]
        fields = tree["f"]
        if special and cls in special:
            return special[cls](fields, where)
        return cls(**{k: _unflatten(v, array, (*where, k), special) for k, v in fields.items()})
    if isinstance(tree, list):
        return [_unflatten(item, array, (*where, k), special) for k, item in enumerate(tree)]
    return tree


def _array_index(ref: Any, count: int) -> int:
    """The position an array reference `{"@a": i}` names among `count` arrays."""
    index = ref.get("@a") if isinstance(ref, dict) else None
    if type(index) is not int or not 0 <= index < count:
        raise ValueError(f"array reference {index!r} out of range")
    return index


#: Per columnar type, the array fields that hold one entry per row (equal lengths).
_SAME_LENGTH = {
    model.EventColumns: ("metadata_id", "start_ps", "duration_ps", "num_occurrences"),
    model.StatColumns: ("row", "metadata_id", "kind", "value", "length"),
    model.StatMetadataTable: ("ids", "names", "descriptions"),
    model.EventMetadataTable: ("ids", "names", "display_names", "metadata"),
}


def _check(obj: Any) -> None:
    """Raises ValueError unless the loaded columns fit together (equal row counts, string
    offsets inside their blob, one child offset per metadata row and one more)."""
    if isinstance(obj, list):
        for item in obj:
            _check(item)
        return
    if not dataclasses.is_dataclass(obj) or _unread(obj):
        return
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(f.type, str) and not _type_ok(value, f.type):
            raise ValueError(f"{type(obj).__name__}.{f.name} is not a {f.type}")
        if isinstance(value, np.ndarray) and value.ndim != 1:
            raise ValueError(f"{type(obj).__name__}.{f.name} is not one-dimensional")
        _check(value)
    lengths = {len(getattr(obj, name)) for name in _SAME_LENGTH.get(type(obj), ())
               if getattr(obj, name) is not None}
    if len(lengths) > 1:
        raise ValueError(f"{type(obj).__name__} columns of different lengths {sorted(lengths)}")
    if isinstance(obj, model.StringTable):
        offsets = obj.offsets
        if (len(offsets) == 0 or offsets[0] != 0 or np.any(np.diff(offsets) < 0)
                or offsets[-1] > len(obj.blob)):
            raise ValueError("string offsets outside their blob")
    if isinstance(obj, model.StatColumns):
        text = np.isin(obj.kind, (StatKind.STR, StatKind.BYTES))
        starts, ends = obj.value[text], obj.value[text] + obj.length[text]
        if np.any(starts < 0) or np.any(ends < starts) or np.any(ends > len(obj.strings)):
            raise ValueError("stat strings outside their blob")
    if isinstance(obj, model.EventMetadataTable):
        if len(obj.child_offsets) != len(obj.ids) + 1:
            raise ValueError("child offsets do not match the metadata rows")
        _check_rows(obj.stats, len(obj.ids))
    if isinstance(obj, model.Line) and not _unread(obj.stats):
        _check_rows(obj.stats, len(obj.events))


def _unread(obj: Any) -> bool:
    """Whether `obj` is a part of a lazily read profile not read yet (xspace/cache_lazy.py):
    it is checked when it is first read."""
    part = getattr(obj, "__dict__", {}).get("_part")
    return part is not None and not part.done


def _type_ok(value: Any, annotation: str) -> bool:
    """Whether `value` has the field's declared type (`int`, `str`, `np.ndarray`, a model
    class, `list[...]` of them, `... | None`); other annotations are not checked."""
    if annotation.endswith(" | None"):
        if value is None:
            return True
        annotation = annotation.removesuffix(" | None")
    if annotation.startswith("list[") and annotation.endswith("]"):
        return isinstance(value, list) and all(_type_ok(v, annotation[5:-1]) for v in value)
    expected = {"int": int, "str": str, "np.ndarray": np.ndarray}.get(annotation) or _TYPES.get(
        annotation)
    return expected is None or (isinstance(value, expected) and not isinstance(value, bool))


def _check_rows(stats: model.StatColumns, num_rows: int) -> None:
    if len(stats.row) and (int(stats.row.min()) < 0 or int(stats.row.max()) >= num_rows):
        raise ValueError("stats of rows that do not exist")


def save(profile: model.Profile, key: str, directory: Path | None = None) -> Path | None:
    """Write `profile` under `key`; returns the file, or None when it could not be written."""
    return save_entry(key, ".tbpc", *_profile_entry(profile), directory)


def save_later(profile: model.Profile, key: str, directory: Path | None = None) -> None:
    """`save`, written off the caller's path (`save_entry_later`)."""
    save_entry_later(key, ".tbpc", *_profile_entry(profile), directory)


def _profile_entry(profile: model.Profile) -> tuple[dict[str, Any], list[np.ndarray]]:
    arrays: list[np.ndarray] = []
    tree = _flatten(dataclasses.replace(profile, decoder="cache"), arrays)
    return {"version": FORMAT_VERSION, "tree": tree}, arrays


def save_entry(key: str, suffix: str, header: dict[str, Any], arrays: list[np.ndarray],
               directory: Path | None = None) -> Path | None:
    """Writes one entry (`header`, JSON, and `arrays`) as `<key><suffix>` in the file format of
    the module docstring, MAC keyed by `key`; returns the file, or None when it could not be
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


#: The longest the writer thread waits for `quiet` to end before each array it writes.
_QUIET_MAX_S = 10.0
_quiet_lock = threading.Lock()
_quiet_holders = 0
_may_write = threading.Event()
_may_write.set()


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Holds the writer thread between the arrays it writes while the caller builds what a
    request waits for (the trace index of a profile just decoded, whose 0.65 GB entry is queued
    by then): the write's page cache and word sums compete with the build for memory and the
    second core (20M longer: the index and first window 1.2-1.9 s with the write going on,
    0.6-1.1 s without). At most `_QUIET_MAX_S` per array, so a write is never held for long."""
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


def _wait_for_write(path: Path) -> None:
    """Waits for a queued write of the entry at `path`, if any."""
    with _writes_lock:
        future = _pending.get(str(path))
    if future is not None:
        concurrent.futures.wait([future])


_writes_lock = threading.Lock()
_writer: concurrent.futures.ThreadPoolExecutor | None = None
_pending: dict[str, concurrent.futures.Future[None]] = {}  # entry path -> its queued write


def _writable(directory: Path | None) -> tuple[Path, bytes] | None:
    """(directory, its secret), or None when caching is off or the directory is unsafe."""
    directory = directory or cache_dir()
    if directory is None:
        return None
    try:
        return directory, _checked_dir(directory)
    except _Refused as exc:
        _warn_once(directory, str(exc))
        return None


def _write_entry(key: str, suffix: str, header: dict[str, Any], arrays: list[np.ndarray],
                 directory: Path, secret: bytes, pausable: bool = False) -> Path | None:
    """Writes the entry to a temporary file and renames it into place (readers never see a
    partial entry); None when it could not be written. `pausable` (the writer thread): waits
    before each array while a `quiet` is held. Each array's word sums are kept in the
    header (`checks`), so that a reader can check one array without the others
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
                if pausable:
                    _may_write.wait(_QUIET_MAX_S)
                data = np.ascontiguousarray(array).data.cast("B")
                sums[k] = _word_sums(data)
                out.write(data)
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


def _digest(length: int, sums: np.ndarray) -> bytes:
    """The data region's check from its arrays' (sum, XOR) pairs: its length, the sum of the
    sums (mod 2^64) and the XOR of the XORs (the zeros between arrays add nothing)."""
    total = int(np.add.reduce(sums[:, 0], dtype=np.uint64)) if len(sums) else 0
    xor = int(np.bitwise_xor.reduce(sums[:, 1])) if len(sums) else 0
    return b"".join(v.to_bytes(8, "little") for v in (length, total, xor))


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


class DamagedEntry(ValueError):
    """An array of a lazily read entry does not match its sums, or its file changed."""


class EntryArrays:
    """The arrays of one cache entry: all read already (a small entry), or each read from the
    open file and checked against its word sums (kept in the MAC-checked header) when `get`
    first asks for it. The file stays open while this object lives (a file replaced by a newer
    entry is still read whole from its own inode); `get` returns memory of this process,
    never a mapping of the file, so a later truncation cannot fault the process: it is a
    `DamagedEntry`."""

    __slots__ = ("_loaded", "_fd", "_path", "_data_start", "_table", "_sums", "__weakref__")

    def __init__(self, loaded: list[np.ndarray | None], fd: int | None = None,
                 path: Path | None = None, data_start: int = 0,
                 table: list[tuple[np.dtype[Any], list[int], int]] | None = None,
                 sums: np.ndarray | None = None) -> None:
        self._loaded = loaded
        self._fd, self._path, self._data_start = fd, path, data_start
        self._table = table or []
        self._sums = sums
        if fd is not None:
            weakref.finalize(self, os.close, fd)

    @staticmethod
    def whole(arrays: list[np.ndarray]) -> EntryArrays:
        return EntryArrays(list(arrays))

    @property
    def lazy(self) -> bool:
        return self._fd is not None

    def __len__(self) -> int:
        return len(self._loaded)

    def shape(self, index: int) -> tuple[int, ...]:
        array = self._loaded[index]
        return tuple(array.shape) if array is not None else tuple(self._table[index][1])

    def dtype(self, index: int) -> np.dtype[Any]:
        array = self._loaded[index]
        return array.dtype if array is not None else self._table[index][0]

    def nbytes(self, index: int) -> int:
        return math.prod(self.shape(index)) * self.dtype(index).itemsize

    def all(self) -> list[np.ndarray]:
        return [self.get(i) for i in range(len(self))]

    def get(self, index: int) -> np.ndarray:
        """The array (read-only), read and checked now if it was not; raises DamagedEntry
        (and removes the entry) when its bytes do not match their sums."""
        array = self._loaded[index]
        if array is not None:
            return array
        assert self._fd is not None and self._sums is not None and self._path is not None
        dtype, shape, offset = self._table[index]
        size = math.prod(shape) * dtype.itemsize
        data = _read_at(self._fd, self._data_start + offset, size) if size else memoryview(b"")
        if data is None or _word_sums(data) != tuple(int(v) for v in self._sums[index]):
            logger.warning("ignoring damaged profile cache entry %s: array %d does not match "
                           "its sums", self._path, index)
            self._remove_if_same_file()
            raise DamagedEntry(f"array {index} of {self._path.name} is damaged")
        array = np.frombuffer(data, dtype, math.prod(shape)).reshape(shape)
        array.flags.writeable = False
        return array

    def _remove_if_same_file(self) -> None:
        """Removes the entry unless a newer one has replaced it meanwhile."""
        assert self._fd is not None and self._path is not None
        with contextlib.suppress(OSError):
            if os.stat(self._path, follow_symlinks=False).st_ino == os.fstat(self._fd).st_ino:
                _remove(self._path)


def _layout(prefix: bytes | memoryview, size: int) -> tuple[int, int]:
    """(header length, where the data region begins) from an entry's first `_PREFIX_BYTES`;
    raises unless the magic is there and the header fits the file's `size`."""
    if len(prefix) < _PREFIX_BYTES or prefix[: len(_MAGIC)] != _MAGIC:
        raise ValueError("not a profile cache entry of this format")
    header_len = int.from_bytes(prefix[_PREFIX_BYTES - 8 : _PREFIX_BYTES], "little")
    data_start = -(-(_PREFIX_BYTES + header_len) // _ALIGN) * _ALIGN
    if data_start > size:
        raise ValueError("header longer than the file")
    return header_len, data_start


def _check_mac(secret: bytes, key: str, prefix: bytes | memoryview, head: bytes | memoryview,
               digest: bytes) -> None:
    """Raises unless the entry's MAC (in `prefix`) is the one of `head` (the header with its
    length and padding) and the data region's `digest`."""
    mac = _mac(secret, key)
    mac.update(head)
    mac.update(digest)
    if not hmac.compare_digest(mac.digest(), bytes(prefix[len(_MAGIC) : len(_MAGIC) + _MAC_BYTES])):
        raise ValueError("MAC mismatch (damaged, or written by someone else or for another key)")


def _parse_lazily(fd: int, size: int, path: Path, secret: bytes,
                  key: str) -> tuple[dict[str, Any], EntryArrays]:
    """The header and the (unread) arrays of a big entry; raises on any damage of the header,
    its array table or their sums (the MAC is over the header and the data region's digest
    made from the arrays' sums, so that an array's sums can be trusted before it is read)."""
    prefix = os.pread(fd, _PREFIX_BYTES, 0)
    header_len, data_start = _layout(prefix, size)
    head = os.pread(fd, data_start - _PREFIX_BYTES + 8, _PREFIX_BYTES - 8)
    if len(head) != data_start - _PREFIX_BYTES + 8:
        raise ValueError("the file changed while it was read")
    header = json.loads(head[8 : 8 + header_len])
    if not isinstance(header, dict) or not isinstance(header.get("checks"), str):
        raise ValueError("the entry's header has no array checks")
    sums = np.frombuffer(bytes.fromhex(header["checks"]), "<u8").reshape(-1, 2)
    _check_mac(secret, key, prefix, head, _digest(size - data_start, sums))
    table = _array_table(header, data_start, size)
    if len(sums) != len(table):
        raise ValueError("the entry's array checks do not match its arrays")
    return header, EntryArrays([None] * len(table), fd, path, data_start, table, sums)


def _word_sums(data: memoryview) -> tuple[int, int]:
    """(sum mod 2^64, XOR) of the bytes' 64-bit words, the last one padded with zeros: numpy
    reductions at memory speed (about 5 GB/s here, against 1 GB/s for SHA-256)."""
    whole = len(data) // 8
    words = np.frombuffer(data, np.uint64, whole)
    total = int(np.add.reduce(words, dtype=np.uint64)) if whole else 0
    xor = int(np.bitwise_xor.reduce(words)) if whole else 0
    tail = bytes(data[whole * 8 :])
    if tail:
        last = int.from_bytes(tail.ljust(8, b"\0"), "little")
        total, xor = (total + last) % 2**64, xor ^ last
    return total, xor


def _region_digest(view: memoryview, data_start: int) -> bytes:
    """`_digest` of the whole data region read at once (the same bytes as from its arrays')."""
    region = view[data_start:]
    return _digest(len(region), np.array([_word_sums(region)], np.uint64))


def _parse(data: memoryview, secret: bytes, key: str) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The header and arrays in one entry's bytes; raises on any damage."""
    view = memoryview(data)
    header_len, data_start = _layout(view, len(view))
    _check_mac(secret, key, view, view[_PREFIX_BYTES - 8 : data_start],
               _region_digest(view, data_start))
    header = json.loads(bytes(view[_PREFIX_BYTES : _PREFIX_BYTES + header_len]))
    if not isinstance(header, dict):
        raise ValueError("the entry's header is not an object")
    arrays = []
    for dtype, shape, offset in _array_table(header, data_start, len(data)):
        array = np.frombuffer(data, dtype, math.prod(shape), data_start + offset).reshape(shape)
        array.flags.writeable = False
        arrays.append(array)
    return header, arrays


def _array_table(header: dict[str, Any], data_start: int,
                 size: int) -> list[tuple[np.dtype[Any], list[int], int]]:
    """(dtype, shape, offset in the data region) of each array of the header's table; raises
    ValueError for an array that cannot be in an entry or does not lie inside the file."""
    table = []
    for dtype_str, shape, offset in header["arrays"]:
        dtype = np.dtype(dtype_str)
        if dtype.hasobject or any(type(n) is not int or n < 0 for n in shape):
            raise ValueError(f"array {dtype_str} {shape} cannot be in a cache entry")
        if (type(offset) is not int or offset < 0
                or data_start + offset + math.prod(shape) * dtype.itemsize > size):
            raise ValueError("array outside the file")
        table.append((dtype, shape, offset))
    return table


def _profile_of(header: dict[str, Any], arrays: list[np.ndarray]) -> model.Profile:
    return profile_from(header, lambda tree: _unflatten(
        tree, lambda ref: arrays[_array_index(ref, len(arrays))]))


def profile_from(header: dict[str, Any], unflatten: Callable[[Any], Any]) -> model.Profile:
    """The profile `unflatten` makes of the entry's tree (all arrays read: `_profile_of`; the
    lines' columns on first use: cache_lazy.py), its version and columns checked."""
    if header.get("version") != FORMAT_VERSION:
        raise ValueError(f"format version {header.get('version')!r}")
    profile = unflatten(header["tree"])
    if not isinstance(profile, model.Profile):
        raise ValueError(f"the entry holds a {type(profile).__name__}, not a Profile")
    _check(profile)
    return profile


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)  # an empty directory at the path; a full one stays (and misses)
        else:
            os.unlink(path)
