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
    low = rows.min(axis=0)
    spans = rows.max(axis=0) - low + 1
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
    key = columns[0] - low[0]
    for j in range(1, k):
        key = key * int(spans[j]) + (columns[j] - low[j])
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if return_index:
        return rows[first], first, inverse
    return rows[first], inverse


def _by_records(rows: np.ndarray, return_index: bool) -> tuple[np.ndarray, ...]:
    """numpy's own row-wise unique (rows too wide for one key), in `unique_rows`' shape."""
    unique, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    return (unique, first, inverse) if return_index else (unique, inverse)
