"""A line's columns read on first use: the model's own classes, whose fields come from a part.

Two kinds of profile give their lines columns that are not there yet: one reopened from the
disk cache (cache/lazy.py: each line's events and stats read from the entry when first used)
and one decoded events first (xspace/stats_later.py: every line's stats walked from the file
when any is first used). Both hand out objects of `LazyEventColumns` / `LazyStatColumns`: an
`EventColumns` or `StatColumns` (isinstance holds, every reader works unchanged) whose missing
field asks its `Part` to `materialise` it; the part gives the object its fields (`adopt`), and
from then on they are plain attributes, read at full speed.

While a part is unread, `len` is the part's `length` where it knows it without reading (the
cache's array table), else the part is read first; `nbytes` is the part's own count (what the
store's memory bound counts: the whole entry's arrays for the cache, nothing yet for stats not
walked).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import numpy as np

from tb_profile_plugin.xspace import model


class Part(Protocol):
    """Where a lazy object's fields come from."""

    done: bool

    @property
    def length(self) -> int | None:
        """The object's length when known without reading it; None: read it to know."""

    @property
    def nbytes(self) -> int:
        """The bytes the object counts while unread."""

    def materialise(self, obj: Any, base: type) -> None:
        """Gives `obj` its fields (`adopt`), or raises; returns once they are set."""


def adopt(obj: Any, plain: Any, base: type) -> None:
    """Gives the lazy `obj` the fields of `plain`, an object of its model class `base`."""
    for f in dataclasses.fields(base):
        object.__setattr__(obj, f.name, getattr(plain, f.name))


class LazyColumns:
    """Mixin of the lazy model classes (module docstring)."""

    field_names: tuple[str, ...] = ()
    _base: type = object

    def __getattr__(self, name: str) -> Any:
        part = self.__dict__.get("_part")
        if part is None or name not in self.field_names:
            raise AttributeError(name)
        part.materialise(self, self._base)
        return self.__dict__[name]

    def _unread(self) -> Part | None:
        part: Part | None = self.__dict__.get("_part")
        return part if part is not None and not part.done else None

    def __len__(self) -> int:
        part = self._unread()
        if part is not None:
            if part.length is not None:
                return part.length
            part.materialise(self, self._base)
        length: int = self._base.__len__(self)  # type: ignore[attr-defined]
        return length

    @property
    def nbytes(self) -> int:
        part = self._unread()
        if part is not None:
            return part.nbytes
        nbytes: int = self._base.nbytes.fget(self)  # type: ignore[attr-defined]
        return nbytes

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the plain model class (read first)."""
        return (self._base, tuple(getattr(self, name) for name in self.field_names))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, self._base):
            return NotImplemented
        return all(_same(getattr(self, n), getattr(other, n)) for n in self.field_names)

    __hash__ = None  # type: ignore[assignment]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return bool(a == b)


class LazyEventColumns(LazyColumns, model.EventColumns):
    field_names = tuple(f.name for f in dataclasses.fields(model.EventColumns))
    _base = model.EventColumns


class LazyStatColumns(LazyColumns, model.StatColumns):
    field_names = tuple(f.name for f in dataclasses.fields(model.StatColumns))
    _base = model.StatColumns


def lazy(cls: type[LazyColumns], part: Part) -> Any:
    """An object of the lazy class `cls` whose fields `part` gives on first use."""
    obj = object.__new__(cls)
    object.__setattr__(obj, "_part", part)
    return obj

