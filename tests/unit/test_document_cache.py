"""DocumentCache: bounded in bytes, least recently used dropped first, a document of a file's
older identity dropped as soon as the newer one is seen, encodings exact."""

from __future__ import annotations

import gzip
import random

import pytest

from tb_profile_plugin import document_cache
from tb_profile_plugin.document_cache import DocumentCache, DocumentKey, Encoded
from tb_profile_plugin.xspace import store

BODY = random.Random(0).randbytes(10_000)  # 10 kB that gzip cannot shrink


def _key(view: str, path: str = "/r/h.xplane.pb", mtime_ns: int = 1) -> DocumentKey:
    return DocumentKey(view, 1, "run", "h", (), ((path, 100, mtime_ns),))


def test_least_recently_used_documents_go_first_within_the_bound() -> None:
    encoded = Encoded.of(BODY)
    one_entry = len(encoded.body) + 2048
    cache = DocumentCache(max_bytes=3 * one_entry)
    for view in ("a", "b", "c"):
        cache.put(_key(view), encoded)
    assert cache.get(_key("a")) == encoded  # a is now the most recently used
    cache.put(_key("d"), encoded)
    assert len(cache) == 3 and cache.cached_bytes <= cache.max_bytes
    assert cache.get(_key("b")) is None
    assert all(cache.get(_key(v)) == encoded for v in ("a", "c", "d"))


def test_a_document_larger_than_the_bound_is_not_kept() -> None:
    cache = DocumentCache(max_bytes=1000)
    cache.put(_key("a"), Encoded.of(BODY))
    assert len(cache) == 0 and cache.cached_bytes == 0 and cache.get(_key("a")) is None


def test_a_newer_identity_of_a_file_drops_the_documents_of_the_older() -> None:
    cache = DocumentCache(max_bytes=10**6)
    cache.put(_key("a"), Encoded.of(b"{}"))
    cache.put(_key("b"), Encoded.of(b"[]"))
    cache.put(_key("c", path="/r/other.xplane.pb"), Encoded.of(b"1"))
    assert cache.get(_key("a", mtime_ns=2)) is None
    assert len(cache) == 1 and cache.get(_key("c", path="/r/other.xplane.pb")) is not None
    assert cache.get(_key("a")) is None  # not kept under its old identity either
    only_c = DocumentCache(max_bytes=10**6)
    only_c.put(_key("c", path="/r/other.xplane.pb"), Encoded.of(b"1"))
    assert cache.cached_bytes == only_c.cached_bytes  # the dropped ones' bytes are gone


def test_encoded_bodies_are_what_the_plugin_sends() -> None:
    small, large = Encoded.of(b'{"a":1}'), Encoded.of(BODY)
    assert not small.gzipped and small.plain() == small.body == b'{"a":1}'
    assert large.gzipped and large.plain() == BODY
    assert large.body == gzip.compress(BODY, compresslevel=document_cache.GZIP_LEVEL, mtime=0)
    assert not Encoded.of(BODY, compress=False).gzipped


def test_the_default_bound_follows_the_memory_cache_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(document_cache.DOCUMENT_CACHE_ENV, raising=False)
    monkeypatch.setenv(store.MEMORY_CACHE_ENV, str(2**30))
    assert DocumentCache().max_bytes == 2**26
    monkeypatch.setenv(document_cache.DOCUMENT_CACHE_ENV, "12345")
    assert DocumentCache().max_bytes == 12345
