"""File access for local paths and, through TensorBoard's own file layer, remote ones.

Local paths use the os module directly. Paths with a scheme (`gs://`, `s3://`, any fsspec
protocol the user has installed) go through `tensorboard.compat.tensorflow_stub.io.gfile`,
TensorBoard's TensorFlow-free file layer, so the plugin never imports TensorFlow.

A file's identity (`identity`: what every cache checks before it answers from an earlier read)
is its size, modification time (ns), inode and status-change time (ns) where the filesystem
gives them, plus a cheap fingerprint of its content: a BLAKE2b of its first and last 64 KiB.
So a rewrite of the same size whose mtime was restored is still seen (its ctime, and most likely
its fingerprint, changed). The fingerprint is read again only while the file's ctime is within
`RACY_SECONDS` of now (a filesystem with coarse timestamps may not show a second write in the
same tick); an older file of unchanged stat keeps its remembered fingerprint. Remote files
(fsspec) have no inode or ctime: their identity is their size plus what the filesystem says of
their content (ETag, checksum, generation) when it says one, else the fingerprint (read on
every call) with the modification time it gives. A local file that cannot be read
(permissions) has the fingerprint `unreadable`, so fixing its permissions (a new ctime) gives a
new identity.

Profile files are read (whole, `read_bytes`, or a chunk at a time, `LocalFile`) only when they
are regular files (after resolving links) of at most `TB_PROFILE_MAX_FILE_BYTES` bytes
(default 4 GiB): a FIFO, a device (`/dev/zero`), a socket or a directory is refused from its
`stat`, before anything opens it, and the open itself is non-blocking and checked again
(`fstat`), so nothing here can hang or read without end.
Symbolic links are followed only inside the logdir unless `TB_PROFILE_FOLLOW_LINKS=1`
(`follow_links`, applied by logdir.py).
"""

from __future__ import annotations

import collections
import errno
import hashlib
import os
import posixpath
import stat as stat_module
import threading
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

#: The largest profile file read, in bytes (`max_file_bytes`).
MAX_FILE_BYTES_ENV = "TB_PROFILE_MAX_FILE_BYTES"
DEFAULT_MAX_FILE_BYTES = 4 * 2**30
#: Set to 1 to follow symbolic links that lead outside the logdir (`follow_links`).
FOLLOW_LINKS_ENV = "TB_PROFILE_FOLLOW_LINKS"
_READ_CHUNK_BYTES = 1 << 20
#: The most one pread asks for (Linux returns at most 0x7FFFF000 bytes a call).
_MAX_PREAD_BYTES = 1 << 30


class FileRefused(OSError):
    """A file that is never read: not a regular file, or larger than the limit. Its message is
    a sentence for users and names no path."""


