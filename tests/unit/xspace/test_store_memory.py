"""The memory bound holds: derived results are counted, and dropped with their profile.

A profile's views derive far more than its columns (the event forest, analyses, the trace
index: ~10x on a real capture). They live in the profile (`Profile.derived`), are counted in
the store's bound, and are released when the store drops the profile, even where a result
holds its profile (the trace index does). 100 cycles of open / build views / evict must leave
the live objects and the process's memory flat.
"""

from __future__ import annotations

import gc
import os
import shutil
import weakref
from pathlib import Path

import pytest

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.store import ProfileStore
from tests.fixtures import session_dir

VIEWS = ("overview_page", "trace_viewer", "tensorflow_stats")
CYCLES = 100


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")


def _copies(tmp_path: Path, count: int) -> list[str]:
    source = next(session_dir("tfdata_slow").glob("*.xplane.pb"))
    paths = []
    for k in range(count):
        target = tmp_path / f"host{k}.xplane.pb"
        shutil.copyfile(source, target)
        paths.append(str(target))
    return paths


def _build_views(store: ProfileStore, path: str) -> Profile:
    profile = store.open(path)
    for view in VIEWS:
        registry.VIEWS[view].build(registry.ViewRequest("run", "h", {"h": profile}, {}))
    return profile


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _live_profiles(already: dict[int, weakref.ref[Profile]] | None = None) -> int:
    """Profiles alive now, those in `already` (alive before the test, held by other tests in
    the same process) excepted."""
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, Profile)
               and not (already and id(obj) in already and already[id(obj)]() is obj))


def _profiles_alive() -> dict[int, weakref.ref[Profile]]:
    gc.collect()
    return {id(obj): weakref.ref(obj) for obj in gc.get_objects() if isinstance(obj, Profile)}


def test_derived_results_are_counted_in_the_bound(tmp_path: Path) -> None:
    (path,) = _copies(tmp_path, 1)
    store = ProfileStore(max_bytes=2**40)
    profile = _build_views(store, path)
    assert profile.derived.nbytes > 2 * profile.nbytes  # the views weigh more than the columns
    store.open(path)  # a hit re-measures and re-counts
    assert store.cached_bytes == profile.nbytes + profile.derived.measure()


def test_a_profile_whose_views_outgrow_the_bound_is_dropped_with_them(tmp_path: Path) -> None:
    first, second = _copies(tmp_path, 2)
    probe = _build_views(ProfileStore(max_bytes=2**40), first)
    one = probe.nbytes + probe.derived.nbytes
    store = ProfileStore(max_bytes=int(one * 1.5))  # room for one profile with its views
    kept = _build_views(store, first)
    _build_views(store, second)
    assert first not in store and second in store
    assert kept.derived.results == {}  # dropped with the profile: no cycle keeps it alive
    assert store.cached_bytes <= store.max_bytes


def test_evict_and_reopen_cycles_stay_flat(tmp_path: Path) -> None:
    others = _profiles_alive()  # the suite's other tests may hold profiles of their own
    paths = _copies(tmp_path, 3)
    probe = _build_views(ProfileStore(max_bytes=2**40), paths[0])
    store = ProfileStore(max_bytes=int((probe.nbytes + probe.derived.nbytes) * 1.5))
    del probe

    def cycle() -> None:
        for path in paths:  # each open evicts the previous profile and its views
            _build_views(store, path)

    for _ in range(20):
        cycle()
    live_before, rss_before = _live_profiles(others), _rss_bytes()
    for _ in range(CYCLES - 20):
        cycle()
    live_after, rss_after = _live_profiles(others), _rss_bytes()
    assert live_after <= live_before <= 2  # the kept one (and none left over)
    assert rss_after - rss_before <= 32 * 2**20, (rss_before, rss_after)
