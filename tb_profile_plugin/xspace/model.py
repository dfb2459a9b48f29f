"""The columnar profile: an XSpace as planes -> lines -> numpy columns.

One `Profile` holds what one `<host>.xplane.pb` holds. Events of a line are parallel numpy
arrays (`EventColumns`); stats are kept sparse, one row per (event, stat) pair (`StatColumns`),
and turned into dense per-event columns on demand (`StatColumns.int_column`). Strings live in
`StringTable`s: one utf-8 blob plus offsets, so a whole profile is a handful of flat arrays
that the disk cache can write and map back without parsing.

Times: `EventColumns.start_ps` counts picoseconds from `Profile.origin_ns` (the earliest
`timestamp_ns` of any line with events), so starts on different lines and planes compare
directly and stay well inside int64. The file's own per-line `offset_ps` is
`start_ps - (line.timestamp_ns - profile.origin_ns) * 1000`.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tb_profile_plugin.xspace.schema import StatKind

_EMPTY_I64 = np.zeros(0, np.int64)


@dataclass(frozen=True)
class StringTable:
    """Strings stored as one utf-8 blob and `offsets` (len(table) + 1 entries)."""

    blob: np.ndarray  # uint8
    offsets: np.ndarray  # int64, non-decreasing, offsets[0] == 0

    @staticmethod
    def from_strings(values: list[str] | list[bytes]) -> StringTable:
        encoded = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
        offsets = np.zeros(len(encoded) + 1, np.int64)
        if encoded:
            np.cumsum([len(e) for e in encoded], out=offsets[1:])
        blob = np.frombuffer(b"".join(encoded), np.uint8)
        return StringTable(blob, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def raw(self, index: int) -> bytes:
        return self.blob[self.offsets[index] : self.offsets[index + 1]].tobytes()

    def __getitem__(self, index: int) -> str:
        return self.raw(index).decode("utf-8", errors="replace")

    def tolist(self) -> list[str]:
        data = self.blob.tobytes()
        bounds = self.offsets.tolist()
        return [
            data[bounds[i] : bounds[i + 1]].decode("utf-8", errors="replace")
            for i in range(len(bounds) - 1)
        ]

    @property
    def nbytes(self) -> int:
        return int(self.blob.nbytes + self.offsets.nbytes)


@dataclass(frozen=True)
class StatColumns:
    """Stats as rows: which event (`row`) carries which stat (`metadata_id`) with what value.

    `value` holds the raw 64 bits; `kind` says how to read them (see `StatKind`): a double's
    bits, an unsigned or signed integer, a `ref` (the id of an XStatMetadata whose name is the
    value), or, for str/bytes, the start of the value in `strings` with its `length`.
    Rows are in file order: by event, then by the order of the event's stats.
    """

    row: np.ndarray  # int32: event index in the line (metadata row; 0 for plane stats)
    metadata_id: np.ndarray  # int32 (int64 on a line whose stat ids do not all fit int32)
    kind: np.ndarray  # uint8
    value: np.ndarray  # int64 (raw bits)
    length: np.ndarray  # uint8, uint16 or int32 (the narrowest that holds the line's longest)
    strings: np.ndarray  # uint8 blob of str/bytes values

    @staticmethod
    def empty() -> StatColumns:
        return StatColumns(
            np.zeros(0, np.int32), _EMPTY_I64, np.zeros(0, np.uint8), _EMPTY_I64,
            np.zeros(0, np.int32), np.zeros(0, np.uint8),
        )

    def __len__(self) -> int:
        return len(self.row)

    @property
    def nbytes(self) -> int:
        return int(
            self.row.nbytes + self.metadata_id.nbytes + self.kind.nbytes + self.value.nbytes
            + self.length.nbytes + self.strings.nbytes
        )

    def rows_with(self, stat_id: int) -> np.ndarray:
        """Indices (into these stat rows) of every stat with this metadata id."""
        return np.flatnonzero(self.metadata_id == stat_id)

    def int_column(self, stat_id: int, num_rows: int, fill: int = -1) -> np.ndarray:
        """Dense int64 column of an integer-valued stat (uint64/int64/ref): `fill` where absent.

        When an event carries the stat twice, the last one wins (as protobuf's parser does).
        """
        out = np.full(num_rows, fill, np.int64)
        sel = self.rows_with(stat_id)
        out[self.row[sel]] = self.value[sel]
        return out

    def float_column(self, stat_id: int, num_rows: int) -> np.ndarray:
        """Dense float64 column of a numeric stat: NaN where absent; ints are converted."""
        out = np.full(num_rows, np.nan)
        sel = self.rows_with(stat_id)
        kinds = self.kind[sel]
        raw = self.value[sel]
        values = np.where(
            kinds == StatKind.DOUBLE, raw.view(np.float64),
            np.where(kinds == StatKind.UINT64, raw.view(np.uint64).astype(np.float64),
                     raw.astype(np.float64)),
        )
        out[self.row[sel]] = values
        return out

    def python_value(self, index: int, stat_names: StatMetadataTable | None = None) -> object:
        """The value of stat row `index` as a Python object (refs resolved through stat_names)."""
        kind = int(self.kind[index])
        raw = self.value[index]
        if kind == StatKind.DOUBLE:
            return float(raw.view(np.float64))
        if kind == StatKind.UINT64:
            return int(raw.view(np.uint64))
        if kind == StatKind.INT64:
            return int(raw)
        if kind == StatKind.REF:
            ref = int(raw.view(np.uint64))
            if stat_names is not None:
                name = stat_names.name_of(ref)
                return name if name is not None else ref
            return ref
        if kind in (StatKind.STR, StatKind.BYTES):
            data = self.strings[raw : raw + self.length[index]].tobytes()
            return data.decode("utf-8", errors="replace") if kind == StatKind.STR else data
        return None


@dataclass(frozen=True)
class StatMetadataTable:
    """XStatMetadata of a plane, sorted by id."""

    ids: np.ndarray  # int64, sorted
    names: StringTable
    descriptions: StringTable

    def name_of(self, stat_id: int) -> str | None:
        i = int(np.searchsorted(self.ids, stat_id))
        if i < len(self.ids) and self.ids[i] == stat_id:
            return self.names[i]
        return None

    def id_of(self, name: str) -> int | None:
        """The id of the stat called `name` (first one if the plane repeats a name)."""
        for i, candidate in enumerate(self.names.tolist()):
            if candidate == name:
                return int(self.ids[i])
        return None

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.names.nbytes + self.descriptions.nbytes)


@dataclass(frozen=True)
class EventMetadataTable:
    """XEventMetadata of a plane, sorted by id; `stats` rows index this table's rows."""

    ids: np.ndarray  # int64, sorted
    names: StringTable
    display_names: StringTable
    metadata: StringTable  # raw bytes of XEventMetadata.metadata
    stats: StatColumns
    child_offsets: np.ndarray  # int64, len(ids) + 1
    child_ids: np.ndarray  # int64

    def rows_of(self, metadata_ids: np.ndarray) -> np.ndarray:
        """Row of each metadata id in this table, -1 for ids the plane does not define."""
        n = len(self.ids)
        if n == 0:
            return np.full(len(metadata_ids), -1, np.int64)
        first, last = int(self.ids[0]), int(self.ids[-1])
        if 0 <= first and last <= len(metadata_ids):  # a table no longer than the query
            table = np.full(last + 2, -1, np.int64)  # the slot past `last`: ids not defined
            table[self.ids[::-1]] = np.arange(n - 1, -1, -1)  # a repeated id: its first row
            return table[np.clip(metadata_ids, -1, last + 1)]
        rows = np.searchsorted(self.ids, metadata_ids)
        rows = np.minimum(rows, n - 1)
        found = self.ids[rows] == metadata_ids
        return np.where(found, rows, -1)

    def display_name(self, row: int) -> str:
        return self.display_names[row] or self.names[row]

    @property
    def nbytes(self) -> int:
        return int(
            self.ids.nbytes + self.names.nbytes + self.display_names.nbytes
            + self.metadata.nbytes + self.stats.nbytes + self.child_offsets.nbytes
            + self.child_ids.nbytes
        )


@dataclass(frozen=True)
class EventColumns:
    """The events of one line, in file order."""

    metadata_id: np.ndarray  # int32 (int64 on a line whose ids do not all fit int32)
    start_ps: np.ndarray  # int64, from Profile.origin_ns
    duration_ps: np.ndarray  # int64
    num_occurrences: np.ndarray | None  # int64; None unless some event is an aggregate

    def __len__(self) -> int:
        return len(self.metadata_id)

    def share_starts(self, start_ps: np.ndarray) -> None:
        """Holds `start_ps`, a read-only column equal to this line's starts (the analysis'
        event table copied them: a view of its column), in place of its own: the profile and
        the table keep one copy of the starts, not two (8 bytes per event). The values are
        the same, so a reader sees the same line before and after."""
        if start_ps.flags.writeable or len(start_ps) != len(self.start_ps):
            raise ValueError("a line shares only a read-only copy of its own starts")
        object.__setattr__(self, "start_ps", start_ps)  # (frozen: equal values, no new state)

    @property
    def nbytes(self) -> int:
        extra = self.num_occurrences.nbytes if self.num_occurrences is not None else 0
        return int(self.metadata_id.nbytes + self.start_ps.nbytes + self.duration_ps.nbytes + extra)


@dataclass(frozen=True)
class Line:
    """One timeline of a plane: a thread, a GPU stream, or a derived line."""

    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    events: EventColumns
    stats: StatColumns

    @property
    def label(self) -> str:
        return self.display_name or self.name

    @property
    def nbytes(self) -> int:
        return self.events.nbytes + self.stats.nbytes


@dataclass(frozen=True)
class Plane:
    """One device or host-side source of events."""

    id: int
    name: str
    lines: list[Line]
    event_metadata: EventMetadataTable
    stat_metadata: StatMetadataTable
    stats: StatColumns  # the plane's own stats (row always 0)

    @property
    def num_events(self) -> int:
        return sum(len(line.events) for line in self.lines)

    def stat_values(self) -> dict[str, object]:
        """The plane's own stats by name (e.g. device capabilities)."""
        out: dict[str, object] = {}
        for i in range(len(self.stats)):
            name = self.stat_metadata.name_of(int(self.stats.metadata_id[i]))
            out[name or str(int(self.stats.metadata_id[i]))] = self.stats.python_value(
                i, self.stat_metadata
            )
        return out

    @property
    def nbytes(self) -> int:
        return (
            sum(line.nbytes for line in self.lines) + self.event_metadata.nbytes
            + self.stat_metadata.nbytes + self.stats.nbytes
        )


#: Containers deeper than this are not walked when sizing a result (results are shallow).
_SIZE_DEPTH = 8


#: What a Python str or bytes object costs beside its characters (CPython's header).
_OBJECT_BYTES = sys.getsizeof("")


def result_nbytes(result: object, seen: set[int] | None = None) -> int:
    """Bytes of the arrays and strings reachable from `result` (each counted once, and not
    again when already in `seen`; the profile and its planes are not part of a result). An
    object that never changes once built may say its size once, as a `functools.cached_property`
    named `fixed_nbytes`: it is not walked again."""
    seen = set() if seen is None else seen
    total = 0
    stack: list[tuple[object, int]] = [(result, 0)]
    while stack:
        value, depth = stack.pop()
        if id(value) in seen or depth > _SIZE_DEPTH:
            continue
        seen.add(id(value))
        if isinstance(value, np.ndarray):
            owner = value  # a view (slice, broadcast) costs its base's memory, counted once
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            if owner is not value:
                if id(owner) in seen:
                    continue
                seen.add(id(owner))
            total += owner.nbytes
        elif isinstance(value, str | bytes):
            total += len(value) + _OBJECT_BYTES
        elif isinstance(value, Profile | Plane):
            continue
        elif isinstance(fixed := getattr(type(value), "fixed_nbytes", None),
                        functools.cached_property):
            total += int(fixed.__get__(value))  # immutable: measured once, then kept
        elif isinstance(value, dict):
            total += sys.getsizeof(value)
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, list | tuple | set | frozenset):
            total += sys.getsizeof(value)
            if value and all(isinstance(item, str) for item in value):
                # name tables: no walk per item
                total += sum(len(item) for item in value) + _OBJECT_BYTES * len(value)
                continue
            stack.extend((item, depth + 1) for item in value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            stack.extend((getattr(value, f.name), depth + 1) for f in dataclasses.fields(value))
        elif hasattr(value, "__dict__"):
            stack.extend((item, depth + 1) for item in vars(value).values())
    return total


class Derived:
    """What analyses computed from one profile, kept with it so it lives and dies with it
    (analysis/events/profile_cache.py): results by name, and their bytes (counted in the memory
    bound of xspace/store.py)."""

    def __init__(self) -> None:
        self.results: dict[str, object] = {}
        self.nbytes = 0
        #: Called after a result was added (the store that keeps the profile re-counts).
        self.on_grow: Callable[[], None] | None = None
        #: (disk cache key, cache directory or None for the default) of the file the profile
        #: was decoded from, set by the store: results kept on disk too (the trace index,
        #: trace/index_cache.py) are stored under it. None: the profile has no cache entry.
        self.disk_key: tuple[str, Path | None] | None = None

    def add(self, name: str, result: object) -> None:
        self.results[name] = result
        self.measure()

    def measure(self) -> int:
        """Measures the results again (caches inside them grow after they are built)."""
        seen: set[int] = set()  # results share parts (the forest holds the event table)
        self.nbytes = sum(result_nbytes(result, seen) for result in list(self.results.values()))
        return self.nbytes

    def clear(self) -> None:
        """Drops every result (a result may hold the profile: this breaks that cycle)."""
        self.results = {}
        self.nbytes = 0
        self.on_grow = None


@dataclass(frozen=True)
class Profile:
    """Everything one `<host>.xplane.pb` holds, decoded into columns."""

    planes: list[Plane]
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    origin_ns: int
    decoder: str = field(default="", compare=False)  # "compiled", "numpy" or "cache"

    def __post_init__(self) -> None:
        # Not a field: results are never compared, cached on disk or copied by `replace`.
        object.__setattr__(self, "_derived", Derived())

    @property
    def derived(self) -> Derived:
        """What analyses computed from this profile (analysis/events/profile_cache.py)."""
        derived: Derived = self.__dict__["_derived"]
        return derived

    @property
    def num_events(self) -> int:
        return sum(plane.num_events for plane in self.planes)

    @property
    def nbytes(self) -> int:
        return sum(plane.nbytes for plane in self.planes)

    def plane(self, name: str) -> Plane | None:
        for plane in self.planes:
            if plane.name == name:
                return plane
        return None
