"""Decode one Kineto Chrome-trace JSON (PyTorch's `.pt.trace.json[.gz]`) into a `Profile`.

Stages (request_budget.checkpoint() between them): the text read, or inflated, and parsed a
slice of events at a time (read.py, split.py), each slice's kept events' fields as columns
and their `args` as stat rows (fields.py) before the next is parsed, what the decoder derives
(launching ops, flows, steps, allocator events, kernel details: joins.py), then planes and
lines (planes.py). The mapping is docs/pytorch.md; every PyTorch name is in
xspace/producers/pytorch.py.
"""

from __future__ import annotations

import gc
import math

import numpy as np

from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.memory_release import release_now
from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.xspace.decode import MAX_SPAN_PS
from tb_profile_plugin.xspace.kineto import fields as fl
from tb_profile_plugin.xspace.kineto import planes, read
from tb_profile_plugin.xspace.kineto.derive import DecodedEvents
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import pytorch as pt


def decode_kineto(data: bytes | read.Source) -> Profile:
    """The profile of one Kineto trace (bytes, gzip or not; or a plain trace's open file,
    read.py `Source`, read a chunk at a time). UnreadableProfile for anything that is not one,
    or is over the size cap (read.py); a `Source`'s reading errors are its own (OSError).

    The cyclic garbage collector is paused meanwhile (where it ran): parsing creates millions
    of dicts and lists, none in a cycle, and each collection would walk all of them (a third
    of the decode's time; docs/pytorch.md "Figures")."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _decode(data)
    finally:
        if paused:
            gc.enable()


def _decode(data: bytes | read.Source) -> Profile:
    stream = read.Stream(data)
    try:
        stat_names = fl.Interner()
        f, rows = fl.read_fields(stream.slices(), stat_names)
        doc = stream.doc
    except read.Reparse:  # (not one object with a traceEvents array: read.py)
        del stream
        doc, slices = read.whole(data)
        stat_names = fl.Interner()
        f, rows = fl.read_fields(slices, stat_names)
        del slices
    release_now()  # (the parsed slices' freed heap, before the columns derived from them)
    checkpoint()
    d = DecodedEvents(f, rows, stat_names)
    start_ps, dur_ps, origin_ns = _times(f, doc)
    d.start_ps, d.end_ps = start_ps, start_ps + dur_ps
    del start_ps
    # (each derivation's temporaries given back: the next does not stack on them)
    for derive in (d.launching_ops, d.steps, d.memory, d.kernel_details):
        derive()
        release_now()
    flow_ps = _flow_ps(f, doc, origin_ns)
    d.flows(flow_ps)
    d.drop_derivations()
    del flow_ps
    release_now()
    checkpoint()
    built = planes.build(d, doc, dur_ps, origin_ns)
    warnings = [f"{count:,} {reason} were dropped" for reason, count in f.dropped.items()
                if count]
    del d, f, rows, dur_ps
    release_now()  # (what the decode freed, not kept by the allocator for the next request)
    host_name = doc.get(pt.HOST_NAME_KEY)
    return Profile(planes=built, hostnames=[host_name] if isinstance(host_name, str) else [],
                   errors=[], warnings=warnings, origin_ns=origin_ns, decoder="kineto")


def _times(f: fl.Fields, doc: dict) -> tuple[np.ndarray, np.ndarray, int]:
    """(starts in ps from the origin, durations in ps, origin in ns): µs rounded to the ns."""
    if not len(f):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), _base_ns(doc, 0)
    base_us = math.floor(float(f.ts_us.min()))
    offset_ns = np.rint((f.ts_us - base_us) * 1e3)
    dur_ns = np.rint(f.dur_us * 1e3)
    limit_ns = MAX_SPAN_PS / 1000
    if float(offset_ns.max()) > limit_ns or float((offset_ns + dur_ns).max()) > limit_ns:
        raise UnreadableProfile(
            f"events lie more than {MAX_SPAN_PS / 1e12 / 86_400:.1f} days apart (ts or dur far "
            "out of range): the trace is corrupt or was not written by PyTorch's profiler")
    return (offset_ns.astype(np.int64) * 1000, dur_ns.astype(np.int64) * 1000,
            _base_ns(doc, base_us))


def _base_ns(doc: dict, base_us: int) -> int:
    """The origin in ns: `baseTimeNanoseconds` (Kineto's offset to the epoch) + the first ts."""
    base = doc.get(pt.BASE_TIME_KEY)
    shift = base if isinstance(base, int) and not isinstance(base, bool) and base >= 0 else 0
    total = shift + base_us * 1000
    return total if total < 2**62 else base_us * 1000


def _flow_ps(f: fl.Fields, doc: dict, origin_ns: int) -> np.ndarray:
    """The flows' times in ps from the origin (the events' rounding)."""
    base = doc.get(pt.BASE_TIME_KEY)
    shift = base if isinstance(base, int) and not isinstance(base, bool) and base >= 0 else 0
    base_us = (origin_ns - shift) / 1000 if origin_ns - shift < 2**62 else origin_ns / 1000
    offset_ns = np.rint((f.flows.ts_us - base_us) * 1e3)
    # A point far out of range (or not a number) binds to no event: it is put before them all.
    limit_ns = MAX_SPAN_PS / 1000
    offset_ns[~(np.abs(offset_ns) <= limit_ns)] = -limit_ns
    return offset_ns.astype(np.int64) * 1000
