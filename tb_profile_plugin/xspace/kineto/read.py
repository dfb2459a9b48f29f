"""A Kineto file's bytes -> its JSON object and its events: gzip by magic, the size cap,
orjson.

`stream` reads the text a chunk at a time (a window of the bytes, or what gzip inflated of
them) and parses its events a slice at a time as they come in (split.py): the inflated text
is never held whole. A plain trace may also come as a `Source` (an open file: store.py passes
`fs.LocalFile`), read a chunk at a time, so the file's bytes are not held whole either. The
uncompressed text may be at most `max_bytes()`
(TB_PROFILE_KINETO_MAX_BYTES, default 2 GiB): a bigger file is refused before more than the
cap is read or inflated (docs/pytorch.md "Bounds").
Anything that is not a Kineto trace (not gzip nor JSON, a truncated gzip stream, JSON without
a `traceEvents` list) is UnreadableProfile with a sentence.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Protocol

import orjson

from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace.kineto import split
from tb_profile_plugin.xspace.producers.pytorch import TRACE_EVENTS_KEY

MAX_BYTES_ENV = "TB_PROFILE_KINETO_MAX_BYTES"
DEFAULT_MAX_BYTES = 2 * 2**30
GZIP_MAGIC = b"\x1f\x8b"


def max_bytes() -> int:
    """The most bytes of JSON text a trace may hold (TB_PROFILE_KINETO_MAX_BYTES)."""
    text = os.environ.get(MAX_BYTES_ENV, "")
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_MAX_BYTES


def _too_big(what: str) -> UnreadableProfile:
    return UnreadableProfile(
        f"the trace {what} more than {max_bytes():,} bytes of JSON, the most that is read "
        f"({MAX_BYTES_ENV} raises the limit; decoding needs about 4 bytes of memory per byte "
        "of JSON)")


def inflate(data: bytes) -> bytes:
    """The JSON text: `data` itself, or inflated when it starts with gzip's magic bytes."""
    cap = max_bytes()
    if not data.startswith(GZIP_MAGIC):
        if len(data) > cap:
            raise _too_big("holds")
        return data
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        text = inflater.decompress(data, cap + 1)
    except zlib.error as exc:
        raise UnreadableProfile(
            f"the file starts like gzip but does not inflate ({exc}): it is damaged or not a "
            ".pt.trace.json.gz written by PyTorch") from None
    if len(text) > cap or inflater.unconsumed_tail:
        raise _too_big("inflates to")
    if not inflater.eof:
        raise UnreadableProfile(
            f"the gzip stream is truncated (it ends after {len(text):,} bytes of JSON): the "
            "trace was not written to the end; capture it again")
    return text


class Source(Protocol):
    """A plain (not gzip) trace's text in a file opened once (fs.LocalFile): its size when
    opened, read from its start a chunk at a time (`chunks`, as often as asked) or whole
    (`read_all`: the `Reparse` fallback). Its reading errors are OSError (the caller's)."""

    size_bytes: int

    def chunks(self, size: int) -> Iterator[bytes]: ...

    def read_all(self) -> bytes: ...


class Stream:
    """A trace's events a slice at a time (`slices`) and, once they have all been read, its
    JSON object without them (`doc`)."""

    def __init__(self, data: bytes | Source) -> None:
        self.data = data
        self.doc: dict = {}

    def slices(self) -> Iterator[list]:
        """The parsed slices of `traceEvents`. Reparse (after some were handed out) when the
        text is not an object with a `traceEvents` array: the caller starts over with
        `whole`."""
        size = split.SLICE_BYTES  # (read here: tests lower it)
        chunks = _chunks(self.data)
        first = b"".join(_upto(chunks, size + 1))
        if len(first) <= size:  # a small text: parsed whole
            self.doc, events = parse(first)
            yield from events
            return
        scanner = split.Scanner(size)
        try:
            for piece in scanner.slices(chain((first,), chunks)):
                parsed = _loads(piece)
                if not isinstance(parsed, list):  # (a slice of elements parses as a list)
                    raise UnreadableProfile("the file's traceEvents are not a JSON list")
                yield parsed
                del parsed
        except split.NotSliced:
            raise Reparse from None
        doc = _loads(scanner.doc)
        if not isinstance(doc, dict) or doc.get(TRACE_EVENTS_KEY) != []:
            raise Reparse
        del doc[TRACE_EVENTS_KEY]
        self.doc = doc


