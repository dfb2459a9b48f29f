"""Finished view documents, encoded, kept for the next request of the same view.

Asking for a view a second time (a page reload, a tab switch, the CSV's neighbour) used to
rebuild its document from the cached analysis, encode it and gzip it again: 80–100 ms for the
overview of the 2.4M-event capture, most of it per-step Python (the `steps` rows, 4.5 MB of
JSON) and the encoding, none of it the analysis. A `DocumentCache` keeps the finished answer,
gzipped once (gzip level 1, the bytes `plugin._respond` sends), per `DocumentKey`: the view and
its version, run, host, query parameters, and the identity (path, size, modification time in
ns, what `xspace/store.py` checks) of every host file the document reads. A file that changed
on disk gives another key, so it is never answered from its old document; entries of the old
identity are dropped when the new one is seen.

The cache is bounded in bytes (`TB_PROFILE_DOCUMENT_CACHE_BYTES`, default 1/16 of the memory
cache bound `TB_PROFILE_MEMORY_CACHE_BYTES`: 128 MiB, ~330 gzipped overviews of the 2.4M-event
capture); least recently used documents go first, and one larger than the bound is not kept.
Only views whose document is a function of their files and parameters alone are kept
(`View.keeps_documents`: not the trace viewer, whose windows depend on the memory bound).
"""

from __future__ import annotations

import collections
import gzip
import os
import threading
from dataclasses import dataclass

from tb_profile_plugin.xspace.store import memory_cache_bytes

DOCUMENT_CACHE_ENV = "TB_PROFILE_DOCUMENT_CACHE_BYTES"
#: The default bound as a share of the memory cache's (xspace/store.py).
_SHARE_OF_MEMORY_CACHE = 16
#: Answers shorter than this are sent as they are (gzip would save next to nothing).
GZIP_MIN_BYTES = 1024
#: gzip's fastest level: a 3.3 MB trace window compresses in 30–38 ms to 1.14 MB, against
#: 220–240 ms to 1.01 MB at level 6 (2.4M-event capture; docs/trace_viewer.md). The bytes
#: level 6 saves (0.13 MB for 0.19 s more) take longer to compress than to send on any link
#: faster than ~0.7 MB/s.
GZIP_LEVEL = 1
#: What one entry costs beyond its body (key tuple, entry object, dictionary slots).
_ENTRY_OVERHEAD_BYTES = 512

#: (path, size in bytes, modification time in ns) of one host file.
FileIdentity = tuple[str, int, int]


@dataclass(frozen=True)
class DocumentKey:
    """What a document depends on: the view (and its version), where, the query parameters
    (sorted), and the identity of every host file it reads."""

    view: str
    version: int
    run: str
    host: str
    params: tuple[tuple[str, str], ...]
    files: tuple[FileIdentity, ...]


@dataclass(frozen=True)
class Encoded:
    """A document's JSON, gzipped when at least GZIP_MIN_BYTES long (`body` is then the gzip
    member `plugin._respond` would send)."""

    body: bytes
    gzipped: bool

    @staticmethod
    def of(data: bytes, compress: bool = True) -> Encoded:
        """`data` gzipped when `compress` and it is long enough, else as it is."""
        if compress and len(data) >= GZIP_MIN_BYTES:
            return Encoded(gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0), True)
        return Encoded(data, False)

    def plain(self) -> bytes:
        """The JSON itself (for a client that does not accept gzip)."""
        return gzip.decompress(self.body) if self.gzipped else self.body


def document_cache_bytes() -> int:
    """The bound: TB_PROFILE_DOCUMENT_CACHE_BYTES, else 1/16 of the memory cache bound."""
    try:
        return int(os.environ[DOCUMENT_CACHE_ENV])
    except (KeyError, ValueError):
        return memory_cache_bytes() // _SHARE_OF_MEMORY_CACHE


def _entry_bytes(key: DocumentKey, encoded: Encoded) -> int:
    return len(encoded.body) + _ENTRY_OVERHEAD_BYTES + sum(len(f[0]) for f in key.files)


class DocumentCache:
    """Encoded documents by `DocumentKey`, LRU, bounded in bytes; safe across threads."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = document_cache_bytes() if max_bytes is None else max_bytes
        self._entries: collections.OrderedDict[DocumentKey, Encoded] = collections.OrderedDict()
        self._bytes = 0
        #: The newest identity seen of each file, and the keys that read it.
        self._identity: dict[str, tuple[int, int]] = {}
        self._keys_of: dict[str, set[DocumentKey]] = {}
        self._lock = threading.Lock()
        #: Answers served from the cache, and documents kept (tests and the bench read them).
        self.hits = 0
        self.stores = 0

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: DocumentKey) -> Encoded | None:
        with self._lock:
            self._forget_stale(key.files, record=False)
            encoded = self._entries.get(key)
            if encoded is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            return encoded

    def put(self, key: DocumentKey, encoded: Encoded) -> None:
        size_bytes = _entry_bytes(key, encoded)
        with self._lock:
            if size_bytes > self.max_bytes:
                return
            self._forget_stale(key.files, record=True)
            if key in self._entries:
                return
            self._entries[key] = encoded
            self._bytes += size_bytes
            self.stores += 1
            for path, _, _ in key.files:
                self._keys_of.setdefault(path, set()).add(key)
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _forget_stale(self, files: tuple[FileIdentity, ...], record: bool) -> None:
        """Drops the documents that read another identity of one of `files` (the file
        changed: they can never be asked for again); with `record`, `files` become the
        identities kept documents read."""
        for path, size_bytes, mtime_ns in files:
            seen = self._identity.get(path)
            if seen is not None and seen != (size_bytes, mtime_ns):
                for key in list(self._keys_of.get(path, ())):
                    self._drop(key)
            if record:
                self._identity[path] = (size_bytes, mtime_ns)

    def _drop(self, key: DocumentKey) -> None:
        encoded = self._entries.pop(key)
        self._bytes -= _entry_bytes(key, encoded)
        for path, _, _ in key.files:
            keys = self._keys_of.get(path)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._keys_of[path]
                    self._identity.pop(path, None)
