"""Finished view documents, encoded, kept for the next request of the same view.

Asking for a view a second time (a page reload, a tab switch, the CSV's neighbour) used to
rebuild its document from the cached analysis, encode it and gzip it again: 80–100 ms for the
overview of the 2.4M-event capture, most of it per-step Python (the `steps` rows, 4.5 MB of
JSON) and the encoding, none of it the analysis. A `DocumentCache` keeps the finished answer,
gzipped once (gzip level 1, the bytes `plugin._respond` sends), per `DocumentKey`: the view and
its version, run, host, the query parameters the view read, and the identity (path and
`fs.identity`: size, mtime, inode, ctime, content fingerprint; what `xspace/store.py` checks)
of every host file the document reads. A file that changed on disk gives another key, so it is
never answered from its old document; entries of the old identity are dropped when the new one
is seen.

Parameters: a document is built from a `RecordingParams`, which notes the names the view looks
up. A view's build is a function of its files and of the parameters it read, so a later query
that gives the same values (or the same absence) to exactly those names gets the same document,
whatever else it carries: the key holds only those names (`params_key`), and parameters a view
ignores make no distinct entries. A view that lists its parameters (iterates them) is keyed by
all of them. The cache remembers each view's read sets (at most `READ_SETS_PER_VIEW`) and looks
a query up under each (`find`). Parameter text longer than `MAX_PARAMS_KEY_BYTES` is kept as
its SHA-256, so no key holds more than that of the query.

The cache is bounded in bytes (`TB_PROFILE_DOCUMENT_CACHE_BYTES`, default 1/16 of the memory
cache bound `TB_PROFILE_MEMORY_CACHE_BYTES`: 128 MiB, ~330 gzipped overviews of the 2.4M-event
capture), counting each entry's body, its key (every string, tuple and number in it, as
`sys.getsizeof` sees them) and a fixed overhead; least recently used documents go first, and
one larger than the bound is not kept.
Only views whose document is a function of their files and parameters alone are kept
(`View.keeps_documents`: not the trace viewer, whose windows depend on the memory bound).
"""

from __future__ import annotations

import collections
import dataclasses
import gzip
import hashlib
import json
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

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
#: What one entry costs beyond its body and key (entry object, dictionary and set slots).
_ENTRY_OVERHEAD_BYTES = 512
#: Parameter text (names and values) beyond this is kept in a key as its SHA-256.
MAX_PARAMS_KEY_BYTES = 1024
#: Read sets remembered per view (a view reads a fixed few names; more is not expected).
READ_SETS_PER_VIEW = 16
#: The mark of a key whose view read every parameter (iterated them).
_ALL_PARAMS = ("\x00all", "")

#: (path, *fs.Identity) of one host file: the path first, then what tells its versions apart.
FileIdentity = tuple[Any, ...]
#: The names of parameters a build read, or None: it read all of them (iterated them).
Reads = frozenset[str] | None


@dataclass(frozen=True)
class DocumentKey:
    """What a document depends on: the view (and its version), where, the query parameters
    it read (`params_key`), and the identity of every host file it reads."""

    view: str
    version: int
    run: str
    host: str
    params: tuple[tuple[str, str | None], ...]
    files: tuple[FileIdentity, ...]


class RecordingParams(Mapping[str, str]):
    """The query parameters as a view sees them, noting which names it looks up (`reads`)."""

    def __init__(self, params: Mapping[str, str]) -> None:
        self._params = dict(params)
        self._read: set[str] = set()
        self._all = False

    def __getitem__(self, name: str) -> str:
        self._read.add(name)
        return self._params[name]

    def __iter__(self) -> Iterator[str]:
        self._all = True
        return iter(self._params)

    def __len__(self) -> int:
        self._all = True
        return len(self._params)

    def __reduce__(self) -> tuple[Any, ...]:  # sent to another process: it may read anything
        self._all = True
        return (dict, (self._params,))

    def reads(self) -> Reads:
        """The names looked up so far; None when the view listed them all."""
        return None if self._all else frozenset(self._read)


