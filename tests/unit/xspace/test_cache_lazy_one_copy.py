"""A lazily read cache entry found damaged (issue 30, item 8b): the profile decoded again
gives the parts not read yet their columns and is not kept beside them; the profile holds one
copy of every line's columns, the one its `nbytes` counts."""

from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.cache import lazy as cache_lazy
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.store import ProfileStore
from tests.unit.xspace.test_cache_lazy import (  # noqa: F401  (lazy_cache: a fixture)
    CAPTURE,
    _biggest_array,
    _docs,
    _parts,
    _written,
    lazy_cache,
)


def _arrays(part: Any) -> list[np.ndarray]:
    return [a for a in vars(part).values() if isinstance(a, np.ndarray)]


def test_after_the_fallback_the_profile_holds_one_copy(
    lazy_cache: Path, monkeypatch: Any  # noqa: F811
) -> None:
    expected, entry = _written(lazy_cache)
    _, offset, size = _biggest_array(entry)
    decoded: list[weakref.ref[Profile]] = []
    decode = ProfileStore._decode

    def tracked(self: ProfileStore, path: str, key: str) -> Profile:
        profile = decode(self, path, key)
        decoded.append(weakref.ref(profile))
        return profile

    monkeypatch.setattr(ProfileStore, "_decode", tracked)
    store = ProfileStore()
    profile = store.open(str(CAPTURE))
    assert profile.decoder == "cache"
    parts = _parts(profile)
    before = next(p for p in parts[::2] if len(p))
    read_before = before.start_ps.copy()  # read from the entry before the damage
    os.truncate(entry, offset + size // 2)
    assert _docs(store) == expected
    assert store.decode_count == 1 and len(decoded) == 1  # the damaged part: from the file
    cache.flush()  # the entry written again lets go of the decoded profile
    gc.collect()
    assert decoded[0]() is None  # not kept beside the lazy profile's parts
    assert not any(cache_lazy.is_unread(p) for p in parts)
    assert np.array_equal(before.start_ps, read_before)
    arrays = {id(a): a for p in parts for a in _arrays(p)}
    assert profile.nbytes >= sum(a.nbytes for a in arrays.values())
    again = store.open(str(CAPTURE))
    assert again is profile and store.decode_count == 1
