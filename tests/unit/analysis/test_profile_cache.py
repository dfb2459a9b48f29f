"""The per-profile caches: one event forest shared by the analyses of a decoded profile."""

from __future__ import annotations

import gc
import weakref

import pytest

from tb_profile_plugin.analysis.events import profile_cache
from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.memory.snapshots import build_memory_snapshots, memory_snapshots
from tb_profile_plugin.analysis.tf_data.bottlenecks import analyze_tf_data
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.memory_builder import memory_profile_bytes


def test_analyses_of_one_profile_share_one_forest(monkeypatch: pytest.MonkeyPatch) -> None:
    built = []
    build = profile_cache.build_forest

    def counting(table, nesting=None):  # type: ignore[no-untyped-def]
        built.append(table)
        return build(table, nesting)

    monkeypatch.setattr(profile_cache, "build_forest", counting)
    profile = decode_xspace(memory_profile_bytes())
    host = analyze(profile)
    snapshots = memory_snapshots(profile)
    tf_data = analyze_tf_data(profile)
    assert len(built) == 1
    assert analyze(profile) is host and memory_snapshots(profile) is snapshots
    assert analyze_tf_data(profile) is tf_data
    assert profile_cache.profile_forest(profile).table is built[0]
    assert len(built) == 1
    # The same as computed on its own.
    fresh = build_memory_snapshots(decode_xspace(memory_profile_bytes()))
    assert snapshots.memory_ids == fresh.memory_ids
    for name, s in snapshots.allocators.items():
        assert (s.step_id == fresh.allocators[name].step_id).all()


def test_per_profile_memo_does_not_keep_the_profile() -> None:
    calls = []

    @profile_cache.per_profile
    def size(profile):  # type: ignore[no-untyped-def]
        calls.append(1)
        return profile.num_events

    profile = decode_xspace(memory_profile_bytes())
    assert size(profile) == size(profile) and len(calls) == 1
    freed = weakref.ref(profile)
    del profile
    gc.collect()
    assert freed() is None
