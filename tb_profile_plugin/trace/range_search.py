"""Binary searches stepped for many sorted ranges of one column together (no loop per
range): the trace window's candidate ranges (window.py) and the running maxima of ends
(max_ends.py)."""

from __future__ import annotations

import numpy as np


def search_each(values: np.ndarray, first: np.ndarray, last: np.ndarray, keys: np.ndarray,
                side: str) -> np.ndarray:
    """`first[k] + np.searchsorted(values[first[k]:last[k]], keys[k], side)` for every k at
    once (`search_ranges` with a key per range)."""
    lo, hi = first.astype(np.int64), last.astype(np.int64)
    keys = np.asarray(keys, np.int64)
    if len(values) == 0:
        return lo
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        value = values[np.minimum(mid, len(values) - 1)]
        right = (value < keys) if side == "left" else (value <= keys)
        right &= active
        lo = np.where(right, mid + 1, lo)
        hi = np.where(active & ~right, mid, hi)


def search_ranges(values: np.ndarray, first: np.ndarray, last: np.ndarray, key: int,
                  side: str) -> np.ndarray:
    """`first[k] + np.searchsorted(values[first[k]:last[k]], key, side)` for every k at once:
    a binary search stepped for all ranges together (no loop per range)."""
    return search_each(values, first, last, np.full(len(first), key, np.int64), side)
