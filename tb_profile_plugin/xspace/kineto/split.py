"""Where a trace's `traceEvents` array holds its events, to parse them a slice at a time
while the text streams in.

orjson parses a whole document at once: every event becomes a dict, and a decode holds all of
them (about 6 bytes of memory per byte of JSON). `Scanner` reads the text a chunk at a time
(a window of the file, or what gzip inflated): it finds with numpy (the string state, escapes
and depth carried from one chunk to the next) the `traceEvents` array of the top-level object
and the commas between its elements, and hands out slices of about `SLICE_BYTES` of whole
elements as soon as their text is in. It holds the text from the start of the slice being
filled (at most a slice and a chunk), and the object's text around the array. Whatever this
scan gets wrong fails orjson's parse of a slice (no element is ever cut in two silently: a
slice that does not parse as a list of values raises), and a text that turns out not to be
such an object (`NotSliced` at its end) is parsed whole by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import numpy as np

from tb_profile_plugin.xspace.producers.pytorch import TRACE_EVENTS_KEY

SLICE_BYTES = 4 << 20  # (16 MiB: +33 MiB at the peak of a 92 MB trace; docs/pytorch.md)
_WINDOW = 4 << 20  # bytes of text scanned (and read, or inflated) at a time
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPEN = (ord("{"), ord("["))
_CLOSE = (ord("}"), ord("]"))
_COMMA, _BRACKET, _END_BRACKET = ord(","), ord("["), ord("]")
_KEY_BEFORE = re.compile(rb'"' + re.escape(TRACE_EVENTS_KEY.encode()) + rb'"\s*:\s*$')


class NotSliced(Exception):
    """The text is not an object with a `traceEvents` array (or not JSON): parse it whole."""


class _Marks:
    """The structural bytes of a text scanned a chunk at a time: per chunk, the `[` that open
    a value of the top-level object, the `]` that close one, and the commas between the
    elements of such an array (absolute offsets)."""

    def __init__(self) -> None:
        self.in_string = False
        self.backslashes = 0  # trailing backslashes of the chunk before
        self.depth = 0

    def scan(self, b: np.ndarray, lo: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(b)
        quotes = np.flatnonzero(b == _QUOTE)
        escaping = b == _BACKSLASH
        backslashes = self.backslashes
        if escaping.any() or backslashes:  # a quote after an odd run of backslashes is text
            position = np.arange(n, dtype=np.int64)
            last = np.maximum.accumulate(np.where(escaping, -1, position))
            before = np.maximum(quotes - 1, 0)
            run = np.where(quotes > 0, quotes - 1 - last[before], 0)
            run = np.where((quotes == 0) | (last[before] < 0), run + backslashes, run)
            real = quotes[run % 2 == 0]
            tail = n - 1 - int(last[-1])
            self.backslashes = tail + backslashes if last[-1] < 0 else tail
            del position, last
        else:
            real = quotes
        # Only the structural bytes matter: their string state is the parity of the quotes
        # before them, their depth a cumulative sum over them alone.
        marks = np.flatnonzero((b == _COMMA) | (b == _BRACKET) | (b == _END_BRACKET)
                               | (b == _OPEN[0]) | (b == _CLOSE[0]))
        inside = (np.searchsorted(real, marks) + self.in_string) % 2 == 1
        marks = marks[~inside]
        kinds = b[marks]
        delta = np.where((kinds == _OPEN[0]) | (kinds == _BRACKET), 1,
                         np.where((kinds == _CLOSE[0]) | (kinds == _END_BRACKET), -1, 0))
        level = np.cumsum(delta, dtype=np.int64) + self.depth  # depth after each mark
        self.in_string = bool((len(real) + self.in_string) % 2)
        self.depth = int(level[-1]) if len(level) else self.depth
        return (marks[(kinds == _BRACKET) & (level == 2)] + lo,
                marks[(kinds == _END_BRACKET) & (level == 1)] + lo,
                marks[(kinds == _COMMA) & (level == 2)] + lo)


class Scanner:
    """Slices of the `traceEvents` array of a text fed a chunk at a time (`slices`); `doc` is
    the object's text without the array's elements (`{..."traceEvents": [] ...}`) once the
    text has all been read."""

    def __init__(self, slice_bytes: int) -> None:
        self.slice_bytes = slice_bytes
        self.doc = b""

    def slices(self, chunks: Iterable[bytes | memoryview]) -> Iterator[memoryview]:
        """Each slice's text as `[elements]` (a view, valid until the next is asked for).
        NotSliced at the end of a text that is not such an object."""
        marks = _Marks()
        held = bytearray()  # the text from offset `lo` on: the doc, or the slice being filled
        lo = 0
        start = end = -1  # the array's `[` and `]`
        begin = -1  # where the slice being filled starts (held[0] is the byte before it)
        suffix = bytearray()
        at = 0
        for chunk in chunks:
            b = np.frombuffer(chunk, np.uint8)
            opens, closes, commas = marks.scan(b, at)
            chunk_lo, at = at, at + len(b)
            if end >= 0:  # after the array: the rest of the object
                suffix += chunk
                continue
            held += chunk
            if start < 0:
                for candidate in opens.tolist():
                    if _KEY_BEFORE.search(bytes(held[max(0, candidate - 64) : candidate])):
                        start = begin = candidate + 1
                        break
                if start < 0:
                    continue
                self.doc = bytes(held[: start])
                del held[: start - 1]
                lo = start - 1
            closing = closes[closes >= begin]
            if len(closing):
                end = int(closing[0])
                commas = commas[commas < end]
            commas = commas[commas >= begin]
            while True:
                k = int(np.searchsorted(commas, begin + self.slice_bytes))
                if k < len(commas):
                    cut = int(commas[k])
                elif end >= 0:
                    cut = end
                else:
                    break
                if cut <= begin and cut == end:  # (nothing left before the `]`)
                    break
                # held[0] is the separator before the slice: made `[`, the one after `]`.
                held[0], held[cut - lo] = _BRACKET, _END_BRACKET
                with memoryview(held) as view, view[: cut - lo + 1] as piece:
                    yield piece
                del held[: cut - lo]
                lo = cut
                begin = cut + 1
                if cut == end:
                    break
            if end >= 0:
                suffix += memoryview(chunk)[end - chunk_lo :]
                held = bytearray()
        if marks.in_string or marks.depth != 0 or start < 0 or end < 0:
            raise NotSliced
        self.doc += bytes(suffix)  # (from the array's `]` on)


def event_slices(text: bytes, slice_bytes: int = SLICE_BYTES
                 ) -> tuple[int, int, list[tuple[int, int]]] | None:
    """(start, end) of the `traceEvents` array's inside in a whole text, and the (start, end)
    of slices of it that each hold whole elements (`Scanner`'s cuts); None when the text is
    not such an object."""
    view = memoryview(text)
    marks = _Marks()
    opens: list[int] = []
    closes: list[int] = []
    commas: list[np.ndarray] = []
    for lo in range(0, len(text), _WINDOW):
        found = marks.scan(np.frombuffer(view[lo : lo + _WINDOW], np.uint8), lo)
        opens.extend(found[0].tolist())
        closes.extend(found[1].tolist())
        commas.append(found[2])
    if marks.in_string or marks.depth != 0:
        return None
    start = next((at for at in opens
                  if _KEY_BEFORE.search(bytes(view[max(0, at - 64) : at]))), -1)
    end = next((at for at in closes if at > start), -1) if start >= 0 else -1
    if end < 0:
        return None
    separators = np.concatenate(commas) if commas else np.zeros(0, np.int64)
    separators = separators[(separators > start) & (separators < end)]
    slices: list[tuple[int, int]] = []
    begin = start + 1
    while begin < end:
        k = int(np.searchsorted(separators, begin + slice_bytes))
        cut = int(separators[k]) if k < len(separators) else end
        slices.append((begin, cut))
        begin = cut + 1
    return start + 1, end, slices