def max_file_bytes() -> int:
    """The largest profile file read: TB_PROFILE_MAX_FILE_BYTES, default 4 GiB."""
    text = os.environ.get(MAX_FILE_BYTES_ENV, "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_MAX_FILE_BYTES


def follow_links() -> bool:
    """Whether symbolic links leading outside the logdir are followed (TB_PROFILE_FOLLOW_LINKS)."""
    return os.environ.get(FOLLOW_LINKS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def inside(path: str, root_real: str) -> bool:
    """Whether local `path`, every link in it resolved, lies in the directory `root_real`
    (itself already resolved: `os.path.realpath`)."""
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _kind(mode: int) -> str:
    kinds = ((stat_module.S_ISDIR, "a directory"), (stat_module.S_ISFIFO, "a named pipe (FIFO)"),
             (stat_module.S_ISCHR, "a character device"), (stat_module.S_ISBLK, "a block device"),
             (stat_module.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _check_regular(info: os.stat_result) -> None:
    if not stat_module.S_ISREG(info.st_mode):
        raise FileRefused(
            f"it is {_kind(info.st_mode)}, not a regular file, so it is not read (a profile is "
            "a regular .xplane.pb file)")


def check_size(size_bytes: int, limit: int | None = None) -> None:
    """FileRefused when `size_bytes` is over `limit` (default: `max_file_bytes()`)."""
    limit = max_file_bytes() if limit is None else limit
    if size_bytes > limit:
        raise FileRefused(
            f"the file is {size_bytes:,} bytes, more than the {limit:,}-byte limit on profile "
            f"files ({MAX_FILE_BYTES_ENV} raises it)")


def is_remote(path: str) -> bool:
    return "://" in path


def _gfile():  # imported lazily: only remote paths need it
    from tensorboard.compat.tensorflow_stub.io import gfile

    return gfile


def join(base: str, *parts: str) -> str:
    return posixpath.join(base, *parts) if is_remote(base) else os.path.join(base, *parts)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_remote(path) else os.path.basename(path)


def stat(path: str) -> tuple[int, int]:
    """(size in bytes, modification time in ns; 0 for remote files) of a regular file (links
    resolved). FileNotFoundError if absent, FileRefused if not a regular file, OSError else."""
    if not is_remote(path):
        info = os.stat(path)
        _check_regular(info)
        return info.st_size, info.st_mtime_ns
    gfile = _gfile()
    try:
        return gfile.stat(path).length, 0
    except Exception as exc:  # the stub raises its own NotFoundError
        raise FileNotFoundError(path) from exc


#: Bytes hashed at each end of a file for its fingerprint.
FINGERPRINT_BYTES = 64 * 1024
#: A file whose ctime is this recent is fingerprinted on every look (see the docstring).
RACY_SECONDS = 2.0
#: Fingerprints remembered (local files whose stat did not change).
_FINGERPRINTS_KEPT = 8192
UNREADABLE = "unreadable"
#: Keys of fsspec's `info` that name a version of a remote file's content (first found used).
_REMOTE_VERSION_KEYS = ("etag", "ETag", "md5Hash", "crc32c", "checksum", "generation",
                        "version_id", "VersionId")
#: Times a remote filesystem may give; they join the fingerprint (they may be coarse or reset).
_REMOTE_TIME_KEYS = ("LastModified", "mtime", "updated", "created")


class Identity(NamedTuple):
    """What tells one version of a file from another (`identity`); 0 where the filesystem has
    no such field (remote files)."""

    size_bytes: int
    mtime_ns: int
    inode: int
    ctime_ns: int
    fingerprint: str


_fingerprint_lock = threading.Lock()
_fingerprints: collections.OrderedDict[str, tuple[tuple[int, ...], str]] = (
    collections.OrderedDict())


def identity(path: str) -> Identity:
    """The identity of the regular file at `path` (links resolved); raises like `stat`. A local
    file that cannot be opened gets the fingerprint UNREADABLE (its reader reports why)."""
    if is_remote(path):
        return _remote_identity(path)
    info = os.stat(path)
    _check_regular(info)
    signature = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns, info.st_dev)
    racy = time.time_ns() - info.st_ctime_ns < RACY_SECONDS * 1e9
    with _fingerprint_lock:
        known = _fingerprints.get(path)
    if known is not None and known[0] == signature and not racy:
        fingerprint = known[1]
    else:
        fingerprint = _local_fingerprint(path, info.st_size)
        if not racy and fingerprint != UNREADABLE:
            with _fingerprint_lock:
                _fingerprints[path] = (signature, fingerprint)
                _fingerprints.move_to_end(path)
                while len(_fingerprints) > _FINGERPRINTS_KEPT:
                    _fingerprints.popitem(last=False)
    return Identity(info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns, fingerprint)


def _digest(head: bytes, tail: bytes, size_bytes: int) -> str:
    hasher = hashlib.blake2b(digest_size=16)
    hasher.update(size_bytes.to_bytes(8, "little"))
    hasher.update(head)
    hasher.update(tail)
    return hasher.hexdigest()


#: How a local file is opened to be read: never blocking (a FIFO swapped in), never becoming
#: the controlling terminal, not inherited by child processes.
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(
    os, "O_CLOEXEC", 0)


def _local_fingerprint(path: str, size_bytes: int) -> str:
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError:
        return UNREADABLE
    try:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            return UNREADABLE
        head = os.pread(fd, FINGERPRINT_BYTES, 0)
        tail = (os.pread(fd, FINGERPRINT_BYTES, size_bytes - FINGERPRINT_BYTES)
                if size_bytes > FINGERPRINT_BYTES else b"")
        return _digest(head, tail, size_bytes)
    except OSError:
        return UNREADABLE
    finally:
        os.close(fd)


def _remote_info(path: str) -> tuple[Any, str, dict[str, Any]] | None:
    """(fsspec filesystem, its path, its `info`) of a remote file, or None when fsspec cannot
    say."""
    try:
        import fsspec

        filesystem, inner = fsspec.core.url_to_fs(path)
        info = filesystem.info(inner)
    except Exception:  # no fsspec, an unknown protocol, or the file is gone
        return None
    return (filesystem, inner, info) if isinstance(info, dict) else None


def _remote_identity(path: str) -> Identity:
    found = _remote_info(path)
    info = found[2] if found is not None else {}
    if info.get("type", "file") != "file":
        raise FileRefused("it is a directory, not a regular file, so it is not read (a profile "
                          "is a regular .xplane.pb file)")
    size_bytes = int(info["size"]) if info.get("size") is not None else stat(path)[0]
    version = next((f"{name}={info[name]}" for name in _REMOTE_VERSION_KEYS
                    if info.get(name) not in (None, "")), "")
    if version:
        return Identity(size_bytes, 0, 0, 0, version)
    when = next((f"{info[name]}" for name in _REMOTE_TIME_KEYS
                 if info.get(name) not in (None, "")), "")
    try:
        if found is not None:
            filesystem, inner, _ = found
            head = filesystem.cat_file(inner, 0, min(size_bytes, FINGERPRINT_BYTES))
            tail = (filesystem.cat_file(inner, size_bytes - FINGERPRINT_BYTES, size_bytes)
                    if size_bytes > FINGERPRINT_BYTES else b"")
        else:  # TensorBoard's own layer reads from the start only
            with _gfile().GFile(path, "rb") as handle:
                head, tail = handle.read(FINGERPRINT_BYTES), b""
    except FileNotFoundError:
        raise
    except Exception as exc:  # the stub raises its own NotFoundError
        raise FileNotFoundError(path) from exc
    return Identity(size_bytes, 0, 0, 0, "/".join(filter(None, (
        _digest(head, tail, size_bytes), when))))


#: `hole_bytes` looks at no more than this many holes (a file of tiny holes stays cheap).
_HOLES_LOOKED_AT = 4096


def hole_bytes(fd: int, size_bytes: int, enough: int) -> int:
    """Bytes of the open local file `fd` (of `size_bytes`) that are holes, never written
    (SEEK_HOLE / SEEK_DATA), counted until more than `enough` are found or `_HOLES_LOOKED_AT`
    holes were seen; 0 where the system or the filesystem cannot say (it then reports the whole
    file as data)."""
    seek_hole, seek_data = getattr(os, "SEEK_HOLE", None), getattr(os, "SEEK_DATA", None)
    if seek_hole is None or seek_data is None:
        return 0
    holes = 0
    pos = 0
    try:
        for _ in range(_HOLES_LOOKED_AT):
            hole = os.lseek(fd, pos, seek_hole)
            if hole >= size_bytes:
                break
            try:
                data = os.lseek(fd, hole, seek_data)
            except OSError:  # ENXIO: no data after this hole, it runs to the end
                data = size_bytes
            holes += data - hole
            if holes > enough or data >= size_bytes:
                break
            pos = data
    except OSError:
        return holes
    finally:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
        except OSError:
            pass
    return holes


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The whole file, if it is a regular file of at most `limit` bytes (default
    `max_file_bytes()`); FileRefused otherwise. A local file is checked from its `stat`
    before it is opened, opened non-blocking, checked again, and read no further than the limit.
    """
    limit = max_file_bytes() if limit is None else limit
    if is_remote(path):
        check_size(stat(path)[0], limit)
        with _gfile().GFile(path, "rb") as handle:
            data = handle.read(limit + 1)
        check_size(len(data), limit)
        return data
    with LocalFile(path, limit) as local:
        return local.read_all()


class LocalFile:
    """A local regular file opened with `read_bytes`' checks (its `stat` before the open, a
    non-blocking open, its `fstat` after), read whole (`read_all`) or a chunk at a time
    (`chunks`, as often as asked: each starts over), never past `limit`. Use it in a `with`."""

    def __init__(self, path: str, limit: int | None = None) -> None:
        self.limit = max_file_bytes() if limit is None else limit
        info = os.stat(path)  # refuse before opening: opening a FIFO or a device can block
        _check_regular(info)
        check_size(info.st_size, self.limit)
        self.fd = os.open(path, READ_FLAGS)
        try:
            opened = os.fstat(self.fd)  # the path may have been swapped since the stat
            _check_regular(opened)
            check_size(opened.st_size, self.limit)
        except BaseException:
            os.close(self.fd)
            raise
        self.size_bytes = opened.st_size

    def __enter__(self) -> LocalFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def head(self, size: int) -> bytes:
        """The file's first `size` bytes (fewer when it is shorter)."""
        return os.pread(self.fd, size, 0)

    def read_all(self) -> bytes:
        """The whole file (read on if it grew since it was opened, never past the limit)."""
        os.lseek(self.fd, 0, os.SEEK_SET)
        with os.fdopen(self.fd, "rb", buffering=0, closefd=False) as handle:
            data = handle.read(self.size_bytes) if self.size_bytes else b""
            data = data or b""
            more = []  # the file grew while being read: read on, never past the limit
            total = len(data)
            while chunk := handle.read(min(_READ_CHUNK_BYTES, self.limit + 1 - total)):
                more.append(chunk)
                total += len(chunk)
                check_size(total, self.limit)
        return data + b"".join(more) if more else data

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file as it was opened (`size_bytes`); OSError when they
        are no longer there (the file was cut while it was read)."""
        if not 0 <= start <= end <= self.size_bytes:
            raise ValueError(f"range {start}..{end} outside a file of {self.size_bytes} bytes")
        parts: list[bytes] = []
        at = start
        while at < end:
            chunk = os.pread(self.fd, min(end - at, _MAX_PREAD_BYTES), at)
            if not chunk:
                raise OSError(errno.EIO, "the file became shorter while it was read")
            parts.append(chunk)
            at += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_range_into(self, start: int, end: int, out: memoryview) -> None:
        """`read_range` into `out` (of `end - start` bytes) instead of fresh bytes: a caller
        reading many ranges one after another reuses its memory (fresh pages for each of an
        8-GPU capture's 117 MB streams cost more than walking them)."""
        if not 0 <= start <= end <= self.size_bytes or len(out) != end - start:
            raise ValueError(f"range {start}..{end} outside a file of {self.size_bytes} bytes"
                             f" or not the size of its buffer ({len(out)})")
        at = 0
        while at < len(out):
            read = os.preadv(self.fd, [out[at : at + _MAX_PREAD_BYTES]], start + at)
            if not read:
                raise OSError(errno.EIO, "the file became shorter while it was read")
            at += read

    def chunks(self, size: int) -> Iterator[bytes]:
        """The file from its start, `size` bytes at a time (the last shorter), to its end as
        it is then (read on if it grew), never past the limit (FileRefused)."""
        total = 0
        while chunk := os.pread(self.fd, min(size, self.limit + 1 - total), total):
            total += len(chunk)
            check_size(total, self.limit)
            yield chunk


def write_bytes(path: str, data: bytes) -> None:
    """Write whole or not at all: a local reader never sees half a file under its final name."""
    if is_remote(path):
        with _gfile().GFile(path, "wb") as handle:
            handle.write(data)
        return
    partial = path + ".partial"
    with open(partial, "wb") as handle:
        handle.write(data)
    os.replace(partial, path)


def makedirs(path: str) -> None:
    """Create `path` and its parents; nothing if it exists."""
    if is_remote(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def isdir(path: str) -> bool:
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def listdir(path: str) -> list[str]:
    if is_remote(path):
        return [name.rstrip("/") for name in _gfile().listdir(path)]
    return os.listdir(path)


def walk(top: str, followlinks: bool = False) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk for both kinds of path; locally, symlinked directories are listed but not
    descended into unless `followlinks`."""
    if is_remote(top):
        yield from _gfile().walk(top)
    else:
        yield from os.walk(top, followlinks=followlinks)
