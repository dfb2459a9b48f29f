"""Distinct rows of a small integer table, as `np.unique(rows, axis=0)` gives them, fast.

`np.unique(..., axis=0)` views each row as one opaque record and sorts those with record
comparisons: on a million kernels of five code columns that is 1.8 s. The tables grouped here
hold codes (names, ops, kernels: small integers, -1 for none), so a row fits one int64 key
in mixed radix, column by column (each column shifted by its minimum, times the spans of the
columns after it): keys sort as the rows do, and a 1-D unique of the keys is the rows' unique,
in the same order. A column of wide values (64-bit ids) is first replaced by its values' ranks
(a 1-D sort); where the spans' product still passes 2^62 the record sort is used.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_KEY_LIMIT = 2**62


def unique_rows(rows: np.ndarray, *, return_index: bool = False
                ) -> tuple[np.ndarray, ...]:
    """(unique rows, inverse) of the int64 table `rows` (n x k), rows sorted as
    `np.unique(rows, axis=0)` sorts them and `inverse` 1-D; with `return_index`,
    (unique rows, first row of each, inverse)."""
    rows = np.asarray(rows, np.int64)
    n, k = rows.shape
    if n == 0 or k == 0:
        return _by_records(rows, return_index)
    columns = [rows[:, j] for j in range(k)]
    low, high = _column_bounds(rows)
    spans = high - low + 1
    if float(np.prod(spans.astype(np.float64))) >= _KEY_LIMIT:
        # Columns of wide values (64-bit run ids) by their rank among the column's distinct
        # values (a 1-D sort each): ranks keep the order, and span the distinct count alone.
        for j in np.argsort(-spans, kind="stable").tolist():
            if float(np.prod(spans.astype(np.float64))) < _KEY_LIMIT or spans[j] <= n:
                break
            distinct, rank = np.unique(columns[j], return_inverse=True)
            columns[j], low[j], spans[j] = rank.reshape(-1), 0, len(distinct)
        if float(np.prod(spans.astype(np.float64))) >= _KEY_LIMIT:
            return _by_records(rows, return_index)
    if float(np.prod(spans.astype(np.float64))) > _DENSE_RANGE_PER_VALUE * n + 1024:
        key = _ranked_key(columns, [int(v) for v in low], [int(v) for v in spans])
    else:
        key = _radix_key(columns, [int(v) for v in low], [int(v) for v in spans])
    _, first, inverse = unique_ints(key, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if return_index:
        return rows[first], first, inverse
    return rows[first], inverse


def int64_rows(*columns: np.ndarray) -> np.ndarray:
    """`np.stack(columns, axis=1).astype(np.int64)` made in one int64 table: stacked int32
    codes would be copied again to the int64 rows `unique_rows` reads (12 bytes per row per
    column beside the table at the op and kernel tables' peak). In column order (Fortran):
    each column is written, and `unique_rows` reads it, contiguously (a row-major table's
    column is a strided walk: 40% slower keys on 1.6M kernel rows of 5 codes)."""
    out = np.empty((len(columns[0]) if columns else 0, len(columns)), np.int64, order="F")
    for j, column in enumerate(columns):
        out[:, j] = column
    return out


#: Rows per part of the key passes: a part's columns and temporaries stay in cache, where
#: whole-column temporaries (a fresh 64 MB array each at 8M rows) cost more in memory
#: traffic and page faults than in arithmetic.
_PART_ROWS = 1 << 16


def _column_bounds(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(`rows.min(axis=0)`, `rows.max(axis=0)`) of the int64 table, a part of rows at a time
    turned to columns: a reduce over the short rows of a few columns walks them one row at a
    time (0.11 s per bound at 8M rows of 5), a part's columns are reduced whole (5x less)."""
    low = np.full(rows.shape[1], np.iinfo(np.int64).max, np.int64)
    high = np.full(rows.shape[1], np.iinfo(np.int64).min, np.int64)
    for lo in range(0, len(rows), _PART_ROWS):
        part = np.ascontiguousarray(rows[lo:lo + _PART_ROWS].T)
        np.minimum(low, part.min(axis=1), out=low)
        np.maximum(high, part.max(axis=1), out=high)
    return low, high


def _radix_key(columns: list[np.ndarray], low: list[int], spans: list[int]) -> np.ndarray:
    """The mixed-radix key of the rows (column j shifted by `low[j]`, times the spans of the
    columns after it), built a part of rows at a time into one int64 array."""
    n = len(columns[0])
    key = np.empty(n, np.int64)
    for lo in range(0, n, _PART_ROWS):
        part = key[lo:lo + _PART_ROWS]
        np.subtract(columns[0][lo:lo + _PART_ROWS], low[0], out=part)
        for j in range(1, len(columns)):
            part *= spans[j]
            part += columns[j][lo:lo + _PART_ROWS]
            part -= low[j]
    return key


def _ranked_key(columns: list[np.ndarray], low: list[int], spans: list[int]) -> np.ndarray:
    """One key per row that sorts as the rows do and spans about the number of distinct rows:
    the columns' ranks joined one at a time, each join ranked again (a dense table while the
    distinct prefixes times a column's distinct codes stay within a few times the rows). The
    mixed radix of the raw columns spans the product of their ranges, far past the rows
    where codes are numbered profile-wide (the kernel table of `gpu8`: 60 x 37 x 613 x 371
    key values for 1.6M-7.8M kernels of 298 distinct rows), which only a sort of the sparse
    key could rank (10M events: 1.1-2.0 s, the joins 0.7-0.9 s). The passes run a part of
    rows at a time into one key array (`_PART_ROWS`); where a range is too wide for a
    table, `unique_ints` ranks the whole column (a sort), with the same ranks. `low`, `spans`:
    each column's minimum and range."""
    n = len(columns[0])
    key = np.empty(n, np.int64)
    rank_of, distinct = _column_ranks(columns[0], low[0], spans[0])
    for lo in range(0, n, _PART_ROWS):
        key[lo:lo + _PART_ROWS] = rank_of(lo, lo + _PART_ROWS)
    for j in range(1, len(columns)):
        rank_of, codes = _column_ranks(columns[j], low[j], spans[j])
        for lo in range(0, n, _PART_ROWS):
            part = key[lo:lo + _PART_ROWS]
            part *= codes
            part += rank_of(lo, lo + _PART_ROWS)
        if j < len(columns) - 1:  # (the last join is ranked by the caller's own unique)
            distinct = _rerank(key, distinct * codes)
    return key


def _column_ranks(column: np.ndarray, low: int, span: int
                  ) -> tuple[Callable[[int, int], np.ndarray], int]:
    """(a function giving the ranks of the column's values in rows [lo, hi) among its
    distinct values, the number of those): a table of the value range (`span` values from
    `low`) where it is within a few times the rows, else the ranks of `unique_ints` (a
    sort)."""
    n = len(column)
    high = low + span - 1
    if high - low + 1 > _DENSE_RANGE_PER_VALUE * n + 1024:
        codes, rank = unique_ints(column, return_inverse=True)
        return (lambda lo, hi: rank[lo:hi]), len(codes)
    present = np.zeros(high - low + 1, bool)
    for lo in range(0, n, _PART_ROWS):
        present[np.subtract(column[lo:lo + _PART_ROWS], low, dtype=np.intp)] = True
    table = np.cumsum(present, dtype=np.intp)
    table -= 1
    count = int(table[-1]) + 1
    return (lambda lo, hi: table[np.subtract(column[lo:hi], low, dtype=np.intp)]), count


def _rerank(key: np.ndarray, size: int) -> int:
    """Replaces each key (in [0, `size`)) by its rank among the distinct keys, in place; the
    number of distinct keys. A table of the range where it is within a few times the keys,
    else `unique_ints` (a sort)."""
    n = len(key)
    if size > _DENSE_RANGE_PER_VALUE * n + 1024:
        codes, rank = unique_ints(key, return_inverse=True)
        key[:] = rank
        return len(codes)
    present = np.zeros(size, bool)
    for lo in range(0, n, _PART_ROWS):
        present[key[lo:lo + _PART_ROWS]] = True
    table = np.cumsum(present, dtype=np.int64)
    table -= 1
    for lo in range(0, n, _PART_ROWS):
        part = key[lo:lo + _PART_ROWS]
        np.take(table, part, out=part)
    return int(table[-1]) + 1 if size else 0


#: Distinct values found by a table of the value range (no sort) when the range is at most
#: this many times the number of values (plus a small constant).
_DENSE_RANGE_PER_VALUE = 2


def unique_ints(values: np.ndarray, *, return_index: bool = False,
                return_inverse: bool = False) -> tuple[np.ndarray, ...]:
    """`np.unique(values, return_index=..., return_inverse=...)` of a 1-D integer array, the
    same arrays in the same order. Where the values span a range within a few times their
    number (codes, dense ids, keys of small code tables) the range is tabled instead of
    sorted: a mark per value present, their running count (the ranks), and the first
    occurrence by a minimum per value, O(n + range) instead of a sort (2M values: 0.3 s ->
    0.03 s)."""
    values = np.asarray(values)
    n = len(values)
    low = int(values.min()) if n else 0
    size = int(values.max()) - low + 1 if n else 0
    if n == 0 or values.ndim != 1 or values.dtype.kind not in "iu" \
            or size > _DENSE_RANGE_PER_VALUE * n + 1024:
        return _np_unique(values, return_index, return_inverse)
    slot = np.subtract(values, low, dtype=np.intp) if low or values.dtype != np.intp \
        else values
    present = np.zeros(size, bool)
    present[slot] = True
    out: list[np.ndarray] = [(np.flatnonzero(present) + low).astype(values.dtype)]
    if return_index:
        first = np.full(size, n, np.intp)
        np.minimum.at(first, slot, np.arange(n, dtype=np.intp))
        out.append(first[present])
    if return_inverse:
        rank = np.cumsum(present, dtype=np.intp)
        rank -= 1
        out.append(rank[slot])
    return tuple(out) if len(out) > 1 else (out[0],)


def _np_unique(values: np.ndarray, return_index: bool, return_inverse: bool
               ) -> tuple[np.ndarray, ...]:
    if return_index and return_inverse:
        unique, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        return unique, first, inverse.reshape(-1)
    if return_index:
        unique, first = np.unique(values, return_index=True)
        return unique, first
    if return_inverse:
        unique, inverse = np.unique(values, return_inverse=True)
        return unique, inverse.reshape(-1)
    return (np.unique(values),)


def _by_records(rows: np.ndarray, return_index: bool) -> tuple[np.ndarray, ...]:
    """numpy's own row-wise unique (rows too wide for one key), in `unique_rows`' shape."""
    unique, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    return (unique, first, inverse) if return_index else (unique, inverse)
