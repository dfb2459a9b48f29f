"""ProfileStore: one decode for many concurrent opens, a bounded LRU, re-reads on change."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tb_profile_plugin.errors import NotFound, UnreadableProfile
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.store import ProfileStore
from tests.xspace_builder import XSpaceBuilder


def _write_profile(path: Path, num_events: int) -> Path:
    b = XSpaceBuilder()
    line = b.plane("/host:CPU").line("t", timestamp_ns=5)
    for i in range(num_events):
        line.event(f"op{i % 7}", offset_ps=i * 10, duration_ps=5, step_num=i)
    path.write_bytes(b.serialize())
    return path


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")


def test_32_concurrent_opens_decode_once(tmp_path: Path) -> None:
    path = str(_write_profile(tmp_path / "a.xplane.pb", 20_000))
    store = ProfileStore()
    barrier = threading.Barrier(32)
    results: list[int] = []

    def open_it() -> None:
        barrier.wait()
        results.append(store.open(path).num_events)

    threads = [threading.Thread(target=open_it) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [20_000] * 32
    assert store.decode_count == 1


def test_memory_bound_evicts_least_recently_used(tmp_path: Path) -> None:
    paths = [str(_write_profile(tmp_path / f"{i}.xplane.pb", 1000)) for i in range(3)]
    one = ProfileStore().open(paths[0]).nbytes
    store = ProfileStore(max_bytes=int(one * 2.5))
    store.open(paths[0])
    store.open(paths[1])
    store.open(paths[0])  # 0 is now the most recently used
    store.open(paths[2])  # evicts 1
    assert paths[0] in store and paths[2] in store and paths[1] not in store
    assert store.cached_bytes <= store.max_bytes
    assert store.decode_count == 3


def test_profile_changed_on_disk_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "a.xplane.pb"
    _write_profile(path, 10)
    store = ProfileStore()
    assert store.open(str(path)).num_events == 10
    _write_profile(path, 25)
    os.utime(path, ns=(1, 2_000_000_000))
    assert store.open(str(path)).num_events == 25
    assert store.decode_count == 2


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    store = ProfileStore()
    with pytest.raises(NotFound):
        store.open(str(tmp_path / "gone.xplane.pb"))
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\xff" * 100)
    with pytest.raises(UnreadableProfile, match="bad.xplane.pb"):
        store.open(str(bad))
    assert store.open(str(_write_profile(tmp_path / "ok.xplane.pb", 3))).num_events == 3


def test_special_files_are_unreadable_without_blocking_or_naming_directories(
    tmp_path: Path,
) -> None:
    store = ProfileStore(disk_cache_dir=tmp_path / "cache")
    os.mkfifo(tmp_path / "fifo.xplane.pb")
    (tmp_path / "zero.xplane.pb").symlink_to("/dev/zero")
    (tmp_path / "loop.xplane.pb").symlink_to("loop.xplane.pb")
    (tmp_path / "dir.xplane.pb").mkdir()
    (tmp_path / "dangling.xplane.pb").symlink_to("missing")
    cases = {"fifo": "named pipe", "zero": "character device", "loop": "symbolic links",
             "dir": "a directory"}
    for stem, reason in cases.items():
        with pytest.raises(UnreadableProfile, match=f"^{stem}.xplane.pb.*{reason}") as raised:
            store.open(str(tmp_path / f"{stem}.xplane.pb"))
        assert str(tmp_path) not in str(raised.value)
    with pytest.raises(NotFound) as missing:
        store.open(str(tmp_path / "dangling.xplane.pb"))
    assert str(tmp_path) not in str(missing.value)
    assert store.decode_count == 0


def test_files_over_the_size_limit_are_refused_with_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_profile(tmp_path / "big.xplane.pb", 10)
    size = path.stat().st_size
    monkeypatch.setenv("TB_PROFILE_MAX_FILE_BYTES", str(size - 1))
    store = ProfileStore(disk_cache_dir=tmp_path / "cache")
    with pytest.raises(UnreadableProfile, match=f"{size - 1:,}-byte limit.*TB_PROFILE_MAX_FILE"):
        store.open(str(path))
    monkeypatch.setenv("TB_PROFILE_MAX_FILE_BYTES", str(size))
    assert store.open(str(path)).num_events == 10
