"""The disk cache: same columns back, a miss on any change of key, damage is a miss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.store import ProfileStore
from tests.unit.xspace.test_decode import synthetic_space


def test_round_trip_keeps_every_column(tmp_path: Path) -> None:
    profile = decode_xspace(synthetic_space())
    assert cache.save(profile, "k", tmp_path) is not None
    loaded = cache.load("k", tmp_path)
    assert loaded is not None and loaded.decoder == "cache"
    assert loaded.hostnames == profile.hostnames and loaded.warnings == profile.warnings
    assert loaded.origin_ns == profile.origin_ns
    for a, b in zip(profile.planes, loaded.planes, strict=True):
        assert (a.id, a.name) == (b.id, b.name)
        assert a.event_metadata.names.tolist() == b.event_metadata.names.tolist()
        assert a.stat_values() == b.stat_values()
        for la, lb in zip(a.lines, b.lines, strict=True):
            assert (la.id, la.name, la.timestamp_ns) == (lb.id, lb.name, lb.timestamp_ns)
            for name in ("metadata_id", "start_ps", "duration_ps"):
                np.testing.assert_array_equal(getattr(la.events, name), getattr(lb.events, name))
            sa, sb = la.stats.sparse(len(la.events)), lb.stats.sparse(len(lb.events))
            assert [sa.python_value(i) for i in range(len(sa))] == [
                sb.python_value(i) for i in range(len(sb))]


def test_key_depends_on_path_size_mtime_and_version() -> None:
    base = cache.cache_key("/a.xplane.pb", 10, 5)
    assert base == cache.cache_key("/a.xplane.pb", 10, 5)
    assert len({base, cache.cache_key("/b.xplane.pb", 10, 5), cache.cache_key(
        "/a.xplane.pb", 11, 5), cache.cache_key("/a.xplane.pb", 10, 6)}) == 4


@pytest.mark.parametrize("damage", [b"", b"TBPCOLS1\xff\xff", b"garbage" * 100])
def test_damaged_cache_file_is_a_miss(tmp_path: Path, damage: bytes) -> None:
    (tmp_path / "k.tbpc").write_bytes(damage)
    assert cache.load("k", tmp_path) is None


def test_second_open_comes_from_disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    path = tmp_path / "p.xplane.pb"
    path.write_bytes(synthetic_space())
    first = ProfileStore()
    assert first.open(str(path)).decoder in ("compiled", "numpy")
    second = ProfileStore()
    assert second.open(str(path)).decoder == "cache"
    assert second.decode_count == 0
    assert not list(tmp_path.glob("*.tbpc"))  # nothing written beside the profile
