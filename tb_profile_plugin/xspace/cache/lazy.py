"""A profile from the disk cache whose lines' events and stats are read when first used.

Reopening a big profile from the disk cache (cache/lookup.py) used to read its whole entry
(0.6 GB at 20M events) before anything could be answered; the trace viewer's first window,
when the trace index is cached too (trace/index_cache.py), needs none of the lines' columns.
`load_lazily` therefore builds the profile from the entry's header and its small arrays
(planes, metadata tables, plane stats: kilobytes), and gives each line an `events` and a
`stats` object of the model's own classes (xspace/lazy_columns.py) whose fields are read from
the entry, and checked against their word sums, on first access. Their length and `nbytes`
come from the entry's array table without reading anything (the store's memory bound counts
them whole).

A part whose bytes no longer match their sums (damaged since the entry was opened, or the file
truncated: the cache removes the entry, `entry.DamagedEntry`), or whose columns do not fit
together (`tree._check`), is taken from a fresh decode of the source file instead
(`fallback`, from the store: decoded once per entry, and the entry written again), so a damaged
entry is still never trusted and never fails a request; the decoded part must have the lengths
the entry said (else the source changed too: `UnreadableProfile`). The decode then gives every
part not read yet its own columns at once, and is not kept otherwise (the parts read already
keep what they read: checked, equal, and maybe shared with an analysis' table): the profile
holds one copy of its columns, the one its `nbytes` counts (issue 30: the decoded profile was
kept whole beside the parts already read, +560 MB that no bound counted).

Small entries (under `lookup.LAZY_MIN_BYTES`) are read and checked whole, as `lookup.load` does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace import lazy_columns, model
from tb_profile_plugin.xspace.cache import lookup
from tb_profile_plugin.xspace.cache import tree as profile_tree
from tb_profile_plugin.xspace.cache.entry import EntryArrays

logger = logging.getLogger(__name__)

#: The fields of a Line read lazily.
_LAZY_FIELDS = ("events", "stats")


def load_lazily(key: str, directory: Path | None = None,
                fallback: Callable[[], model.Profile] | None = None) -> model.Profile | None:
    """The cached profile for `key` with its lines' columns read on first use, or None on a
    miss (as `lookup.load`). `fallback` decodes the source file again (module docstring)."""
    return lookup.load_entry_lazily(
        key, ".tbpc", lambda header, arrays: _profile_of(header, arrays, fallback), directory)


def _profile_of(header: dict[str, Any], arrays: EntryArrays,
                fallback: Callable[[], model.Profile] | None) -> model.Profile:
    if not arrays.lazy:
        return profile_tree._profile_of(header, arrays.all())
    entry = _Entry(arrays, fallback)

    def line(fields: dict[str, Any], where: tuple[Any, ...]) -> model.Line:
        """A line whose events and stats are read on first use (its other fields now)."""
        values = {k: profile_tree._unflatten(v, entry.array, (*where, k), special) for k, v in
                  fields.items() if k not in _LAZY_FIELDS}
        events = _part(fields["events"], entry, (*where, "events"), None)
        stats = _part(fields["stats"], entry, (*where, "stats"), len(events))
        return model.Line(events=events, stats=stats, **values)

    special: dict[type, profile_tree.Special] = {model.Line: line}
    # the parts are checked when they are read
    return profile_tree.profile_from(
        header, lambda tree: profile_tree._unflatten(tree, entry.array, (), special))


class _Entry:
    """What the lazy parts of one profile share: the entry's arrays, the fallback, and the
    parts (to replace them all from one decode)."""

    def __init__(self, arrays: EntryArrays,
                 fallback: Callable[[], model.Profile] | None) -> None:
        self.arrays = arrays
        self._fallback = fallback
        #: Every lazy part of the profile and its object, until the source replaced them.
        self.parts: list[tuple[Any, _Part]] = []
        self._replaced = False
        self._lock = threading.Lock()

    def array(self, ref: Any) -> np.ndarray:
        return self.arrays.get(profile_tree._array_index(ref, len(self.arrays)))

    def replace_from_source(self, cause: Exception) -> None:
        """Decodes the source again (once) and gives every part not read yet the decoded
        columns; nothing keeps the decoded profile (module docstring). Raises
        UnreadableProfile when the decode does not fit the entry. Called with no part's lock
        held (it takes each)."""
        with self._lock:
            if self._replaced:
                return
            if self._fallback is None:
                raise UnreadableProfile("the profile's cache entry is damaged") from cause
            decoded: Any = self._fallback()
            plains = [(obj, part, _at(decoded, part.where)) for obj, part in self.parts]
            del decoded  # only its parts stay, each in one lazy object
            for _, part, plain in plains:
                if not isinstance(plain, part.base) or len(plain) != part.length:  # type: ignore[arg-type]
                    raise UnreadableProfile(
                        "the profile file changed while it was read; reload") from cause
            for obj, part, plain in plains:
                with part.lock:
                    if not part.done:  # a part read already keeps its (checked) columns
                        part.adopt(obj, plain)
            self._replaced = True
            self.parts = []


def _at(node: Any, where: tuple[Any, ...]) -> Any:
    """The part at `where` (a path of fields and list positions from the profile)."""
    try:
        for step in where:
            node = node[step] if isinstance(step, int) else getattr(node, step)
    except (IndexError, AttributeError) as exc:
        raise UnreadableProfile("the profile file changed while it was read; reload") from exc
    return node


def _part(tree: Any, entry: _Entry, where: tuple[Any, ...], num_rows: int | None) -> Any:
    """A lazy EventColumns or StatColumns (`num_rows`: the line's events, for its stats)."""
    kind = tree.get("@t") if isinstance(tree, dict) else None
    lazy_class = _LAZY_CLASSES.get(kind)  # type: ignore[arg-type]
    if lazy_class is None:
        raise ValueError(f"a line's {where[-1]} is a {kind!r}")
    refs: dict[str, int | None] = {}
    for name, ref in tree["f"].items():
        if name not in lazy_class.field_names:
            raise ValueError(f"{kind}.{name} is not a field")
        refs[name] = None if ref is None else profile_tree._array_index(ref, len(entry.arrays))
    if set(refs) != set(lazy_class.field_names):
        raise ValueError(f"{kind} misses fields")
    for index in refs.values():
        if index is not None and len(entry.arrays.shape(index)) != 1:
            raise ValueError(f"{kind} column is not one-dimensional")
    lengths = {entry.arrays.shape(i)[0] for n in profile_tree._SAME_LENGTH[lazy_class._base]
               if (i := refs.get(n)) is not None}
    if len(lengths) > 1:
        raise ValueError(f"{kind} columns of different lengths {sorted(lengths)}")
    part = _Part(entry, where, refs, lengths.pop() if lengths else 0, num_rows,
                 lazy_class._base)
    obj = lazy_columns.lazy(lazy_class, part)
    entry.parts.append((obj, part))
    return obj


class _Part:
    """One lazy EventColumns or StatColumns: where its arrays are, read once."""

    def __init__(self, entry: _Entry, where: tuple[Any, ...], refs: dict[str, int | None],
                 length: int, num_rows: int | None, base: type) -> None:
        self.entry, self.where, self.refs = entry, where, refs
        self.length, self.num_rows = length, num_rows
        self.base = base
        self.done = False
        self.lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return sum(self.entry.arrays.nbytes(i) for i in self.refs.values() if i is not None)

    def materialise(self, obj: Any, base: type) -> None:
        with self.lock:
            if self.done:
                return
            try:
                plain = base(**{name: None if i is None else self.entry.arrays.get(i)
                                for name, i in self.refs.items()})
                profile_tree._check(plain)
                if self.num_rows is not None:
                    profile_tree._check_rows(plain, self.num_rows)
            except ValueError as exc:  # DamagedEntry, or columns that do not fit
                logger.warning("profile cache: %s of line %s read from the source instead: %s",
                               self.where[-1], self.where[1:-1], exc)
                damaged = exc
            else:
                self.adopt(obj, plain)
                return
        # Outside this part's lock: the replacement takes every part's lock in turn.
        self.entry.replace_from_source(damaged)
        if not self.done:  # pragma: no cover - replace_from_source adopts every part
            raise UnreadableProfile("the profile file changed while it was read; reload")

    def adopt(self, obj: Any, plain: Any) -> None:
        """Gives the lazy `obj` the columns of `plain` (the caller holds `lock`)."""
        lazy_columns.adopt(obj, plain, self.base)
        self.done = True


_LAZY_CLASSES: dict[str, type[lazy_columns.LazyColumns]] = {
    "EventColumns": lazy_columns.LazyEventColumns, "StatColumns": lazy_columns.LazyStatColumns}


#: Whether `obj` is a lazy part not read yet (tree._check leaves it for its first use).
is_unread = model.is_unread
