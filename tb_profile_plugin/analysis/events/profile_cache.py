"""Results computed once per decoded profile, kept with the profile and counted.

`per_profile(build)` memoises `build(profile)` in the profile itself (`Profile.derived`), so a
result lives exactly as long as its profile: nothing global holds it, and a result that holds
its profile (the trace index does) forms a cycle the store breaks when it drops the profile
(`Derived.clear`). Concurrent first callers wait for one build. The bytes of every result
(numpy arrays and strings reachable from it, the profile's own columns excepted) are added to
`profile.derived.nbytes`, which the store counts in its memory bound (xspace/store.py): a
profile whose views are built weighs what it really holds.

`profile_nested(profile)` is the event table of all the profile's events and their nesting
(what the op tables need); `profile_forest(profile)` the event forest built on them
(`forest.table`), which the host analysis, the trace, the memory profile and the tf.data
analysis start from.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import TypeVar, cast

from tb_profile_plugin.analysis.events.forest import Forest, build_forest
from tb_profile_plugin.analysis.events.nesting import Nesting, compute_nesting
from tb_profile_plugin.analysis.events.table import EventTable, build_event_table
from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.xspace.model import Profile

T = TypeVar("T")

_lock = threading.Lock()
_building: dict[tuple[int, str], threading.Lock] = {}
_depth = threading.local()  # per_profile builds running in this thread, nested
#: Per thread: the (profile id, name) keys of its `per_profile` builds running (`keys`), and
#: the names its builds added while `recording_builds` runs (`made`).
_thread = threading.local()


def release_scratch(profile: Profile) -> None:
    """Drops the event table's scratch columns (`EventTable.release_scratch`) once no build
    of this thread needs them: results keep what they computed, not the stat and canonical
    columns they read (~130 of ~220 bytes per event after the overview); or within a build
    whose remaining work reads none of them (the trace index's assembly). A later reader
    builds them again."""
    nested = profile.derived.results.get(_NESTED)
    if isinstance(nested, Nested):
        nested.table.release_scratch()


def within_build(call: Callable[[], T]) -> T:
    """`call()` as part of a larger build: its outermost `per_profile` build does not release
    the scratch columns; the larger build releases them at its end (`release_scratch`). For a
    build running on another thread (column_threads.beside), whose scratch columns the other
    thread's build is reading, and for several builds in a row that read the same ones
    (trace/derived.py `prepare`: the executions' canonical columns are the tracks')."""
    _depth.value = getattr(_depth, "value", 0) + 1
    try:
        return call()
    finally:
        _depth.value -= 1


def _own_keys() -> list[tuple[int, str]]:
    keys: list[tuple[int, str]] | None = getattr(_thread, "keys", None)
    if keys is None:
        keys = _thread.keys = []
    return keys


@contextlib.contextmanager
def recording_builds() -> Iterator[list[str]]:
    """The names of the results this thread's `per_profile` builds add meanwhile (not those
    another thread built, nor those found built), for `forget_made`."""
    outer = getattr(_thread, "made", None)
    made: list[str] = []
    _thread.made = made
    try:
        yield made
    finally:
        _thread.made = outer
        if outer is not None:
            outer.extend(made)


def forget_made(profile: Profile, names: Collection[str]) -> None:
    """Drops the results `names` of `profile` (what this thread's builds made,
    `recording_builds`), counted once; a later call builds them again. While another thread
    is building a result of the same profile they are kept instead (that build may read them
    next, and would make them again beside the ones it holds)."""
    mine = set(_own_keys())
    with _lock:
        if not any(key[0] == id(profile) and key not in mine for key in _building):
            profile.derived.drop(*names)


def _name_of(build: Callable[..., object]) -> str:
    return f"{build.__module__}.{build.__qualname__}"


def built(profile: Profile, cached: Callable[[Profile], T]) -> T | None:
    """What `cached` (a `per_profile` function) already built for `profile`, else None;
    builds nothing."""
    name = _name_of(cached.__wrapped__)  # type: ignore[attr-defined]
    with _lock:
        return cast("T | None", profile.derived.results.get(name))


def forget(profile: Profile, cached: Callable[[Profile], object]) -> None:
    """Drops what `cached` built for `profile` (and its bytes from the count); a later call
    builds it again."""
    name = _name_of(cached.__wrapped__)  # type: ignore[attr-defined]
    with _lock:
        profile.derived.drop(name)


def per_profile(build: Callable[[Profile], T]) -> Callable[[Profile], T]:
    """`build`, memoised in the profile (see the module docstring)."""
    name = _name_of(build)

    @functools.wraps(build)
    def cached(profile: Profile) -> T:
        derived = profile.derived
        with _lock:
            if name in derived.results:
                return cast(T, derived.results[name])
            key = (id(profile), name)
            build_lock = _building.setdefault(key, threading.Lock())
        with build_lock:  # concurrent first callers wait for one build
            try:
                with _lock:
                    if name in derived.results:
                        return cast(T, derived.results[name])
                checkpoint()  # a request past its time or left by its client stops here
                _depth.value = getattr(_depth, "value", 0) + 1
                own = _own_keys()
                own.append(key)
                try:
                    result = build(profile)  # kept below even if the request stops next
                finally:
                    _depth.value -= 1
                    own.pop()
                if _depth.value == 0:  # the outermost build: its scratch columns go
                    release_scratch(profile)
                with _lock:
                    derived.add(name, result)  # measured with the others: shared parts once
                    notify = derived.on_grow
                made = getattr(_thread, "made", None)
                if made is not None:
                    made.append(name)
                if notify is not None:
                    notify()  # the store keeping the profile counts it now
                return result
            finally:
                with _lock:
                    _building.pop(key, None)

    return cached


@dataclass(frozen=True)
class Nested:
    """Every event of a profile and their nesting on their lines: what op tables need (no
    steps), and what the forest starts from."""

    table: EventTable
    nesting: Nesting


def _build_nested(profile: Profile) -> Nested:
    table = build_event_table(profile)
    return Nested(table, compute_nesting(table.start_ps, table.end_ps, table.line_bounds))


#: The event table and nesting of `profile`.
profile_nested = per_profile(_build_nested)
_NESTED = _name_of(_build_nested)


def _build_forest(profile: Profile) -> Forest:
    nested = profile_nested(profile)
    return build_forest(nested.table, nested.nesting)


#: The event forest over every event of `profile` (its table is `forest.table`).
profile_forest = per_profile(_build_forest)
