"""A big trace index reopened from the disk cache (trace/index_cache.py), with every entry
counted as big (`cache.LAZY_MIN_BYTES` 0): the first window, kept beside the index, is answered
without reading any of the index's columns or the profile's lines; the windows after it read
them, and answer as a built index does; the prefetch reads them in the background; a column
damaged after the open comes from the index built again; a damaged first window is a miss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace import index as index_module
from tb_profile_plugin.trace import index_cache
from tb_profile_plugin.trace.index import IndexColumns
from tb_profile_plugin.trace.index_cache import trace_index
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.cache import lazy as cache_lazy
from tb_profile_plugin.xspace.cache import lookup as cache_lookup
from tb_profile_plugin.xspace.store import ProfileStore

DATA = Path(__file__).resolve().parents[2] / "data"
CAPTURE = next((DATA / "jax_gpu_attention").glob("**/*.xplane.pb"))
ZOOM = {"start_time_ms": "0.5", "end_time_ms": "3", "resolution": "800"}
PREFIX = 48  # magic, MAC, header length


@pytest.fixture
def lazy_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cache_lookup, "LAZY_MIN_BYTES", 0)
    monkeypatch.setattr(index_cache, "PREFETCH_DELAY_S", 60.0)  # not during a test's checks
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    return tmp_path


def _window(store: ProfileStore, **params: str) -> str:
    profile = store.open(str(CAPTURE))
    return json_text(registry.VIEWS["trace_viewer"].build(
        registry.ViewRequest("r", "h", {"h": profile}, params)))


def _first_run() -> tuple[str, str]:
    store = ProfileStore()
    first, zoom = _window(store), _window(store, **ZOOM)
    cache.flush()
    return first, zoom


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    built: list[int] = []
    real = index_module.build_index

    def counting(profile: Any) -> Any:
        built.append(1)
        return real(profile)

    monkeypatch.setattr(index_cache, "build_index", counting)
    monkeypatch.setattr(index_module, "build_index", counting)
    return built


def _flip(entry: Path, at: int) -> None:
    with open(entry, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x08]))


def _array_offset(entry: Path, position: int) -> tuple[int, int]:
    """(file offset, bytes) of array `position` of an entry."""
    data = entry.read_bytes()
    header_len = int.from_bytes(data[40:PREFIX], "little")
    header = json.loads(data[PREFIX:PREFIX + header_len])
    dtype, shape, offset = header["arrays"][position]
    return (-(-(PREFIX + header_len) // 64) * 64 + offset,
            np.dtype(dtype).itemsize * int(np.prod(shape)))


def test_first_window_reads_no_column_and_the_next_ones_answer_the_same(
    lazy_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, zoom = _first_run()
    assert len(list(lazy_cache.glob(f"*-window{index_cache.INDEX_FORMAT_VERSION}.tbpw"))) == 1
    built = _builds(monkeypatch)
    store = ProfileStore()
    assert _window(store) == first
    profile = store.open(str(CAPTURE))
    index = trace_index(profile)
    assert index.columns.unread() == list(IndexColumns.NAMES)  # the kept first window
    assert all(cache_lazy.is_unread(line.events) and cache_lazy.is_unread(line.stats)
               for plane in profile.planes for line in plane.lines)
    assert _window(store, **ZOOM) == zoom  # reads the columns it needs
    assert "start_ps" not in index.columns.unread()
    assert built == [] and store.decode_count == 0


def test_the_prefetch_reads_the_window_columns(lazy_cache: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _first_run()
    monkeypatch.setattr(index_cache, "PREFETCH_DELAY_S", 0.0)
    started: list[Any] = []
    real = index_cache.threading.Timer

    def recording(*args: Any, **kwargs: Any) -> Any:
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(index_cache.threading, "Timer", recording)
    store = ProfileStore()
    _window(store)
    assert len(started) == 1
    started[0].join(30)
    index = trace_index(store.open(str(CAPTURE)))
    assert not set(index.columns.unread()) & {"start_ps", "end_ps", "name_id", "block_max_ps"}


def test_a_column_damaged_after_the_open_comes_from_the_index_built_again(
    lazy_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, zoom = _first_run()
    (entry,) = lazy_cache.glob(f"*-index{index_cache.INDEX_FORMAT_VERSION}.tbpi")
    built = _builds(monkeypatch)
    store = ProfileStore()
    assert _window(store) == first and built == []
    offset, size = _array_offset(entry, list(index_cache._ARRAYS).index("start_ps"))
    _flip(entry, offset + size // 2)
    assert _window(store, **ZOOM) == zoom
    assert built == [1]  # the column came from a new build, not from the damaged entry
    cache.flush()
    again = _builds(monkeypatch)
    fresh = ProfileStore()  # written again: the next process reads it
    assert _window(fresh) == first and _window(fresh, **ZOOM) == zoom and again == []


def test_a_damaged_first_window_is_a_miss(lazy_cache: Path) -> None:
    first, _ = _first_run()
    (entry,) = lazy_cache.glob(f"*-window{index_cache.INDEX_FORMAT_VERSION}.tbpw")
    _flip(entry, entry.stat().st_size - 8)
    store = ProfileStore()
    assert _window(store) == first
    index = trace_index(store.open(str(CAPTURE)))
    assert "start_ps" not in index.columns.unread()  # computed from the columns
    cache.flush()
    assert entry.is_file()  # and kept again
    fresh = ProfileStore()
    assert _window(fresh) == first
    assert trace_index(fresh.open(str(CAPTURE))).columns.unread() == list(IndexColumns.NAMES)
