"""The document cache's keys are counted in its bound, hold no more than MAX_PARAMS_KEY_BYTES of
a query, and hold only the parameters the view read (issue 30, item 2)."""

from __future__ import annotations

import pickle
import random
import sys

from tb_profile_plugin.document_cache import (
    MAX_PARAMS_KEY_BYTES,
    DocumentCache,
    DocumentKey,
    Encoded,
    RecordingParams,
    key_bytes,
    params_key,
)

BODY = Encoded.of(random.Random(0).randbytes(2_000))  # gzip cannot shrink it
PLACE = DocumentKey("overview_page", 1, "run", "h", (), (("/r/h.xplane.pb", 100, 1, 7, 9, "f"),))
BIG = 53_000  # the parameter bytes per request


def _junk(seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    return {f"p{i}": rng.randbytes(BIG // 8).hex()[: BIG // 4] for i in range(4)}


def _deep_size(value: object) -> int:
    if isinstance(value, tuple):
        return sys.getsizeof(value) + sum(_deep_size(v) for v in value)
    if isinstance(value, DocumentKey):
        return sys.getsizeof(value) + sum(_deep_size(getattr(value, f)) for f in (
            "view", "version", "run", "host", "params", "files"))
    return sys.getsizeof(value)


def test_views_that_read_every_parameter_stay_within_the_bound() -> None:
    cache = DocumentCache(max_bytes=1 << 20)
    for seed in range(2_000):
        params = _junk(seed)
        assert sum(len(k) + len(v) for k, v in params.items()) >= BIG
        cache.keep(PLACE, params, None, BODY)  # None: the view listed its parameters
    keys = list(cache._entries)
    real = sum(_deep_size(k) + sys.getsizeof(cache._entries[k].body) for k in keys)
    assert cache.cached_bytes <= cache.max_bytes and real <= cache.cached_bytes
    assert all(_deep_size(k) < 2 * MAX_PARAMS_KEY_BYTES for k in keys)
    assert cache.find(PLACE, _junk(1_999)) == BODY  # the newest is kept, found by its hash
    assert cache.find(PLACE, _junk(5_000)) is None


def test_the_key_counts_in_the_entry() -> None:
    small = DocumentKey("v", 1, "r", "h", (("a", "1"),), ())
    large = DocumentKey("v", 1, "r" * 10_000, "h", (("a", "1"),), ())
    assert key_bytes(large) - key_bytes(small) >= 9_990
    cache = DocumentCache(max_bytes=10**6)
    cache.put(small, BODY)
    cache.put(large, BODY)
    assert cache.cached_bytes >= 2 * len(BODY.body) + key_bytes(small) + key_bytes(large)


def test_parameters_a_view_ignores_make_no_entries() -> None:
    cache = DocumentCache(max_bytes=1 << 30)
    for seed in range(200):
        params = {"step_count": "5", **_junk(seed)}
        assert cache.find(PLACE, params) is None if seed == 0 else cache.find(PLACE, params)
        recording = RecordingParams(params)
        recording.get("step_count")
        recording.get("step_start")  # absent: absence is part of the key
        if seed == 0:
            cache.keep(PLACE, params, recording.reads(), BODY)
    assert len(cache) == 1 and cache.hits == 199
    assert cache.find(PLACE, {"step_count": "6"}) is None
    assert cache.find(PLACE, {"step_count": "5", "step_start": "1"}) is None
    assert cache.find(PLACE, {"step_count": "5", "unrelated": "x"}) == BODY


def test_recording_params() -> None:
    params = RecordingParams({"a": "1", "b": "2"})
    assert params.get("a") == "1" and "c" not in params and params.get("d", "x") == "x"
    assert params.reads() == frozenset({"a", "c", "d"})
    assert dict(params) == {"a": "1", "b": "2"} and params.reads() is None  # listed: all
    sent = RecordingParams({"a": "1"})
    assert pickle.loads(pickle.dumps(sent)) == {"a": "1"} and sent.reads() is None


def test_params_key() -> None:
    assert params_key({"a": "1", "z": "2"}, frozenset({"a", "b"})) == (("a", "1"), ("b", None))
    assert params_key({"a": "1"}, None) != params_key({"a": "1"}, frozenset({"a"}))
    hashed = params_key({"a": "x" * 5_000}, None)
    assert len(hashed) == 1 and sys.getsizeof(hashed[0][1]) < 200
    assert hashed != params_key({"a": "x" * 4_999 + "y"}, None)
