"""A file's identity (fs.identity) tells its versions apart even when size and mtime do not:
a same-size rewrite whose mtime was restored is a new profile in the memory cache, the disk
cache (after a restart) and the document cache; a host that failed to read is read again once
its permissions are fixed, without a restart (issue 30, item 7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin import fs
from tb_profile_plugin.analysis.hosts import host_pool
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.store import ProfileStore, disk_key
from tests.pod_runs import SAME_SIZE_VERSIONS, host_xspace, one_host_logdir

OLD, NEW = (host_xspace(plan) for plan in SAME_SIZE_VERSIONS)


def _rewrite_keeping_mtime(path: Path, data: bytes) -> None:
    """Rewrites `path` with `data` (the same size) and restores its mtime to the nanosecond."""
    before = path.stat()
    assert len(data) == before.st_size
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def _steps(profile_bytes_path: Path, store: ProfileStore) -> list[int]:
    from tb_profile_plugin.analysis.hosts.host_analysis import analyze

    analysis = analyze(store.open(str(profile_bytes_path)))
    return sorted(int(num) for num in analysis.steps.step_num)


@pytest.fixture(autouse=True)
def _disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    host_pool.clear_cache()


def test_identity_sees_a_same_size_rewrite_with_its_mtime_restored(tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(OLD)
    before = fs.identity(str(path))
    assert before == fs.identity(str(path))
    _rewrite_keeping_mtime(path, NEW)
    after = fs.identity(str(path))
    assert (after.size_bytes, after.mtime_ns) == (before.size_bytes, before.mtime_ns)
    assert after.fingerprint != before.fingerprint and after != before


def test_the_fingerprint_alone_tells_contents_apart(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    data = bytearray(os.urandom(3 * fs.FINGERPRINT_BYTES))
    path.write_bytes(data)
    first = fs._local_fingerprint(str(path), len(data))
    data[-1] ^= 1  # the last byte: the tail is hashed too
    path.write_bytes(data)
    assert fs._local_fingerprint(str(path), len(data)) != first


def test_an_old_file_is_fingerprinted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(OLD)
    monkeypatch.setattr(fs, "RACY_SECONDS", 0.0)  # as if its ctime were long past
    reads = []
    real = fs._local_fingerprint
    monkeypatch.setattr(fs, "_local_fingerprint", lambda p, n: reads.append(p) or real(p, n))
    assert fs.identity(str(path)) == fs.identity(str(path)) == fs.identity(str(path))
    assert len(reads) == 1
    os.chmod(path, 0o600)  # a new ctime: fingerprinted again
    fs.identity(str(path))
    assert len(reads) == 2


def test_a_remote_same_size_rewrite_is_a_new_identity() -> None:
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    memory.pipe("/identity/h.xplane.pb", OLD)
    before = fs.identity("memory://identity/h.xplane.pb")
    memory.pipe("/identity/h.xplane.pb", NEW)
    after = fs.identity("memory://identity/h.xplane.pb")
    assert after.size_bytes == before.size_bytes and after != before


def test_the_store_serves_the_rewrite_now_and_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(OLD)
    store = ProfileStore(disk_cache_dir=tmp_path / "cache")
    old_steps = _steps(path, store)
    cache.flush()  # the old version's disk entry is written
    old_key = disk_key(str(path))
    _rewrite_keeping_mtime(path, NEW)
    assert disk_key(str(path)) != old_key
    new_steps = _steps(path, store)
    assert new_steps != old_steps and store.decode_count == 2
    cache.flush()
    restarted = ProfileStore(disk_cache_dir=tmp_path / "cache")  # memory empty, disk warm
    assert _steps(path, restarted) == new_steps




def _overview(plugin: object) -> bytes:
    app = plugin.get_plugin_apps()["/data"]  # type: ignore[attr-defined]
    response = Client(app).get("/", query_string={"run": "run/s", "tag": "overview_page",
                                                  "host": "worker"})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data()


def test_the_document_cache_serves_the_rewrite(tmp_path: Path) -> None:
    from tb_profile_plugin.plugin import ProfilePlugin

    logdir, path = one_host_logdir(tmp_path)
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(logdir)))
    old = _overview(plugin)
    assert _overview(plugin) == old and plugin._documents.hits == 1
    _rewrite_keeping_mtime(path, NEW)
    new = _overview(plugin)
    assert new != old
    cache.flush()
    assert _overview(ProfilePlugin(base_plugin.TBContext(logdir=str(logdir)))) == new


@pytest.fixture
def unreadable_without_permission(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads of a file of mode 000 fail as they do for any user but root (tests run as root
    too)."""
    real = fs.read_bytes
    real_open = fs.LocalFile.__init__

    def refused(path: str) -> None:
        if not fs.is_remote(path) and os.stat(path).st_mode & 0o777 == 0:
            raise PermissionError(13, "Permission denied", path)

    def read_bytes(path: str, limit: int | None = None) -> bytes:
        refused(path)
        return real(path, limit)

    def open_local(self: fs.LocalFile, path: str, limit: int | None = None) -> None:
        refused(path)  # (the decoder reads a local XSpace by ranges of an opened file)
        real_open(self, path, limit)

    monkeypatch.setattr(fs, "read_bytes", read_bytes)
    monkeypatch.setattr(fs.LocalFile, "__init__", open_local)


@pytest.mark.usefixtures("unreadable_without_permission")
def test_a_host_is_readable_again_once_its_permissions_are_fixed(tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(OLD)
    os.chmod(path, 0)
    store = ProfileStore(disk_cache_dir=None)
    facts = host_pool.facts_of_files({"h": str(path)}, store)
    assert not facts["h"].readable and "cannot be read" in str(facts["h"].failure)
    assert not host_pool.facts_of_files({"h": str(path)}, store)["h"].readable  # remembered
    os.chmod(path, 0o644)  # no restart, no new mtime or size
    assert host_pool.facts_of_files({"h": str(path)}, store)["h"].readable


@pytest.mark.usefixtures("unreadable_without_permission")
def test_a_remembered_failure_expires(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(OLD)
    store = ProfileStore(disk_cache_dir=None)
    failing = {"on": True}
    real_open = store.open

    def open_profile(p: str) -> object:
        if failing["on"]:
            raise host_pool.UnreadableProfile("h.xplane.pb cannot be read (flaky share)")
        return real_open(p)

    monkeypatch.setattr(store, "open", open_profile)
    monkeypatch.setattr(host_pool, "FAILURE_TTL_S", 0.0)
    assert not host_pool.facts_of_files({"h": str(path)}, store)["h"].readable
    failing["on"] = False  # the same identity: only the expiry lets it be read again
    assert host_pool.facts_of_files({"h": str(path)}, store)["h"].readable
    monkeypatch.setattr(host_pool, "FAILURE_TTL_S", 60.0)
    host_pool.clear_cache()
    failing["on"] = True
    assert not host_pool.facts_of_files({"h": str(path)}, store)["h"].readable
    failing["on"] = False
    assert not host_pool.facts_of_files({"h": str(path)}, store)["h"].readable  # still kept
