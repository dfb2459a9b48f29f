"""Keeping the analysis' per-event memory small (docs/analysis.md, "Fourth pass").

Two tools, shared by every stage that walks all the events of a host:
- passes that need no whole column run `CHUNK_EVENTS` events at a time, and passes whose rows
  fall into independent groups (lines, steps) run a few whole groups at a time
  (`whole_group_parts`), so their temporaries are a part's, not columns of every event;
- columns kept for the analysis' life take the narrowest integer type their values fit
  (`narrowest_int`): a line or plane index, a nesting depth, on real hosts one byte.
"""

from __future__ import annotations

import numpy as np

#: Events per part of a pass over every event (8 MB per int64 temporary). Read as
#: `column_sizes.CHUNK_EVENTS` at call time (tests make it small to check parts against
#: one pass).
CHUNK_EVENTS = 1 << 20


def whole_group_parts(group: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """[lo, hi) ranges over rows sorted by `group`, each of whole groups: about `limit` rows,
    more where one group alone is longer (a Python step per part, never per row)."""
    parts: list[tuple[int, int]] = []
    lo, n = 0, len(group)
    while lo < n:
        hi = lo + limit
        if hi >= n:
            hi = n
        else:
            cut = int(np.searchsorted(group, group[hi], "left"))  # the start of hi's group
            hi = cut if cut > lo else int(np.searchsorted(group, group[hi], "right"))
        parts.append((lo, hi))
        lo = hi
    return parts


def narrowest_int(largest: int) -> type[np.signedinteger]:
    """The narrowest signed integer type that holds 0..`largest` (and -1)."""
    for dtype in (np.int8, np.int16):
        if largest <= np.iinfo(dtype).max:
            return dtype
    return np.int32 if largest <= np.iinfo(np.int32).max else np.int64


def event_indices(mask: np.ndarray) -> np.ndarray:
    """`np.flatnonzero(mask)` as int32 where every index fits (int64 otherwise), made
    `CHUNK_EVENTS` at a time: 4 bytes per chosen event, not 8, and no int64 column beside
    (the device events of a 10M-event GPU capture: 31 MB less through the device op tables)."""
    n = len(mask)
    if n > np.iinfo(np.int32).max:
        return np.flatnonzero(mask)
    out = np.empty(int(np.count_nonzero(mask)), np.int32)
    at = 0
    for lo in range(0, n, CHUNK_EVENTS):
        part = np.flatnonzero(mask[lo : lo + CHUNK_EVENTS])
        part += lo
        out[at : at + len(part)] = part
        at += len(part)
    return out
