"""A profile as a cache entry's JSON tree and arrays, and back, with the checks on load.

`_flatten` turns the profile's dataclasses into a small JSON tree in which every numpy array is
a reference `{"@a": index}` into a list of arrays (the entry's header and data, cache/entry.py);
`_unflatten` makes the objects again, of the model's own classes only (`_TYPES`: nothing is
unpickled). `_check` then checks that the loaded columns fit together: equal row counts, string
offsets inside their blob, one child offset per metadata row and one more. A lazily read
profile's parts (cache/lazy.py) are checked when they are first read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tb_profile_plugin.xspace import model
from tb_profile_plugin.xspace.schema import FORMAT_VERSION, StatKind

_TYPES = {
    cls.__name__: cls
    for cls in (
        model.Profile, model.Plane, model.Line, model.EventColumns, model.StatColumns,
        model.EventMetadataTable, model.StatMetadataTable, model.StringTable,
    )
}


def _flatten(obj: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        arrays.append(obj)
        return {"@a": len(arrays) - 1}
    if dataclasses.is_dataclass(obj):
        return {  # (a lazy part, read by the fields' reads below, is its model class)
            "@t": getattr(obj, "_base", type(obj)).__name__,
            "f": {f.name: _flatten(getattr(obj, f.name), arrays) for f in dataclasses.fields(obj)},
        }
    if isinstance(obj, list):
        return [_flatten(item, arrays) for item in obj]
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    raise TypeError(f"cannot cache a {type(obj).__name__}")


#: Builds an object of one class from its fields' trees and its path (`_unflatten`'s
#: `special`: cache/lazy.py makes lines whose columns are read on first use).
Special = Callable[[dict[str, Any], tuple[Any, ...]], Any]


def _unflatten(tree: Any, array: Callable[[Any], np.ndarray], where: tuple[Any, ...] = (),
               special: Mapping[type, Special] | None = None) -> Any:
    """The object `_flatten` made `tree` of: `array(ref)` is the array of each `{"@a": i}`;
    `special[cls](fields, where)` builds the classes it names; `where` is the path of field
    names and list positions from the root."""
    if isinstance(tree, dict):
        if "@a" in tree:
            return array(tree)
        cls = _TYPES[tree["@t"]]
        fields = tree["f"]
        if special and cls in special:
            return special[cls](fields, where)
        return cls(**{k: _unflatten(v, array, (*where, k), special) for k, v in fields.items()})
    if isinstance(tree, list):
        return [_unflatten(item, array, (*where, k), special) for k, item in enumerate(tree)]
    return tree


def _array_index(ref: Any, count: int) -> int:
    """The position an array reference `{"@a": i}` names among `count` arrays."""
    index = ref.get("@a") if isinstance(ref, dict) else None
    if type(index) is not int or not 0 <= index < count:
        raise ValueError(f"array reference {index!r} out of range")
    return index


#: Per columnar type, the array fields that hold one entry per row (equal lengths).
_SAME_LENGTH = {
    model.EventColumns: ("metadata_id", "start_ps", "duration_ps", "num_occurrences"),
    model.StatColumns: ("row", "metadata_id", "kind", "value", "length"),
    model.StatMetadataTable: ("ids", "names", "descriptions"),
    model.EventMetadataTable: ("ids", "names", "display_names", "metadata"),
}


def _check(obj: Any) -> None:
    """Raises ValueError unless the loaded columns fit together (equal row counts, string
    offsets inside their blob, one child offset per metadata row and one more)."""
    if isinstance(obj, list):
        for item in obj:
            _check(item)
        return
    if not dataclasses.is_dataclass(obj) or model.is_unread(obj):
        return
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(f.type, str) and not _type_ok(value, f.type):
            raise ValueError(f"{type(obj).__name__}.{f.name} is not a {f.type}")
        if isinstance(value, np.ndarray) and value.ndim != 1:
            raise ValueError(f"{type(obj).__name__}.{f.name} is not one-dimensional")
        _check(value)
    lengths = {len(getattr(obj, name)) for name in _SAME_LENGTH.get(type(obj), ())
               if getattr(obj, name) is not None}
    if len(lengths) > 1:
        raise ValueError(f"{type(obj).__name__} columns of different lengths {sorted(lengths)}")
    if isinstance(obj, model.StringTable):
        offsets = obj.offsets
        if (len(offsets) == 0 or offsets[0] != 0 or np.any(np.diff(offsets) < 0)
                or offsets[-1] > len(obj.blob)):
            raise ValueError("string offsets outside their blob")
    if isinstance(obj, model.StatColumns):
        text = np.isin(obj.kind, (StatKind.STR, StatKind.BYTES))
        starts, ends = obj.value[text], obj.value[text] + obj.length[text]
        if np.any(starts < 0) or np.any(ends < starts) or np.any(ends > len(obj.strings)):
            raise ValueError("stat strings outside their blob")
    if isinstance(obj, model.EventMetadataTable):
        if len(obj.child_offsets) != len(obj.ids) + 1:
            raise ValueError("child offsets do not match the metadata rows")
        _check_rows(obj.stats, len(obj.ids))
    if isinstance(obj, model.Line) and not model.is_unread(obj.stats):
        _check_rows(obj.stats, len(obj.events))


def _type_ok(value: Any, annotation: str) -> bool:
    """Whether `value` has the field's declared type (`int`, `str`, `np.ndarray`, a model
    class, `list[...]` of them, `... | None`); other annotations are not checked."""
    if annotation.endswith(" | None"):
        if value is None:
            return True
        annotation = annotation.removesuffix(" | None")
    if annotation.startswith("list[") and annotation.endswith("]"):
        return isinstance(value, list) and all(_type_ok(v, annotation[5:-1]) for v in value)
    expected = {"int": int, "str": str, "np.ndarray": np.ndarray}.get(annotation) or _TYPES.get(
        annotation)
    return expected is None or (isinstance(value, expected) and not isinstance(value, bool))


def _check_rows(stats: model.StatColumns, num_rows: int) -> None:
    if len(stats.row) and (int(stats.row.min()) < 0 or int(stats.row.max()) >= num_rows):
        raise ValueError("stats of rows that do not exist")
    stats.check_dense(num_rows)


def _profile_entry(profile: model.Profile) -> tuple[dict[str, Any], list[np.ndarray]]:
    arrays: list[np.ndarray] = []
    tree = _flatten(dataclasses.replace(profile, decoder="cache"), arrays)
    return {"version": FORMAT_VERSION, "tree": tree}, arrays


def _profile_of(header: dict[str, Any], arrays: list[np.ndarray]) -> model.Profile:
    return profile_from(header, lambda tree: _unflatten(
        tree, lambda ref: arrays[_array_index(ref, len(arrays))]))


def profile_from(header: dict[str, Any], unflatten: Callable[[Any], Any]) -> model.Profile:
    """The profile `unflatten` makes of the entry's tree (all arrays read: `_profile_of`; the
    lines' columns on first use: cache/lazy.py), its version and columns checked."""
    if header.get("version") != FORMAT_VERSION:
        raise ValueError(f"format version {header.get('version')!r}")
    profile = unflatten(header["tree"])
    if not isinstance(profile, model.Profile):
        raise ValueError(f"the entry holds a {type(profile).__name__}, not a Profile")
    _check(profile)
    return profile
