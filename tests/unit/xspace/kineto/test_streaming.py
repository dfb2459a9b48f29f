"""The Kineto decoder reads a trace a chunk at a time (read.py `Stream`, split.py `Scanner`):
plain or gzip, whatever the chunk and slice sizes (escapes, strings and elements cut at chunk
edges), the profile is the one of a whole parse; the inflated text is never held whole, and
the decode's peak allocation follows the profile, not the text (docs/pytorch.md "Bounds")."""

from __future__ import annotations

import gzip
import hashlib
import json
import pickle
import tracemalloc

import pytest

from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace.kineto import decode_kineto, read, split
from tb_profile_plugin.xspace.model import Profile
from tests.kineto_builder import gpu_training_step_trace, many_steps_trace_bytes
from tests.unit.xspace.kineto.slices import small_slices


def _digest(profile: Profile) -> str:
    return hashlib.sha256(pickle.dumps(profile, protocol=5)).hexdigest()


def _escaped_trace(variant: str) -> bytes:
    """The builder's GPU step trace with names and args full of escapes, quotes, brackets and
    runs of backslashes (odd and even), written with Kineto's `indent=1`."""
    trace = gpu_training_step_trace(variant)
    for k in range(40):
        trace.events.append({
            "ph": "X", "cat": "cpu_op", "name": f'op "{k}" \\ [x], {{y}}' + "\\" * (k % 5),
            "pid": 4242, "tid": 4242, "ts": trace._ts(5000 + k), "dur": 1,
            "args": {"Input Dims": [[1, k], []], "s": "\\" * k + '"],{' + "\\" * (k % 3),
                     "u": "é\u2028\t\n", "External id": 900 + k}})
    return json.dumps(trace.to_dict(), indent=1).encode()


@pytest.mark.parametrize("variant", ["2.x", "2021"])
def test_streaming_in_tiny_chunks_decodes_the_same_profile(
        monkeypatch: pytest.MonkeyPatch, variant: str) -> None:
    raw = _escaped_trace(variant)
    assert raw.count(b"\\\\") > 100 and len(raw) < split.SLICE_BYTES
    whole = _digest(decode_kineto(raw))  # (under SLICE_BYTES: one parse of the whole text)
    packed = gzip.compress(raw)
    for slice_bytes, window in ((1, 13), (100, 5), (997, 64), (7919, 4096)):
        monkeypatch.setattr(split, "SLICE_BYTES", slice_bytes)
        monkeypatch.setattr(split, "_WINDOW", window)
        for data in (raw, packed):
            stream = read.Stream(data)
            slices = [len(events) for events in stream.slices()]
            assert len(slices) >= (10 if slice_bytes < 1000 else 3), slices
            assert stream.doc.get("schemaVersion") == 1
            assert _digest(decode_kineto(data)) == whole, (slice_bytes, window, data[:2])


def test_streamed_errors_and_texts_that_are_not_one_object(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A text found not to be an object with `traceEvents` once slices were handed out is
    parsed whole (`Reparse`); gzip's errors and the size cap stay as before streaming."""
    monkeypatch.setattr(split, "SLICE_BYTES", 50)
    monkeypatch.setattr(split, "_WINDOW", 16)
    raw = _escaped_trace("2.x")
    events = json.dumps(json.loads(raw)["traceEvents"]).encode()  # Chrome's bare array
    assert decode_kineto(events).num_events == decode_kineto(raw).num_events
    with pytest.raises(UnreadableProfile, match="not valid JSON"):
        decode_kineto(raw[: len(raw) // 2])
    with pytest.raises(UnreadableProfile, match="not valid JSON"):
        decode_kineto(raw[: len(raw) // 2] + b"]}")
    with pytest.raises(UnreadableProfile, match="gzip stream is truncated"):
        decode_kineto(gzip.compress(raw)[: len(raw) // 20])
    monkeypatch.setenv(read.MAX_BYTES_ENV, str(len(raw) - 1))
    with pytest.raises(UnreadableProfile, match="inflates to more than"):
        decode_kineto(gzip.compress(raw))


def test_peak_allocation_follows_the_profile_not_the_text(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A ~20 MB gzip trace decodes with at most the profile's size and a few slices' worth
    allocated at any time (tracemalloc): the inflated text is never held (it was: +20 MB), nor
    the columns or stat rows twice (joined from parts, sorted into lines)."""
    raw = many_steps_trace_bytes(900)
    assert 18e6 < len(raw) < 25e6
    packed = gzip.compress(raw, 1)
    del raw
    slice_bytes = 256 << 10
    small_slices(monkeypatch, slice_bytes)
    tracemalloc.start()
    try:
        profile = decode_kineto(packed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert profile.num_events == 900 * 50  # (a step, its GPU span, 8 x 6 events)
    # The profile as its stat rows are while they are sorted into lines (sparse: 18 bytes a
    # row; once in lines they are coded densely, dense_stats.py), its events, and a slice's
    # dicts. Here 33.9 MB for 12.3 MB so counted (2.8 MB held dense); 54.9 MB before
    # streaming (the 20.6 MB text held).
    held = sum(line.events.nbytes + line.stats.sparse(len(line.events)).nbytes
               for plane in profile.planes for line in plane.lines)
    assert profile.nbytes < held / 3
    assert peak < 2.5 * held + 32 * slice_bytes, (peak, held)
