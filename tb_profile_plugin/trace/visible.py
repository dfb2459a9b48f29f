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

#: Answers kept per index (the full view and the last pans are asked for again and again):
#: at most this many, together at most `KEPT_WINDOWS_MAX_BYTES`, none bigger than
#: `KEPT_WINDOW_MAX_BYTES` (a bigger answer is served and dropped: issue 30 kept 16 windows of
#: 400 MB each with a profile). What is kept is counted in the profile's bytes
#: (`Profile.derived`, the memory bound of xspace/store.py) as soon as it is kept.
_CACHED_WINDOWS = 16
KEPT_WINDOWS_MAX_BYTES = 128 * 2**20
KEPT_WINDOW_MAX_BYTES = 32 * 2**20
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
    #: The resolution the events were chosen at when the window asked for more events than
    #: one window returns (`window.MAX_WINDOW_EVENTS`); None: the resolution asked for.
    shown_resolution: int | None = None
    #: Events left out past `window.MAX_WINDOW_EVENTS` even at the lowest resolution (only
    #: windows of over a million events per couple of ps: never in a real trace).
    num_truncated: int = 0

    @property
    def nbytes(self) -> int:
        """The bytes of its arrays (each counted once)."""
        arrays = [self.ids, self.start_ps, self.end_ps, self.name_id, self.block_name_id,
                  self.segment, self.blocks.segment, self.blocks.start_ps, self.blocks.end_ps,
                  self.blocks.count, self.blocks.first_id]
        return sum(a.nbytes for a in {id(a): a for a in arrays}.values())


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
    """Keeps the answer to window `key` with the index (the last `_CACHED_WINDOWS`, within
    `KEPT_WINDOWS_MAX_BYTES`; an answer over `KEPT_WINDOW_MAX_BYTES` is not kept), and has the
    store keeping the profile count it now."""
    if visible.nbytes > KEPT_WINDOW_MAX_BYTES:
        return
    cache = _windows(index)
    with _cache_lock:
        cache[key] = visible
        cache.move_to_end(key)
        kept = sum(v.nbytes for v in cache.values())
        while len(cache) > 1 and (len(cache) > _CACHED_WINDOWS or kept > KEPT_WINDOWS_MAX_BYTES):
            kept -= cache.popitem(last=False)[1].nbytes
    derived = index.profile.derived
    if any(result is index for result in list(derived.results.values())):
        derived.measure()  # what the profile holds now, kept windows included
        notify = derived.on_grow
        if notify is not None:
            notify()  # the store evicts other profiles if over its bound


def kept_bytes(index: TraceIndex) -> int:
    """The bytes of the answers kept with `index`."""
    cache = _windows(index)
    with _cache_lock:
        return sum(v.nbytes for v in cache.values())
