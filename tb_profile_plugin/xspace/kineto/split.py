"""Where a trace's `traceEvents` array holds its events, to parse them a slice at a time.

orjson parses a whole document at once: every event becomes a dict, and a decode holds all of
them (about 6 bytes of memory per byte of JSON). `event_slices` finds, with numpy over the
text a window at a time (the string state, escapes and depth carried from one window to the
next), the `traceEvents` array of the top-level object and the commas between its elements;
the caller parses the rest of the object alone and the events in slices of about
`SLICE_BYTES`, dropping each slice's dicts once it is turned into columns. Whatever this scan
gets wrong fails orjson's parse of a slice (no element is ever cut in two silently: a slice
that does not parse as a list of values raises), and the caller then parses the whole text.
"""

from __future__ import annotations

import re

import numpy as np

from tb_profile_plugin.xspace.producers.pytorch import TRACE_EVENTS_KEY

SLICE_BYTES = 4 << 20  # (16 MiB: +33 MiB at the peak of a 92 MB trace; docs/pytorch.md)
_WINDOW = 4 << 20
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPEN = (ord("{"), ord("["))
_CLOSE = (ord("}"), ord("]"))
_COMMA, _BRACKET, _END_BRACKET = ord(","), ord("["), ord("]")
_KEY_BEFORE = re.compile(rb'"' + re.escape(TRACE_EVENTS_KEY.encode()) + rb'"\s*:\s*$')


def event_slices(text: bytes, slice_bytes: int = SLICE_BYTES
                 ) -> tuple[int, int, list[tuple[int, int]]] | None:
    """(start, end) of the `traceEvents` array's inside, and the (start, end) of slices of
    it that each hold whole elements; None when the text is not such an object (the caller
    parses it whole)."""
    view = memoryview(text)
    in_string = False
    backslashes = 0  # trailing backslashes of the window before
    depth = 0
    opens: list[int] = []  # '[' that start a value of the top-level object
    closes: list[int] = []  # ']' that end one
    commas: list[np.ndarray] = []  # commas between elements of such an array
    for lo in range(0, len(text), _WINDOW):
        b = np.frombuffer(view[lo : lo + _WINDOW], np.uint8)
        n = len(b)
        quotes = np.flatnonzero(b == _QUOTE)
        escaping = b == _BACKSLASH
        if escaping.any() or backslashes:  # a quote after an odd run of backslashes is text
            position = np.arange(n, dtype=np.int64)
            last = np.maximum.accumulate(np.where(escaping, -1, position))
            before = np.maximum(quotes - 1, 0)
            run = np.where(quotes > 0, quotes - 1 - last[before], 0)
            run = np.where((quotes == 0) | (last[before] < 0), run + backslashes, run)
            real = quotes[run % 2 == 0]
            tail = n - 1 - int(last[-1])
            backslashes = tail + backslashes if last[-1] < 0 else tail
            del position, last
        else:
            real = quotes
        # Only the structural bytes matter: their string state is the parity of the quotes
        # before them, their depth a cumulative sum over them alone.
        marks = np.flatnonzero((b == _COMMA) | (b == _BRACKET) | (b == _END_BRACKET)
                               | (b == _OPEN[0]) | (b == _CLOSE[0]))
        inside = (np.searchsorted(real, marks) + in_string) % 2 == 1
        marks = marks[~inside]
        kinds = b[marks]
        delta = np.where((kinds == _OPEN[0]) | (kinds == _BRACKET), 1,
                         np.where((kinds == _CLOSE[0]) | (kinds == _END_BRACKET), -1, 0))
        level = np.cumsum(delta, dtype=np.int64) + depth  # depth after each mark
        opens.extend((marks[(kinds == _BRACKET) & (level == 2)] + lo).tolist())
        closes.extend((marks[(kinds == _END_BRACKET) & (level == 1)] + lo).tolist())
        commas.append(marks[(kinds == _COMMA) & (level == 2)] + lo)
        in_string = bool((len(real) + in_string) % 2)
        depth = int(level[-1]) if len(level) else depth
    if in_string or depth != 0:
        return None
    start = next((at for at in opens
                  if _KEY_BEFORE.search(bytes(view[max(0, at - 64) : at]))), -1)
    if start < 0:
        return None
    end = next((at for at in closes if at > start), -1)
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
