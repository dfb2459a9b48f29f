"""Columns that grow a slice of events at a time, held once.

Joining per-slice arrays at the end of a decode held every column twice at that moment (the
parts and the joined copy; the parts' freed memory mostly stays in the C heap), which was
the peak of a 1 GB trace's decode (docs/pytorch.md "Figures"). A `Growing` column is one
buffer, enlarged in place by a quarter (`ndarray.resize`: realloc, which moves a large block's
pages without copying them) and cut to its length at the end. Its buffer is never handed out
before `result`, so no view can see it move.
"""

from __future__ import annotations

import numpy as np

_GROWTH = 1.25
_FIRST = 1 << 16


class Growing:
    """An append-only column of one dtype."""

    def __init__(self, dtype: type | np.dtype) -> None:
        self.buffer = np.zeros(0, dtype)
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def extend(self, values: np.ndarray) -> None:
        end = self.size + len(values)
        if end > len(self.buffer):
            capacity = max(end, int(len(self.buffer) * _GROWTH), _FIRST)
            self.buffer.resize(capacity, refcheck=False)
        self.buffer[self.size : end] = values
        self.size = end

    def result(self) -> np.ndarray:
        """The column (its buffer cut to its length; the Growing is empty after)."""
        out = self.buffer
        out.resize(self.size, refcheck=False)
        self.buffer = np.zeros(0, out.dtype)
        self.size = 0
        return out