def params_key(params: Mapping[str, str], reads: Reads) -> tuple[tuple[str, str | None], ...]:
    """The key's parameters: those `reads` names (with None for an absent one), or all of them
    when `reads` is None; their SHA-256 when longer than MAX_PARAMS_KEY_BYTES."""
    if reads is None:
        items: list[tuple[str, str | None]] = [_ALL_PARAMS, *sorted(params.items())]
    else:
        items = sorted(((name, params.get(name)) for name in reads), key=lambda kv: kv[0])
    if sum(len(k) + len(v or "") for k, v in items) <= MAX_PARAMS_KEY_BYTES:
        return tuple(items)
    digest = hashlib.sha256(json.dumps(items).encode("utf-8", "surrogatepass")).hexdigest()
    return (("\x00sha256", digest),)


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


def _size(value: object) -> int:
    """`sys.getsizeof` of `value` and of everything in it (tuples of strings and numbers)."""
    if isinstance(value, tuple):
        return sys.getsizeof(value) + sum(_size(item) for item in value)
    return sys.getsizeof(value)


def key_bytes(key: DocumentKey) -> int:
    """What `key` holds in memory: the key object and every field in it."""
    return sys.getsizeof(key) + sum(_size(getattr(key, f.name))
                                    for f in dataclasses.fields(key))


def _entry_bytes(key: DocumentKey, encoded: Encoded) -> int:
    return sys.getsizeof(encoded.body) + _ENTRY_OVERHEAD_BYTES + key_bytes(key)


class DocumentCache:
    """Encoded documents by `DocumentKey`, LRU, bounded in bytes; safe across threads."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = document_cache_bytes() if max_bytes is None else max_bytes
        self._entries: collections.OrderedDict[DocumentKey, Encoded] = collections.OrderedDict()
        self._bytes = 0
        #: The newest identity seen of each file, and the keys that read it.
        self._identity: dict[str, tuple[Any, ...]] = {}
        self._keys_of: dict[str, set[DocumentKey]] = {}
        #: The parameter names each view's builds read (`find` looks a query up under each).
        self._read_sets: dict[tuple[str, int], list[Reads]] = {}
        self._lock = threading.Lock()
        #: Answers served from the cache, and documents kept (tests and the bench read them).
        self.hits = 0
        self.stores = 0

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def find(self, place: DocumentKey, params: Mapping[str, str]) -> Encoded | None:
        """The document kept for `place` (a key whose `params` are ignored) and a query of
        `params`: looked up under every read set its view's builds had."""
        with self._lock:
            read_sets = list(self._read_sets.get((place.view, place.version), ()))
        for reads in read_sets:
            encoded = self.get(dataclasses.replace(place, params=params_key(params, reads)))
            if encoded is not None:
                return encoded
        return None

    def keep(self, place: DocumentKey, params: Mapping[str, str], reads: Reads,
             encoded: Encoded) -> None:
        """Keeps the document built for `place` from `params`, of which it read `reads`."""
        if reads is not None and sum(map(len, reads)) > MAX_PARAMS_KEY_BYTES:
            reads = None  # names that long are not a view's own: key by the whole query
        with self._lock:
            known = self._read_sets.setdefault((place.view, place.version), [])
            if reads not in known:
                if len(known) >= READ_SETS_PER_VIEW:
                    return  # `find` would never look there
                known.append(reads)
        self.put(dataclasses.replace(place, params=params_key(params, reads)), encoded)

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
            for file in key.files:
                self._keys_of.setdefault(file[0], set()).add(key)
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _forget_stale(self, files: tuple[FileIdentity, ...], record: bool) -> None:
        """Drops the documents that read another identity of one of `files` (the file
        changed: they can never be asked for again); with `record`, `files` become the
        identities kept documents read."""
        for path, *identity in files:
            seen = self._identity.get(path)
            if seen is not None and seen != tuple(identity):
                for key in list(self._keys_of.get(path, ())):
                    self._drop(key)
            if record:
                self._identity[path] = tuple(identity)

    def _drop(self, key: DocumentKey) -> None:
        encoded = self._entries.pop(key)
        self._bytes -= _entry_bytes(key, encoded)
        for file in key.files:
            path = file[0]
            keys = self._keys_of.get(path)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._keys_of[path]
                    self._identity.pop(path, None)
