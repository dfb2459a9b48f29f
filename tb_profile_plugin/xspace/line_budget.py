"""The byte budget of a decode's large lines walked side by side (decode.py), and the memory
their bytes are read into, reused from one line to the next."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np

#: Lines of this many bytes or more are walked together only while their bytes add up to at
#: most `LARGE_LINES_IN_FLIGHT_BYTES`, and one larger than that while no other such line is
#: (decode.py `_decode_planes`, `LineBudget`): their bytes, columns and temporaries are the
#: decode's peak (an 8-GPU capture's stream of 1M kernels: 123 MB of bytes, 164 MB at the
#: walk's peak). Two of those at once take the 10M-event capture's open from 3.4 to 2.0 s and its
#: peak from 561 to 640 MB, still half the analyses' peak that follows; a 2M one's 20 MB
#: streams walked side by side take it from 0.65 to 0.42 s.
LARGE_LINE_BYTES = 8 << 20
LARGE_LINES_IN_FLIGHT_BYTES = 256 << 20


class LineBudget:
    """Admits large lines' walks while the bytes of those in flight, and the spare memory kept
    for the next, stay within the budget (one line over it alone); small lines never wait.

    `walking(size)` yields the memory a large line's bytes are read into (`FileBytes.
    read_into`): the spare memory of a line walked before where it is at most twice as large,
    else fresh. Fresh bytes for each of the 10M-event 8-GPU capture's 117 MB streams cost more
    in page faults than walking them (0.85 s against 0.14 s of reading, serial). Spare memory
    is the budget's, never a thread's (a thread with no more lines would hold it while others
    wait), and is dropped first when a line needs room; the callers hand the lines largest
    first, so spare memory over twice a line's size, or left when the small lines come, fits
    no later line and is let go; the rest goes with the budget (the decode).
    Only for walks whose results hold nothing of the line's bytes: the decoders copy what they
    keep (tested on every committed capture)."""

    def __init__(self, budget_bytes: int) -> None:
        self._budget = budget_bytes
        self._in_flight = 0
        self._spare: list[np.ndarray] = []  # uint8
        self._ready = threading.Condition()

    @contextlib.contextmanager
    def walking(self, size: int, reuse: bool = True) -> Iterator[np.ndarray | None]:
        """Admits a line of `size` bytes and yields the memory to read it into: for a large
        line of a file read by ranges (`reuse`), the budget's (above); else None (a small
        line reads fresh bytes; bytes in memory are read as views, into nothing)."""
        if size < LARGE_LINE_BYTES:
            if self._spare:  # (the lines come largest first: no later line needs it)
                with self._ready:
                    self._spare.clear()
            yield None
            return
        with self._ready:
            memory = self._admit(size, reuse)
        try:
            if reuse and memory is None:
                memory = np.empty(size, np.uint8)  # (not zeroed: the read fills what is read)
            yield memory
        finally:
            with self._ready:
                self._in_flight -= len(memory) if memory is not None else size
                if memory is not None:
                    self._spare.append(memory)
                    self._trim(0)
                self._ready.notify_all()

    def _admit(self, size: int, reuse: bool) -> np.ndarray | None:
        """(Under the lock.) A spare memory of `size` to twice that, moved to the line's
        bytes in flight (what is held does not grow), else room for `size` fresh bytes once
        it fits (None): spare memory dropped first, then waiting for lines in flight."""
        while True:
            # (the lines come largest first: spare memory over twice this one fits no later one)
            self._spare = [memory for memory in self._spare if len(memory) <= 2 * size]
            for k, memory in enumerate(self._spare):
                if reuse and size <= len(memory):
                    del self._spare[k]
                    self._in_flight += len(memory)
                    return memory
            self._trim(size)
            if self._in_flight == 0 or self._in_flight + size <= self._budget:
                self._in_flight += size
                return None
            self._ready.wait()

    def _trim(self, size: int) -> None:
        """(Under the lock.) Drops spare memory until `size` more fits with it."""
        while self._spare and (self._in_flight + sum(map(len, self._spare)) + size
                               > self._budget):
            self._spare.pop(0)

    def held(self) -> int:
        """The bytes of the lines in flight and of the spare memory (for tests)."""
        with self._ready:
            return self._in_flight + sum(map(len, self._spare))
