"""The disk cache's entry file format, its MAC and word sums, and reading an entry back.

File format (one file per entry, written to a temporary `.tmp-*` name and renamed into place,
cache/writer.py; temporary files left by a killed writer are removed after an hour):

    b"TBPCOLS4" | MAC (32 bytes) | header length (uint64 LE) | header (JSON) | arrays, each
    64-byte aligned

The header holds the profile's structure as a small JSON tree in which every numpy array is a
reference `{"@a": index}` into the array list `[dtype, shape, offset]` (cache/tree.py), and
`checks`: per array the sum (mod 2^64) and XOR of its little-endian 64-bit words (the last one
padded with zeros), as hex. The MAC is HMAC-SHA256, keyed by the cache directory's own secret
(`.secret`, 32 random bytes, mode 0600, made on first use: cache/directory.py), over the entry's
key, the header (with its length and padding), and the data region's length, sum and XOR (the
sums and XORs of the arrays: the zeros between them add nothing): a file that someone else
wrote, damaged, truncated or renamed from another key is a miss. The words' sum and XOR stand
in for hashing the arrays themselves (numpy reductions at ~5 GB/s against SHA-256's ~1 GB/s: a
20M-event profile and its trace index are 1.1 GB): any flipped bit, zeroed stretch or
truncation changes them; what they do not catch is a deliberate edit that keeps both (two
words swapped), which needs write access to this user's 0700 directory, where `.secret` can be
read anyway, so the full hash never protected against it; the structure checks on load
(`tree._check`, trace/index_cache.py) stay as they were. Nothing is unpickled.

Reading back: `_parse` checks the MAC of an entry read whole and wraps each array with
`numpy.frombuffer` (read-only, no parsing of the columns). `_parse_lazily` reads a big entry's
header alone: the MAC is checked with the arrays' sums the header states, so those sums can be
trusted, and each array is read (into memory of this process, never a mapping) and checked
against its own sums when it is first asked for (`EntryArrays.get`); one that does not match
(damaged, or the file truncated since) raises `DamagedEntry` and removes the entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import math
import os
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from tb_profile_plugin.xspace.cache.files import _read_at, _remove

logger = logging.getLogger(__name__)


_MAGIC = b"TBPCOLS4"
_MAC_BYTES = 32
_PREFIX_BYTES = len(_MAGIC) + _MAC_BYTES + 8  # magic, MAC, header length
_ALIGN = 64


def _mac(secret: bytes, key: str) -> hmac.HMAC:
    return hmac.new(secret, key.encode("utf-8") + b"\0", hashlib.sha256)


def _digest(length: int, sums: np.ndarray) -> bytes:
    """The data region's check from its arrays' (sum, XOR) pairs: its length, the sum of the
    sums (mod 2^64) and the XOR of the XORs (the zeros between arrays add nothing)."""
    total = int(np.add.reduce(sums[:, 0], dtype=np.uint64)) if len(sums) else 0
    xor = int(np.bitwise_xor.reduce(sums[:, 1])) if len(sums) else 0
    return b"".join(v.to_bytes(8, "little") for v in (length, total, xor))


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
