"""Remote logdirs go through TensorBoard's TensorFlow-free file layer (here: fsspec memory://)."""

from __future__ import annotations

import pytest

from tb_profile_plugin.logdir import LogDir
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.store import ProfileStore
from tests.fixtures import DATA_DIR

fsspec = pytest.importorskip("fsspec")


def test_runs_hosts_and_profiles_on_a_remote_logdir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    memory = fsspec.filesystem("memory")
    memory.rm("/remote_logdir", recursive=True) if memory.exists("/remote_logdir") else None
    local_files = sorted(DATA_DIR.glob("two_hosts/**/*.xplane.pb"))
    for path in local_files:
        relative = path.relative_to(DATA_DIR).as_posix()
        memory.pipe(f"/remote_logdir/{relative}", path.read_bytes())
    logdir = LogDir("memory://remote_logdir")
    runs = logdir.runs()
    assert len(runs) == 1 and runs[0].name.startswith("two_hosts/")
    run = logdir.run(runs[0].name)
    assert list(run.hosts) == [p.name.removesuffix(".xplane.pb") for p in local_files]
    store = ProfileStore()
    for host, local in zip(run.hosts, local_files, strict=True):
        profile = store.open(logdir.host_path(run, host))
        assert profile.num_events == ProfileStore().open(str(local)).num_events > 0
