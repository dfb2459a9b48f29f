"""The trace index in the disk cache (trace/index_cache.py), on real captures: a reopen loads it
instead of building it, and gives the same index and windows; a damaged, forged or mismatched
entry is a miss that is built again. Also `depth_order`'s fast paths (lines already in order,
starts out of order, ties) against a brute-force count."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace import index as index_module
from tb_profile_plugin.trace import index_cache
from tb_profile_plugin.trace.depth import depth_order
from tb_profile_plugin.trace.index import TraceIndex, build_index
from tb_profile_plugin.trace.index_cache import trace_index
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.store import ProfileStore

DATA = Path(__file__).resolve().parents[2] / "data"
CAPTURES = {
    "jax_gpu_attention": next((DATA / "jax_gpu_attention").glob("**/*.xplane.pb")),
    "keras_fit": next((DATA / "keras_fit").glob("**/*.xplane.pb")),
}
_ARRAYS = ("track_bounds", "start_ps", "end_ps", "max_end_ps", "name_id", "depth",
           "source_line", "source_row", "segment_bounds", "segment_track", "segment_disjoint",
           "block_max_ps")


def _same(a: TraceIndex, b: TraceIndex) -> None:
    for name in _ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert getattr(a, name).dtype == getattr(b, name).dtype, name
    assert a.processes == b.processes
    assert a.tracks == b.tracks
    assert a.names == b.names
    assert [(p, ln.id, ln.name) for p, ln in a.lines] == [(p, ln.id, ln.name) for p, ln in b.lines]
    assert (a.absolute_origin_ns, a.num_derived_events) == (b.absolute_origin_ns,
                                                             b.num_derived_events)


def _window(store: ProfileStore, path: Path, **params: str) -> dict:
    profile = store.open(str(path))
    return registry.VIEWS["trace_viewer"].build(
        registry.ViewRequest("r", "h", {"h": profile}, params))


def _entry(cache_dir: Path) -> Path:
    cache.flush()  # the index is written off the request's path
    (entry,) = cache_dir.glob(f"*-index{index_cache.INDEX_FORMAT_VERSION}.tbpi")
    return entry


def _no_build(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    built: list[int] = []
    real = index_module.build_index

    def counting(profile, **options):  # type: ignore[no-untyped-def]
        built.append(1)
        return real(profile, **options)

    monkeypatch.setattr(index_module, "build_index", counting)
    return built


@pytest.mark.parametrize("capture", sorted(CAPTURES))
def test_reopen_loads_the_index_and_answers_the_same(
    capture: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = CAPTURES[capture]
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    first_store = ProfileStore()
    windows = [{}, {"start_time_ms": "0.5", "end_time_ms": "3", "resolution": "800"}]
    first = [_window(first_store, path, **w) for w in windows]
    built_index = trace_index(first_store.open(str(path)))
    assert _entry(tmp_path).stat().st_size > built_index.nbytes  # every column is there
    built = _no_build(monkeypatch)
    second_store = ProfileStore()
    again = [_window(second_store, path, **w) for w in windows]
    assert built == []  # loaded, not built
    assert json_text(again) == json_text(first)
    loaded = trace_index(second_store.open(str(path)))
    assert loaded.profile.decoder == "cache"
    assert not loaded.start_ps.flags.writeable  # the file's bytes, not a copy
    _same(loaded, built_index)
    _same(loaded, build_index(loaded.profile))


def _damage_arrays(entry: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[-100] ^= 0x40
    entry.write_bytes(bytes(data))


def _entry_parts(entry: Path, key: str) -> tuple[dict, list[np.ndarray]]:
    """The header (without its array table) and arrays of a valid entry."""
    loaded = cache.load_entry(key, ".tbpi", lambda header, arrays: (header, arrays),
                              entry.parent)
    assert loaded is not None
    header, arrays = loaded
    return {k: v for k, v in header.items() if k != "arrays"}, arrays


def _forge_out_of_range(entry: Path, key: str) -> None:
    """A valid MAC (as if the secret had leaked) on an index whose names are out of range."""
    header, arrays = _entry_parts(entry, key)
    cache.save_entry(key, ".tbpi", dict(header, names=header["names"][:1]), arrays,
                     entry.parent)


def _forge_other_version(entry: Path, key: str) -> None:
    header, arrays = _entry_parts(entry, key)
    cache.save_entry(key, ".tbpi", dict(header, version=0), arrays, entry.parent)


def _forge_other_file(entry: Path, key: str) -> None:
    """A valid entry of another key (another file's index) renamed into place."""
    header, arrays = _entry_parts(entry, key)
    other_key = "0" * 40 + f"-index{index_cache.INDEX_FORMAT_VERSION}"
    other = cache.save_entry(other_key, ".tbpi", header, arrays, entry.parent)
    assert other is not None
    other.replace(entry)


@pytest.mark.parametrize("damage", ["bit_flip", "truncated", "out_of_range", "other_version",
                                    "other_file"])
def test_a_bad_index_entry_is_a_miss_built_again(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = CAPTURES["jax_gpu_attention"]
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    expected = _window(ProfileStore(), path)
    entry = _entry(tmp_path)
    key = entry.name[: -len(".tbpi")]
    if damage == "bit_flip":
        _damage_arrays(entry)
    elif damage == "truncated":
        entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    elif damage == "out_of_range":
        _forge_out_of_range(entry, key)
    elif damage == "other_version":
        _forge_other_version(entry, key)
    else:
        _forge_other_file(entry, key)
    built = _no_build(monkeypatch)
    store = ProfileStore()
    assert json_text(_window(store, path)) == json_text(expected)
    assert built == [1]  # a miss: built again
    _same(trace_index(store.open(str(path))), build_index(store.open(str(path))))
    # and written again: the next process loads it
    again = _no_build(monkeypatch)
    assert json_text(_window(ProfileStore(), path)) == json_text(expected)
    assert again == []


def test_no_cache_entry_without_a_disk_cache(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    store = ProfileStore()
    profile = store.open(str(CAPTURES["keras_fit"]))
    assert profile.derived.disk_key is not None  # keyed, but nowhere to write
    assert index_cache.load(profile) is None
    assert len(trace_index(profile)) == len(build_index(profile)) > 0
    fresh = dataclasses.replace(profile)  # a profile the store did not make: no key
    assert fresh.derived.disk_key is None and index_cache.load(fresh) is None


def _brute_force(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, depth) by counting, for properly nested events: depth = events opened before
    (by start, longer first) and not yet closed; order by (depth, start, longer, position)."""
    n = len(start)
    by_start = np.lexsort((np.arange(n), -end, start))
    close = np.where(end == start, 2 * start + 1, 2 * end)
    depth = np.zeros(n, np.int64)
    for rank, i in enumerate(by_start):
        before = by_start[:rank]
        depth[i] = int(np.count_nonzero(close[before] > 2 * start[i]))
    order = np.lexsort((np.arange(n), -end, start, depth))
    return order, depth[order]


def _nested(rng: np.random.Generator, lo: int, hi: int, level: int) -> list[tuple[int, int]]:
    events: list[tuple[int, int]] = []
    at = lo
    while at < hi and len(events) < 6:
        length = int(rng.integers(0, max(1, (hi - at) // 2) + 1))
        events.append((at, at + length))
        if level < 4 and length > 4:
            events += _nested(rng, at, at + length, level + 1)
        at += length + int(rng.integers(0, 3))
    return events


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("shuffle", [False, True])
def test_depth_order_matches_a_brute_force_count(seed: int, shuffle: bool) -> None:
    rng = np.random.default_rng(seed)
    events = _nested(rng, 0, 400, 0)
    events += events[: seed % 4]  # exact duplicates: tied start and end
    pairs = np.array(events, np.int64)
    if shuffle:
        pairs = pairs[rng.permutation(len(pairs))]
    else:  # in file order: by start, longer first (the fast path with no sort)
        pairs = pairs[np.lexsort((-pairs[:, 1], pairs[:, 0]))]
    start, end = pairs[:, 0].copy(), pairs[:, 1].copy()
    order, depth = depth_order(start, end)
    expected_order, expected_depth = _brute_force(start, end)
    assert np.array_equal(order, expected_order)
    assert np.array_equal(depth, expected_depth)
    assert depth.dtype == np.int32


def test_depth_order_sorted_starts_with_ties_shorter_first() -> None:
    """Starts in order, but at one start the shorter event comes first: sorted, not trusted."""
    start = np.array([0, 0, 10, 10, 10], np.int64)
    end = np.array([5, 50, 12, 20, 11], np.int64)
    order, depth = depth_order(start, end)
    expected_order, expected_depth = _brute_force(start, end)
    assert np.array_equal(order, expected_order)
    assert np.array_equal(depth, expected_depth)
