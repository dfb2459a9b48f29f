"""Stat values as text codes: strings to dense codes shared by the columns of one table, and
one line's stats by name (the event's own stat first, then its event metadata's)."""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.xspace.model import Line, Plane, StatColumns
from tb_profile_plugin.xspace.schema import StatKind
from tb_profile_plugin.xspace.unique_rows import unique_ints


class TextIndex:
    """Strings to dense codes, shared by every column of one table."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def code(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def codes(self, texts: list[str]) -> np.ndarray:
        """Codes of `texts`, with a trailing -1 so that a local code -1 maps to -1."""
        return np.array([self.code(t) for t in texts] + [-1], np.int64)

    @property
    def texts(self) -> list[str]:
        return list(self.index)


def str_codes(stats: StatColumns, stat_id: int | None, num_rows: int,
              plane: Plane) -> tuple[np.ndarray, list[str]]:
    """A str/ref stat of `num_rows` rows as (local code per row, -1 where absent; texts).

    Vectorised: string values are padded into a fixed-width byte matrix and deduplicated with
    numpy, so millions of events cost no Python loop per event; a dense stat's distinct values
    alone are read, and its codes mapped. Refs are resolved through the plane's stat metadata
    names. Codes are int32 (a line has fewer distinct texts than rows); a line without the
    stat gets one shared read-only -1, no column.
    """
    none: tuple[np.ndarray, list[str]] = np.broadcast_to(np.int32(-1), (num_rows,)), []
    if stat_id is None:
        return none
    local = TextIndex()
    coded = stats.coded(stat_id, num_rows)
    if coded is not None:
        event_codes, table = coded
        return _row_codes(table, plane, local).astype(np.int32)[event_codes], local.texts
    sub = stats.select(stat_id, num_rows)
    if len(sub) == 0:
        return none
    codes = np.full(num_rows, -1, np.int32)
    codes[sub.row] = _row_codes(sub, plane, local)
    return codes, local.texts


def _row_codes(sub: StatColumns, plane: Plane, local: TextIndex) -> np.ndarray:
    """`local` code of each of the sparse rows `sub`: its str or ref value; -1 for the rest."""
    codes = np.full(len(sub), -1, np.int64)
    is_ref = sub.kind == StatKind.REF
    if is_ref.any():
        uniq, inverse = unique_ints(sub.value[is_ref], return_inverse=True)
        mapped = np.array([local.code(plane.stat_metadata.name_of(int(r)) or "")
                           for r in uniq.tolist()], np.int64)
        codes[is_ref] = mapped[inverse.ravel()]
    is_str = sub.kind == StatKind.STR
    if is_str.any():
        offsets = sub.value[is_str]
        lengths = sub.length[is_str].astype(np.int64)
        width = max(int(lengths.max()), 1)
        matrix = np.zeros((len(offsets), width), np.uint8)
        cols = np.arange(width)
        mask = cols[None, :] < lengths[:, None]
        source = np.where(mask, offsets[:, None] + cols[None, :], 0)
        matrix[mask] = sub.strings[source[mask]]
        fixed = matrix.view(f"S{width}").ravel()
        uniq, inverse = np.unique(fixed, return_inverse=True)
        mapped = np.array([local.code(u.decode("utf-8", "replace")) for u in uniq.tolist()],
                          np.int64)
        codes[is_str] = mapped[inverse.ravel()]
    return codes


def _text_codes(stats: StatColumns, stat_id: int, num_rows: int, plane: Plane,
                index: TextIndex) -> np.ndarray:
    """Shared-index codes of one stat over `num_rows` rows: its string or ref value, or an
    integer value written in decimal; -1 where absent."""
    coded = stats.coded(stat_id, num_rows)
    if coded is not None:
        event_codes, table = coded
        return _shared_codes(table, plane, index)[event_codes]
    out = np.full(num_rows, -1, np.int64)
    sub = stats.select(stat_id, num_rows)
    out[sub.row] = _shared_codes(sub, plane, index)
    return out


def _shared_codes(sub: StatColumns, plane: Plane, index: TextIndex) -> np.ndarray:
    """`index` code of each of the sparse rows `sub`: its string or ref value, or an integer
    value written in decimal; -1 for the rest."""
    local = TextIndex()
    local_codes = _row_codes(sub, plane, local)
    out = index.codes(local.texts)[local_codes]
    is_int = np.flatnonzero(np.isin(sub.kind, (StatKind.UINT64, StatKind.INT64)))
    if len(is_int):
        uniq, inverse = unique_ints(sub.value[is_int], return_inverse=True)
        out[is_int] = index.codes([str(int(v)) for v in uniq.tolist()])[inverse.ravel()]
    return out


class LineStats:
    """Stats of one line's events by name, event stat first, then the event metadata's."""

    def __init__(self, plane: Plane, line: Line) -> None:
        self.plane = plane
        self.line = line
        self.n = len(line.events)
        self.meta_rows = plane.event_metadata.rows_of(line.events.metadata_id)

    def text(self, name: str, index: TextIndex) -> np.ndarray:
        """Shared-index codes of a string stat (or an integer one, written in decimal)."""
        plane = self.plane
        stat_id = plane.stat_metadata.id_of(name)
        if stat_id is None:
            return np.full(self.n, -1, np.int64)
        own = _text_codes(self.line.stats, stat_id, self.n, plane, index)
        meta = plane.event_metadata
        from_meta = np.append(_text_codes(meta.stats, stat_id, len(meta.ids), plane, index),
                              -1)[self.meta_rows]
        return np.where(own >= 0, own, from_meta)

    def number(self, name: str) -> np.ndarray:
        """A numeric stat as float64 (NaN where absent), event stat first."""
        plane = self.plane
        stat_id = plane.stat_metadata.id_of(name)
        if stat_id is None:
            return np.full(self.n, np.nan)
        own = self.line.stats.float_column(stat_id, self.n)
        meta = plane.event_metadata
        from_meta = np.append(meta.stats.float_column(stat_id, len(meta.ids)), np.nan)[
            self.meta_rows]
        return np.where(np.isnan(own), from_meta, own)

    def metadata_names(self, index: TextIndex, display: bool) -> np.ndarray:
        meta = self.plane.event_metadata
        names = meta.names.tolist()
        if display:
            shown = meta.display_names.tolist()
            names = [d or n for d, n in zip(shown, names, strict=True)]
        return index.codes(names)[self.meta_rows]
