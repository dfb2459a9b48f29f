"""The running maximum of ends within the trace index's overlapping segments, kept per block.

A window finds, in each (track, depth) segment, its first candidate: the first event whose
running-maximum end (the latest end of it and every event before it in the segment) reaches
the window's start. In a disjoint segment that is the event's own end (sorted); in an
overlapping one (kernels of one stream that overlap, the Python tracer's events) it took an
int64 running maximum per event of those segments, built by the first window: 184 MB at a
10M-event GPU capture whose 24 stream and derived-op segments (23M rows) overlap.

Here the running maximum is kept at the end of each block of `BLOCK` events of a segment
(1/64 of that), and the rest is read from the ends: the first position whose running maximum
reaches a key is in the first block whose running maximum does (the maximum before it is
below the key), at its first event whose own end does; the running maximum at a position is
its block's predecessor's with the maximum of the ends from the block's first event to it.
Both answers are exactly the per-event array's.
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.trace.range_search import search_ranges

#: Events per block (the running maximum is kept at each block's last event).
BLOCK = 64


class RunningMaxEnds:
    """Per overlapping segment of an index, the running maximum of ends per block."""

    def __init__(self, end_ps: np.ndarray, segment_bounds: np.ndarray,
                 segment_disjoint: np.ndarray) -> None:
        self.end_ps = end_ps
        self.bounds = segment_bounds
        sizes = np.where(segment_disjoint, 0, np.diff(segment_bounds))
        blocks = -(-sizes // BLOCK)
        #: Per segment where its blocks begin in `block_max_ps` (nothing for a disjoint one).
        self.block_at = np.concatenate([[0], np.cumsum(blocks)]).astype(np.int64)
        self.block_max_ps = np.empty(int(blocks.sum()), np.int64)
        for s in np.flatnonzero(sizes).tolist():  # a loop per overlapping (track, depth)
            ends = end_ps[segment_bounds[s] : segment_bounds[s + 1]]
            here = self.block_max_ps[self.block_at[s] : self.block_at[s + 1]]
            whole = len(ends) // BLOCK
            if whole:
                ends[: whole * BLOCK].reshape(whole, BLOCK).max(axis=1, out=here[:whole])
            if whole < len(here):
                here[whole] = ends[whole * BLOCK :].max()
            np.maximum.accumulate(here, out=here)

    @property
    def nbytes(self) -> int:
        return int(self.block_max_ps.nbytes + self.block_at.nbytes)

    def first_reaching(self, segments: np.ndarray, key: int) -> np.ndarray:
        """Per overlapping segment of `segments`, the first position (an event id) whose
        running-maximum end is at least `key`, or the segment's end where none is."""
        segments = np.asarray(segments, np.int64)
        block_lo, block_hi = self.block_at[segments], self.block_at[segments + 1]
        block = search_ranges(self.block_max_ps, block_lo, block_hi, key, "left")
        found = block < block_hi
        result = self.bounds[segments + 1].astype(np.int64)
        if not found.any():
            return result
        segments, block = segments[found], block[found] - block_lo[found]
        first = self.bounds[segments] + block * BLOCK
        last = self.bounds[segments + 1] - 1
        # The first event of the block whose own end reaches the key (one is there).
        position = np.minimum(first[:, None] + np.arange(BLOCK), last[:, None])
        reaches = self.end_ps[position] >= key
        result[found] = position[np.arange(len(position)), np.argmax(reaches, axis=1)]
        return result

    def at(self, segments: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The running-maximum end at each of `positions` (event ids), each in its overlapping
        segment of `segments`."""
        segments = np.asarray(segments, np.int64)
        positions = np.asarray(positions, np.int64)
        offset = positions - self.bounds[segments]
        block = offset // BLOCK
        first = positions - offset % BLOCK
        maxima = self.end_ps[np.minimum(first[:, None] + np.arange(BLOCK),
                                        positions[:, None])].max(axis=1)
        before = block > 0
        earlier = self.block_max_ps[self.block_at[segments[before]] + block[before] - 1]
        maxima[before] = np.maximum(maxima[before], earlier)
        result: np.ndarray = maxima
        return result
