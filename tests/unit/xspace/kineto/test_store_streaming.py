"""The store hands the Kineto decoder a local plain trace's file, read a chunk at a time
(store.py `open_profile`, fs.py `LocalFile`, read.py `Source`), never its whole bytes: the
profile is the one decoded from the bytes, the file is never held whole, and `fs.read_bytes`'
checks and errors, the Kineto size cap and the `Reparse` fallback stay (docs/pytorch.md
"Bounds")."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import pickle
import shutil
import tracemalloc
from pathlib import Path

import pytest

from tb_profile_plugin import fs
from tb_profile_plugin.errors import NotFound, UnreadableProfile
from tb_profile_plugin.xspace import store
from tb_profile_plugin.xspace.kineto import decode_kineto, read, split
from tb_profile_plugin.xspace.model import Profile
from tests.kineto_builder import many_steps_trace_bytes
from tests.unit.xspace.kineto.slices import small_slices

DATA = Path(__file__).resolve().parents[3] / "data"
#: A committed capture (two ranks of gloo all-reduce training, PyTorch 2.x, plain JSON).
REAL = next((DATA / "pytorch_gloo_2ranks" / "run0").glob("rank0.*.pt.trace.json"))


def _digest(profile: Profile) -> str:
    """(`replace`: without what a store adds, its derived results' bookkeeping)"""
    return hashlib.sha256(pickle.dumps(dataclasses.replace(profile), protocol=5)).hexdigest()


def _no_whole_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fs.read_bytes` and `LocalFile.read_all` fail: the file may only be read in chunks."""
    def refuse(*_: object, **__: object) -> bytes:
        raise AssertionError("the plain trace was read whole")

    monkeypatch.setattr(fs, "read_bytes", refuse)
    monkeypatch.setattr(fs.LocalFile, "read_all", refuse)


def _decode_from_store(path: Path) -> Profile:
    with store.open_profile(str(path)) as data:
        assert isinstance(data, fs.LocalFile)
        return store.decode_profile_bytes(str(path), data)


def test_real_capture_decoded_from_its_file_in_chunks_is_the_profile_of_its_bytes(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    raw = REAL.read_bytes()
    whole = _digest(decode_kineto(raw))
    _no_whole_read(monkeypatch)
    assert _digest(_decode_from_store(REAL)) == whole  # (one slice: under SLICE_BYTES)
    small_slices(monkeypatch, 64 << 10, 10_007)  # (chunks cut events and strings)
    chunks = []
    original = fs.LocalFile.chunks
    monkeypatch.setattr(fs.LocalFile, "chunks",
                        lambda self, size: (chunks.append(size) or original(self, size)))
    assert _digest(_decode_from_store(REAL)) == whole
    assert chunks == [10_007]
    # Through ProfileStore.open (its decode, not a cache): the same profile.
    decoded = store.ProfileStore(disk_cache_dir=tmp_path / "cache").open(str(REAL))
    assert _digest(decoded) == whole


def test_the_file_is_never_held_whole(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tracemalloc's peak of decoding the ~12 MB file through the store is that of decoding
    its bytes already held, plus a few chunks: not plus the file (as when it was read whole)."""
    raw = many_steps_trace_bytes(500)
    assert 10e6 < len(raw) < 15e6
    path = tmp_path / "big.pt.trace.json"
    path.write_bytes(raw)
    window = 256 << 10
    small_slices(monkeypatch, window)
    tracemalloc.start()
    try:
        held = decode_kineto(raw)
        peak_bytes_held = tracemalloc.get_traced_memory()[1]
        digest = _digest(held)
        del held
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        with store.open_profile(str(path)) as data:
            profile = store.decode_profile_bytes(str(path), data)
        peak_streamed = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert _digest(profile) == digest
    assert peak_streamed < peak_bytes_held + 8 * window < peak_bytes_held + len(raw) / 2, (
        peak_streamed, peak_bytes_held, len(raw))


def test_fallback_cap_checks_and_errors_stay(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setattr(split, "SLICE_BYTES", 4096)
    monkeypatch.setattr(split, "_WINDOW", 1000)
    raw = REAL.read_bytes()
    # Chrome's bare array of events is no object: `Reparse`, the file read whole again.
    events = json.dumps(json.loads(raw)["traceEvents"]).encode()
    bare = tmp_path / "bare.pt.trace.json"
    bare.write_bytes(events)
    with store.open_profile(str(bare)) as data:
        assert _digest(store.decode_profile_bytes(str(bare), data)) == _digest(
            decode_kineto(events))
    # gzip is read whole (small on disk), and decodes as its bytes do.
    packed = tmp_path / "packed.pt.trace.json.gz"
    packed.write_bytes(gzip.compress(raw))
    with store.open_profile(str(packed)) as data:
        assert data == packed.read_bytes()
    # The Kineto cap refuses before the file is read; the file-size limit before it is opened.
    plain = tmp_path / "plain.pt.trace.json"
    shutil.copyfile(REAL, plain)
    opened = store.ProfileStore(disk_cache_dir=tmp_path / "cache")
    monkeypatch.setattr(fs.LocalFile, "chunks", lambda *_: pytest.fail("read past the cap"))
    monkeypatch.setenv(read.MAX_BYTES_ENV, str(len(raw) - 1))
    with pytest.raises(UnreadableProfile, match=r"plain\.pt\.trace\.json: the trace holds more"):
        opened.open(str(plain))
    monkeypatch.setenv(fs.MAX_FILE_BYTES_ENV, str(len(raw) - 1))
    with pytest.raises(UnreadableProfile, match="more than the .*-byte limit on profile files"):
        with store.open_profile(str(plain)):
            pass
    with pytest.raises(NotFound, match="does not exist"):
        with store.open_profile(str(tmp_path / "gone.pt.trace.json")):
            pass
    fifo = tmp_path / "fifo.pt.trace.json"
    fifo.mkdir()
    with pytest.raises(UnreadableProfile, match="a directory, not a regular file"):
        with store.open_profile(str(fifo)):
            pass


def test_a_reading_error_mid_decode_is_not_remembered_as_undecodable(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An OSError while the decoder reads the file is the store's reading error (it may pass:
    the next open reads again), not a file whose content is no profile."""
    plain = tmp_path / "plain.pt.trace.json"
    shutil.copyfile(REAL, plain)
    original = fs.LocalFile.chunks

    def failing(self: fs.LocalFile, size: int):  # type: ignore[no-untyped-def]
        yield next(original(self, size))
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(split, "_WINDOW", 1000)
    monkeypatch.setattr(fs.LocalFile, "chunks", failing)
    opened = store.ProfileStore(disk_cache_dir=tmp_path / "cache")
    with pytest.raises(UnreadableProfile, match=r"cannot be read \(Input/output error\)"):
        opened.open(str(plain))
    monkeypatch.setattr(fs.LocalFile, "chunks", original)
    assert _digest(opened.open(str(plain))) == _digest(decode_kineto(REAL.read_bytes()))
