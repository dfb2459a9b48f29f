"""The columnar profile: an XSpace as planes -> lines -> numpy columns.

One `Profile` holds what one `<host>.xplane.pb` holds. Events of a line are parallel numpy
arrays (`EventColumns`); a line's stats (`StatColumns`) are coded dense columns for the stats
its events carry regularly (a code per event into a table of distinct values: dense_stats.py)
and sparse rows, one per (event, stat) pair, for the rest; readers ask by stat id
(`StatColumns.select`, `int_column`, ...). Strings live in
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
from typing import Any

import numpy as np

from tb_profile_plugin.xspace.schema import StatKind

_EMPTY_I64 = np.zeros(0, np.int64)


def _no_rows(dtype: type) -> Any:
    """A dataclass field defaulting to an empty column of `dtype` (a fresh one each time)."""
    return field(default_factory=lambda: np.zeros(0, dtype))


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
    """The stats of a line's events (or of metadata rows): dense columns and sparse rows.

    **Sparse rows** (`row` .. `length`): which event (`row`) carries which stat (`metadata_id`)
    with what value. `value` holds the raw 64 bits; `kind` says how to read them (see
    `StatKind`): a double's bits, an unsigned or signed integer, a `ref` (the id of an
    XStatMetadata whose name is the value), or, for str/bytes, the start of the value in
    `strings` with its `length`. Rows are in file order: by event, then by the order of the
    event's stats.

    **Dense stats** (`dense_*`, `codes*`; made by `dense_stats.densify` for a line's stats):
    a stat that sits at most once on each event, always with one kind, is kept as a code per
    event into a table of its distinct values instead (an 8-GPU capture's kernels carry 11
    stats each, mostly of a few distinct values: 18 bytes a row -> 0-4 bytes an event).
    Dense stat k (`dense_ids[k]`, of kind `dense_kind[k]`) has the raw values
    `dense_values[dense_value_starts[k] : dense_value_starts[k + 1]]` (with `dense_lengths`
    for str/bytes; slot 0 unused: code 0 means "absent") and its codes in stripe
    `dense_stripe[k]` of `codes8` / `codes16` / `codes32` as `dense_width[k]` is 1, 2 or 4
    bytes (each stripe one code per event); width 0: on every event with the one value of
    slot 1. A stat id is either dense or in the sparse rows, never both. `order_ids` are the
    line's stat ids in the order its events list them (file order within an event).
    Readers ask by stat id (`select`, `int_column`, `float_column`, `event_stats`,
    `positions`), never index the sparse rows of a line directly.
    """

    row: np.ndarray  # int32: event index in the line (metadata row; 0 for plane stats)
    metadata_id: np.ndarray  # int32 (int64 on a line whose stat ids do not all fit int32)
    kind: np.ndarray  # uint8
    value: np.ndarray  # int64 (raw bits)
    length: np.ndarray  # uint8, uint16 or int32 (the narrowest that holds the line's longest)
    strings: np.ndarray  # uint8 blob of str/bytes values
    dense_ids: np.ndarray = _no_rows(np.int64)  # int64 [k]
    dense_kind: np.ndarray = _no_rows(np.uint8)  # uint8 [k]
    dense_width: np.ndarray = _no_rows(np.uint8)  # uint8 [k]: 0, 1, 2 or 4
    dense_stripe: np.ndarray = _no_rows(np.int64)  # int64 [k]
    dense_value_starts: np.ndarray = _no_rows(np.int64)  # int64 [k + 1] (empty when k == 0)
    dense_values: np.ndarray = _no_rows(np.int64)  # int64: raw values, slot 0 of each stat unused
    dense_lengths: np.ndarray = _no_rows(np.int32)  # int32: bytes of each str/bytes value, else 0
    codes8: np.ndarray = _no_rows(np.uint8)
    codes16: np.ndarray = _no_rows(np.uint16)
    codes32: np.ndarray = _no_rows(np.int32)
    order_ids: np.ndarray = _no_rows(np.int64)  # int64: the line's stat ids, in their event order

    @staticmethod
    def empty() -> StatColumns:
        return StatColumns(
            np.zeros(0, np.int32), _EMPTY_I64, np.zeros(0, np.uint8), _EMPTY_I64,
            np.zeros(0, np.int32), np.zeros(0, np.uint8),
        )

    def __len__(self) -> int:
        """The sparse rows (`count` counts every stat of every event)."""
        return len(self.row)

    @property
    def nbytes(self) -> int:
        return int(sum(getattr(self, f.name).nbytes for f in dataclasses.fields(self)))

    # -- dense stats ---------------------------------------------------------------------

    def _dense_index(self, stat_id: int) -> int:
        """Position of `stat_id` in `dense_ids`, -1 when it is not dense."""
        ids = self.dense_ids
        if not len(ids):
            return -1
        at = int(np.searchsorted(ids, stat_id))
        return at if at < len(ids) and int(ids[at]) == stat_id else -1

    def _codes(self, k: int, num_rows: int) -> np.ndarray | None:
        """Dense stat k's code per event (0: absent); None for width 0 (code 1 everywhere)."""
        width = int(self.dense_width[k])
        if width == 0:
            return None
        column = {1: self.codes8, 2: self.codes16, 4: self.codes32}[width]
        stripe = int(self.dense_stripe[k])
        return column[stripe * num_rows : (stripe + 1) * num_rows]

    def _table(self, k: int) -> slice:
        return slice(int(self.dense_value_starts[k]), int(self.dense_value_starts[k + 1]))

    def stat_ids(self) -> np.ndarray:
        """Every stat id the rows carry (sorted, distinct)."""
        return np.union1d(np.unique(self.metadata_id), self.dense_ids).astype(np.int64)

    def count(self, num_rows: int) -> int:
        """Every stat of every row (sparse rows and dense stats present)."""
        total = len(self.row)
        for k in range(len(self.dense_ids)):
            codes = self._codes(k, num_rows)
            total += num_rows if codes is None else int(np.count_nonzero(codes))
        return total

    def select(self, stat_id: int, num_rows: int) -> StatColumns:
        """The stats with this id as sparse rows (in event order; an event carrying it twice
        has two rows, in file order), sharing this object's `strings`."""
        k = self._dense_index(stat_id)
        if k < 0:
            sel = np.flatnonzero(self.metadata_id == stat_id)
            return StatColumns(self.row[sel], self.metadata_id[sel], self.kind[sel],
                               self.value[sel], self.length[sel], self.strings)
        codes = self._codes(k, num_rows)
        rows = np.arange(num_rows) if codes is None else np.flatnonzero(codes)
        taken = np.ones(len(rows), np.intp) if codes is None else codes[rows].astype(np.intp)
        table = self._table(k)
        return StatColumns(
            rows.astype(np.int32), np.full(len(rows), stat_id, np.int64),
            np.full(len(rows), self.dense_kind[k], np.uint8),
            self.dense_values[table][taken], self.dense_lengths[table][taken], self.strings)

    def last_values(self, stat_id: int, num_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """(the events carrying the stat, in order (int32), its raw value on each: the last one
        where an event carries it twice, as protobuf's parser keeps): `select`'s rows and
        values without its per-row ids, kinds and lengths."""
        k = self._dense_index(stat_id)
        if k < 0:
            sel = np.flatnonzero(self.metadata_id == stat_id)
            row = self.row[sel]
            last = np.ones(len(row), bool)  # rows are in event order: last of each run
            last[:-1] = row[1:] != row[:-1]
            return row[last], self.value[sel[last]]
        codes = self._codes(k, num_rows)
        values = self.dense_values[self._table(k)]
        if codes is None:
            return np.arange(num_rows, dtype=np.int32), np.full(num_rows, values[1])
        rows = np.flatnonzero(codes)
        return rows.astype(np.int32), values[codes[rows]]

    def coded(self, stat_id: int, num_rows: int) -> tuple[np.ndarray, StatColumns] | None:
        """A dense stat as (code per event, 0 where absent; its distinct values as sparse rows,
        row i for code i, row 0 of kind NONE), for readers that work on the distinct values
        and map them; None when the stat is not dense."""
        k = self._dense_index(stat_id)
        if k < 0:
            return None
        codes = self._codes(k, num_rows)
        if codes is None:
            codes = np.broadcast_to(np.uint8(1), (num_rows,))
        table = self._table(k)
        values = self.dense_values[table]
        kinds = np.full(len(values), self.dense_kind[k], np.uint8)
        kinds[0] = StatKind.NONE
        return codes, StatColumns(
            np.arange(len(values), dtype=np.int32), np.full(len(values), stat_id, np.int64),
            kinds, values, self.dense_lengths[table], self.strings)

    def sparse(self, num_rows: int) -> StatColumns:
        """Every stat as sparse rows, by event and in each event's order (`order_ids`): the
        rows a decoder gave, for readers of every stat (tests, a dump); costs 18 bytes a row."""
        if not len(self.dense_ids):
            return self
        parts = [self.select(int(stat_id), num_rows) for stat_id in self.dense_ids.tolist()]
        rows = np.concatenate([self.row.astype(np.int64), *[p.row for p in parts]])
        ids = np.concatenate([self.metadata_id.astype(np.int64), *[p.metadata_id for p in parts]])
        order = np.lexsort((self._ranks(ids), rows))
        return StatColumns(
            rows[order].astype(np.int32), ids[order],
            np.concatenate([self.kind, *[p.kind for p in parts]])[order],
            np.concatenate([self.value, *[p.value for p in parts]])[order],
            np.concatenate([self.length.astype(np.int64), *[p.length for p in parts]])[order],
            self.strings)

    def _dense_column(self, k: int, num_rows: int, table: np.ndarray) -> np.ndarray:
        """`table[code]` per event (table[0]: the value of events without the stat)."""
        codes = self._codes(k, num_rows)
        if codes is None:
            return np.full(num_rows, table[1], table.dtype)
        return table[codes]

    def int_column(self, stat_id: int, num_rows: int, fill: int = -1) -> np.ndarray:
        """Dense int64 column of an integer-valued stat (uint64/int64/ref): `fill` where absent.

        When an event carries the stat twice, the last one wins (as protobuf's parser does).
        """
        k = self._dense_index(stat_id)
        if k >= 0:
            table = self.dense_values[self._table(k)].copy()
            table[0] = fill
            return self._dense_column(k, num_rows, table)
        out = np.full(num_rows, fill, np.int64)
        sel = np.flatnonzero(self.metadata_id == stat_id)
        out[self.row[sel]] = self.value[sel]
        return out

    def float_column(self, stat_id: int, num_rows: int) -> np.ndarray:
        """Dense float64 column of a numeric stat: NaN where absent; ints are converted."""
        k = self._dense_index(stat_id)
        if k >= 0:
            raw = self.dense_values[self._table(k)]
            table = _as_float(raw, np.full(len(raw), self.dense_kind[k], np.uint8))
            table[0] = np.nan
            return self._dense_column(k, num_rows, table)
        out = np.full(num_rows, np.nan)
        sel = np.flatnonzero(self.metadata_id == stat_id)
        out[self.row[sel]] = _as_float(self.value[sel], self.kind[sel])
        return out

    def event_stats(self, row: int, num_rows: int) -> StatColumns:
        """The stats of event `row` as sparse rows, in the event's order (`order_ids`)."""
        lo = int(np.searchsorted(self.row, row, "left"))
        hi = int(np.searchsorted(self.row, row, "right"))
        ids, kinds = [self.metadata_id[lo:hi].astype(np.int64)], [self.kind[lo:hi]]
        values, lengths = [self.value[lo:hi]], [self.length[lo:hi].astype(np.int64)]
        for k in range(len(self.dense_ids)):
            codes = self._codes(k, num_rows)
            code = 1 if codes is None else int(codes[row])
            if code:
                at = int(self.dense_value_starts[k]) + code
                ids.append(self.dense_ids[k : k + 1])
                kinds.append(self.dense_kind[k : k + 1])
                values.append(self.dense_values[at : at + 1])
                lengths.append(self.dense_lengths[at : at + 1].astype(np.int64))
        id_column = np.concatenate(ids)
        order = np.argsort(self._ranks(id_column), kind="stable")
        return StatColumns(
            np.full(len(order), row, np.int32), id_column[order],
            np.concatenate(kinds)[order], np.concatenate(values)[order],
            np.concatenate(lengths)[order], self.strings)

    def _ranks(self, stat_ids: np.ndarray) -> np.ndarray:
        """Each stat id's place in `order_ids` (ids not there: after all of them)."""
        if not len(self.order_ids):
            return np.zeros(len(stat_ids), np.int64)
        by_id = np.argsort(self.order_ids, kind="stable")
        at = np.minimum(np.searchsorted(self.order_ids[by_id], stat_ids), len(by_id) - 1)
        found = self.order_ids[by_id][at] == stat_ids
        return np.where(found, by_id[at], len(by_id))

    def positions(self, stat_id: int, num_rows: int) -> np.ndarray:
        """Per event, where its (last) stat `stat_id` stands among all the line's stats, as a
        key that orders the stats of one event as the event lists them; -1 where absent."""
        out = np.full(num_rows, -1, np.int64)
        sub = self.select(stat_id, num_rows)
        if len(sub):
            span = len(self.order_ids) + 1
            rank = int(self._ranks(np.array([stat_id], np.int64))[0])
            out[sub.row] = sub.row.astype(np.int64) * span + rank
        return out

    def check_dense(self, num_rows: int) -> None:
        """ValueError unless the dense stats fit `num_rows` events (a loaded cache entry)."""
        k = len(self.dense_ids)
        if not k:
            return
        if (len(self.dense_kind) != k or len(self.dense_width) != k or len(self.dense_stripe) != k
                or len(self.dense_value_starts) != k + 1
                or len(self.dense_lengths) != len(self.dense_values)):
            raise ValueError("dense stat columns of different lengths")
        starts = self.dense_value_starts
        if int(starts[0]) != 0 or np.any(np.diff(starts) < 2) or int(starts[-1]) != len(
                self.dense_values):
            raise ValueError("dense stat values outside their table")
        if np.any(np.diff(self.dense_ids) <= 0) or np.any(self.dense_kind == 0):
            raise ValueError("dense stat ids out of order")
        for width, column in ((1, self.codes8), (2, self.codes16), (4, self.codes32)):
            stripes = self.dense_stripe[self.dense_width == width]
            if len(column) != len(stripes) * num_rows or sorted(stripes.tolist()) != list(
                    range(len(stripes))):
                raise ValueError("dense stat codes do not fit the events")
        if not np.isin(self.dense_width, (0, 1, 2, 4)).all():
            raise ValueError("dense stat width out of range")
        for j in range(k):
            codes = self._codes(j, num_rows)
            size = int(starts[j + 1] - starts[j])
            if codes is not None and len(codes) and (int(codes.min()) < 0 or int(
                    codes.max()) >= size):
                raise ValueError("dense stat codes outside their table")
        text = np.repeat(np.isin(self.dense_kind, (StatKind.STR, StatKind.BYTES)), np.diff(starts))
        begin = self.dense_values[text]
        end = begin + self.dense_lengths[text]
        if np.any(begin < 0) or np.any(end < begin) or np.any(end > len(self.strings)):
            raise ValueError("stat strings outside their blob")

    def python_value(self, index: int, stat_names: StatMetadataTable | None = None) -> object:
        """The value of sparse row `index` as a Python object (refs resolved through
        stat_names)."""
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


def _as_float(raw: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Raw stat bits as float64 by kind (doubles' bits, unsigned and signed integers)."""
    return np.where(
        kinds == StatKind.DOUBLE, raw.view(np.float64),
        np.where(kinds == StatKind.UINT64, raw.view(np.uint64).astype(np.float64),
                 raw.astype(np.float64)),
    )


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
        elif isinstance(value, Profile | Plane) or is_unread(value):
            continue  # (a line's columns not read yet: the profile's, counted with it)
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


def is_unread(value: object) -> bool:
    """Whether `value` is a line's lazy columns not read yet (xspace/lazy_columns.py: the disk
    cache's lines, cache/lazy.py, and stats walked later, stats_later.py): reading any of its
    fields reads them."""
    part = getattr(value, "__dict__", {}).get("_part")
    return part is not None and not part.done


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

    def drop(self, *names: str) -> None:
        """Forgets the results `names` (made redundant, or rebuilt on demand) and counts
        again (once)."""
        dropped = [self.results.pop(name, None) for name in names]
        if any(result is not None for result in dropped):
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
