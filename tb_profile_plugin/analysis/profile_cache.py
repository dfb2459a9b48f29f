"""Results computed once per decoded profile, shared by every analysis that needs them.

`per_profile(build)` memoises `build(profile)` for as long as the profile lives (the store
keeps decoded profiles, so a second request for a view of the same file is served from
memory); concurrent first callers wait for one build. The result must not hold the profile,
or the profile would never be freed.

`profile_forest(profile)` is the event table of all the profile's events and its event forest
(`forest.table`), which the host analysis, the memory profile and the tf.data analysis all
start from. It holds the profile and per-event columns several times its size, so only the
last `FOREST_ENTRIES` are kept: enough for the views of the host being looked at.
"""

from __future__ import annotations

import collections
import functools
import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

from tb_profile_plugin.analysis.events import build_event_table
from tb_profile_plugin.analysis.forest import Forest, build_forest
from tb_profile_plugin.xspace.model import Profile

T = TypeVar("T")
FOREST_ENTRIES = 2


def per_profile(build: Callable[[Profile], T]) -> Callable[[Profile], T]:
    """`build`, memoised per decoded profile (by identity, dropped when the profile is freed)."""
    cache: dict[int, T] = {}
    building: dict[int, threading.Lock] = {}
    lock = threading.Lock()

    @functools.wraps(build)
    def cached(profile: Profile) -> T:
        key = id(profile)
        with lock:
            if key in cache:
                return cache[key]
            build_lock = building.setdefault(key, threading.Lock())
        with build_lock:  # concurrent first callers wait for one build
            try:
                with lock:
                    if key in cache:
                        return cache[key]
                result = build(profile)
                with lock:
                    cache[key] = result
                    weakref.finalize(profile, cache.pop, key, None)
                return result
            finally:
                with lock:
                    building.pop(key, None)

    return cached


_forests: collections.OrderedDict[int, Forest] = collections.OrderedDict()
_forest_lock = threading.Lock()
_forest_builds: dict[int, threading.Lock] = {}


def profile_forest(profile: Profile) -> Forest:
    """The event forest over every event of `profile` (its table is `forest.table`)."""
    key = id(profile)  # an entry holds its profile, so the id is not reused while it is here
    with _forest_lock:
        forest = _forests.get(key)
        if forest is not None:
            _forests.move_to_end(key)
            return forest
        build_lock = _forest_builds.setdefault(key, threading.Lock())
    with build_lock:  # concurrent first callers wait for one build
        try:
            with _forest_lock:
                forest = _forests.get(key)
            if forest is None:
                forest = build_forest(build_event_table(profile))
                with _forest_lock:
                    _forests[key] = forest
                    while len(_forests) > FOREST_ENTRIES:
                        _forests.popitem(last=False)
            return forest
        finally:
            with _forest_lock:
                _forest_builds.pop(key, None)
