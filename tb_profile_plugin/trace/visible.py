"""What a window query answers (`Visible`, `DensityBlocks`), and the answers kept per index.

A leaf of the trace package: the window queries (`trace/window.py`) compute these, the index's
disk cache (`trace/index_cache.py`) writes and reads a first window of them, and both keep
answers with their index through `remember` / `remembered`; this module imports neither.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.trace.index import TraceIndex

#: Answers kept per index (the full view and the last pans are asked for again and again).
_CACHED_WINDOWS = 16
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class DensityBlocks:
    """Runs of sub-pixel events (module docstring), sorted by (segment, start)."""

    segment: np.ndarray  # int64: (track, depth) segment of the index
    start_ps: np.ndarray  # int64: start of the run's first event (index time)
    end_ps: np.ndarray  # int64: latest end in the run
    count: np.ndarray  # int64: events in the run, >= 2
    first_id: np.ndarray  # int64: index id of the run's first event (its name colours it)

    def __len__(self) -> int:
        return len(self.count)


_EMPTY = np.zeros(0, np.int64)
NO_BLOCKS = DensityBlocks(_EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY)


@dataclass(frozen=True)
class Visible:
    ids: np.ndarray  # index event ids, sorted by (track, start, id)
    num_filtered: int
    #: Dense stretches; empty when nothing was filtered (the events then tell everything).
    blocks: DensityBlocks
    #: The events' columns (what the document shows of them: a window kept in the disk cache,
    #: trace/index_cache.py, is answered without reading the index's columns).
    start_ps: np.ndarray
    end_ps: np.ndarray
    name_id: np.ndarray
    block_name_id: np.ndarray  # name of each block's first event
    segment: np.ndarray  # (track, depth) segment of each event


def _windows(index: TraceIndex) -> collections.OrderedDict[tuple[int, ...], Visible]:
    return index.lazy("windows", collections.OrderedDict)


def remembered(index: TraceIndex, key: tuple[int, ...]) -> Visible | None:
    """The kept answer to window `key` of `index` (now the most recently used), or None."""
    cache = _windows(index)
    with _cache_lock:
        visible = cache.get(key)
        if visible is not None:
            cache.move_to_end(key)
    return visible


def remember(index: TraceIndex, key: tuple[int, ...], visible: Visible) -> None:
    """Keeps the answer to window `key` with the index (the last `_CACHED_WINDOWS`)."""
    cache = _windows(index)
    with _cache_lock:
        cache[key] = visible
        while len(cache) > _CACHED_WINDOWS:
            cache.popitem(last=False)
