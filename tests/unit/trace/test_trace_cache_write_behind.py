"""Cache entries written off the request's path (xspace/cache/writer.py `save_entry_later`): the
first trace window is answered while the profile's and the index's entries are still being
written, a reopen in the same process waits for a queued entry instead of decoding again, and
what was written in the background reopens to the same window in a fresh store. Also the reopen's
read in two halves (`cache._read_all`): whole, or a miss when the file changed size."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace import index as index_module
from tb_profile_plugin.trace.index_cache import trace_index
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.cache import files as cache_files
from tb_profile_plugin.xspace.cache import writer as cache_writer
from tb_profile_plugin.xspace.store import ProfileStore

DATA = Path(__file__).resolve().parents[2] / "data"
CAPTURE = next((DATA / "keras_fit").glob("**/*.xplane.pb"))


def _window(store: ProfileStore, **params: str) -> dict:
    profile = store.open(str(CAPTURE))
    return registry.VIEWS["trace_viewer"].build(
        registry.ViewRequest("r", "h", {"h": profile}, params))


@pytest.fixture
def held_writes(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Entries queued for writing wait until the returned event is set."""
    release = threading.Event()
    real = cache_writer._write_entry

    def held(*args: Any) -> Any:
        assert release.wait(30), "the test never released the writes"
        return real(*args)

    monkeypatch.setattr(cache_writer, "_write_entry", held)
    yield release
    release.set()
    cache.flush(30)


def test_the_first_window_is_answered_before_the_entries_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_writes: threading.Event
) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    first = _window(ProfileStore())  # would wait forever if it wrote on its own path
    assert not list(tmp_path.glob("*.tbp*"))  # both writes still held
    held_writes.set()
    cache.flush(30)
    assert len(list(tmp_path.glob("*.tbpc"))) == 1 and len(list(tmp_path.glob("*.tbpi"))) == 1
    built: list[int] = []
    monkeypatch.setattr(index_module, "build_index", lambda p: built.append(1))
    store = ProfileStore()
    assert json_text(_window(store)) == json_text(first)
    assert store.decode_count == 0 and built == []  # both read back from the disk cache
    assert trace_index(store.open(str(CAPTURE))).profile.decoder == "cache"


def test_a_reopen_waits_for_the_queued_entry_instead_of_decoding_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_writes: threading.Event
) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    ProfileStore().open(str(CAPTURE))  # its entry is queued, held
    timer = threading.Timer(0.3, held_writes.set)
    timer.start()
    try:
        second = ProfileStore()
        profile = second.open(str(CAPTURE))  # waits for the write, then reads it
    finally:
        timer.cancel()
    assert second.decode_count == 0 and profile.decoder == "cache"


@pytest.mark.parametrize("change", ["none", "truncated_in_second_half", "grown"])
def test_an_entry_read_in_two_halves_is_whole_or_a_miss(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large entries are read by two threads (`cache._read_all`): the same bytes back, and a
    file that is shorter or longer than it was when opened is a miss, as with one read."""
    import numpy as np

    monkeypatch.setattr(cache_files, "_PARALLEL_READ_BYTES", 1 << 20)
    column = np.arange(1_000_000, dtype=np.int64) * 7  # 8 MB: four huge pages a half
    assert cache.save_entry("big", ".tbpx", {"n": 1}, [column, column[:5]], tmp_path)
    path = tmp_path / "big.tbpx"
    size = path.stat().st_size
    fd = cache.open_regular(path)
    assert fd is not None
    try:
        if change == "truncated_in_second_half":
            os.truncate(path, size - 4096)
        elif change == "grown":
            with open(path, "ab") as out:
                out.write(b"\0" * 64)
        data = cache_files._read_all(fd, size)
    finally:
        os.close(fd)
    if change != "none":
        assert data is None
        return
    assert data is not None and bytes(data) == path.read_bytes()
    loaded = cache.load_entry("big", ".tbpx", lambda header, arrays: arrays, tmp_path)
    assert loaded is not None and np.array_equal(loaded[0], column)


def test_the_writer_waits_while_an_index_is_built(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`cache.quiet` (held while the trace index of a fresh decode is built): a queued entry is
    not written meanwhile, and is written once it ends."""
    import time

    import numpy as np

    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    with cache.quiet():
        cache.save_entry_later("held", ".tbpx", {"n": 1}, [np.arange(1000)])
        time.sleep(0.3)
        assert not list(tmp_path.glob("held*"))  # waiting before its first array
    cache.flush(30)
    assert [p.name for p in tmp_path.glob("held*")] == ["held.tbpx"]
    loaded = cache.load_entry("held", ".tbpx", lambda header, arrays: arrays, tmp_path)
    assert loaded is not None and np.array_equal(loaded[0], np.arange(1000))


def test_the_writer_waits_between_parts_of_one_array(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer thread waits for `quiet` before each part of an array, not only before each
    array (a trace window asked while an 80 MB column is written waits for one part), and the
    parts' word sums make the array's: the entry reads back whole."""
    import numpy as np

    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(cache_writer, "_PART_BYTES", 64)
    waits = []
    real_wait = cache_writer._may_write.wait
    monkeypatch.setattr(cache_writer._may_write, "wait",
                        lambda timeout=None: waits.append(timeout) or real_wait(timeout))
    column = np.arange(37, dtype=np.int64) * 0x0101010101  # 296 bytes: 5 parts, the last short
    odd = np.frombuffer(b"abcdefghijk", np.uint8)  # a partial last word
    cache.save_entry_later("parts", ".tbpx", {"n": 2}, [column, odd])
    cache.flush(30)
    assert len(waits) == 5 + 1
    loaded = cache.load_entry("parts", ".tbpx", lambda header, arrays: arrays, tmp_path)
    assert loaded is not None
    assert np.array_equal(loaded[0], column) and np.array_equal(loaded[1], odd)


def test_a_trace_window_holds_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a window (not only the index) is found, the writer thread waits (`cache.quiet`);
    it may write again once the window is answered."""
    from tb_profile_plugin.tools import trace_viewer

    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    store = ProfileStore()
    _window(store)  # the index is built: the next windows are windows alone
    seen = []
    real = trace_viewer.visible_events

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(cache_writer._may_write.is_set())
        return real(*args, **kwargs)

    monkeypatch.setattr(trace_viewer, "visible_events", recording)
    _window(store, start_time_ms="0", end_time_ms="1", resolution="100")
    assert seen == [False]
    assert cache_writer._may_write.is_set()
    cache.flush(30)