class Reparse(Exception):
    """The streamed text is not one object with a `traceEvents` array: parse it whole."""


def whole(data: bytes | Source) -> tuple[dict, Iterable[list]]:
    """`parse` of the whole (inflated) text; a `Source` is read whole again (within the cap)."""
    if not isinstance(data, (bytes, bytearray)):
        if data.size_bytes > max_bytes():
            raise _too_big("holds")
        data = data.read_all()
    return parse(inflate(data))


def _chunks(data: bytes | Source) -> Iterator[bytes | memoryview]:
    """The JSON text a window at a time: views of `data`, chunks read from a `Source`, or
    gzip inflated a window at a time; the size cap and gzip's errors as `inflate`'s (a
    `Source` over the cap is refused before it is read, or once it grew past it)."""
    cap = max_bytes()
    window = split._WINDOW
    if not isinstance(data, (bytes, bytearray)):
        if data.size_bytes > cap:
            raise _too_big("holds")
        total = 0
        for chunk in data.chunks(min(window, cap + 1)):
            total += len(chunk)
            if total > cap:
                raise _too_big("holds")
            yield chunk
        return
    if not data.startswith(GZIP_MAGIC):
        if len(data) > cap:
            raise _too_big("holds")
        view = memoryview(data)
        for lo in range(0, len(data), window):
            yield view[lo : lo + window]
        return
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    pending: bytes | memoryview = data
    total = 0
    while not inflater.eof:
        try:
            text = inflater.decompress(pending, window)
        except zlib.error as exc:
            raise UnreadableProfile(
                f"the file starts like gzip but does not inflate ({exc}): it is damaged or "
                "not a .pt.trace.json.gz written by PyTorch") from None
        pending = inflater.unconsumed_tail
        total += len(text)
        if total > cap:
            raise _too_big("inflates to")
        if not text and not pending:
            raise UnreadableProfile(
                f"the gzip stream is truncated (it ends after {total:,} bytes of JSON): the "
                "trace was not written to the end; capture it again")
        if text:
            yield text


def _upto(chunks: Iterator[bytes | memoryview], size: int) -> Iterator[bytes | memoryview]:
    """Chunks from `chunks` until they hold `size` bytes or more (or none is left)."""
    held = 0
    for chunk in chunks:
        yield chunk
        held += len(chunk)
        if held >= size:
            return


def parse(text: bytes) -> tuple[dict, Iterable[list]]:
    """(the JSON object without its events, the `traceEvents` list in slices, each parsed
    when the caller asks for it). A text over `split.SLICE_BYTES` is parsed a slice of events
    at a time (split.py: the caller drops each slice's dicts before the next is parsed); a
    bare JSON array of events (Chrome's other trace form) is the events of no object."""
    if not text.strip():
        raise UnreadableProfile("the file is empty: the trace was not written")
    size = split.SLICE_BYTES  # (read here: tests lower it)
    found = split.event_slices(text, size) if len(text) > size else None
    if found is not None:
        start, end, slices = found
        doc = _loads(text[:start] + text[end:])
        if isinstance(doc, dict) and doc.get(TRACE_EVENTS_KEY) == []:
            del doc[TRACE_EVENTS_KEY]
            return doc, _slices(text, slices)
    doc = _loads(text)
    if isinstance(doc, list):
        return {}, [doc]
    if not isinstance(doc, dict):
        raise UnreadableProfile(
            "the file is JSON but not a trace object: a .pt.trace.json holds an object with a "
            f"{TRACE_EVENTS_KEY!r} list")
    events = doc.pop(TRACE_EVENTS_KEY, None)
    if not isinstance(events, list):
        raise UnreadableProfile(
            f"the JSON object has no {TRACE_EVENTS_KEY!r} list: it is not a PyTorch (Kineto) "
            "trace")
    return doc, [events]


def _loads(text: bytes | memoryview) -> object:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise UnreadableProfile(
            f"the file is not valid JSON ({exc}): it is truncated or not a .pt.trace.json "
            "written by PyTorch") from None


def _slices(text: bytes, slices: list[tuple[int, int]]) -> Iterator[list]:
    view = memoryview(text)
    for lo, hi in slices:
        events = _loads(b"".join((b"[", view[lo:hi], b"]")))
        if not isinstance(events, list):  # (a slice of elements parses as a list)
            raise UnreadableProfile("the file's traceEvents are not a JSON list")
        yield events
        del events
