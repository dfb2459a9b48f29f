"""ALL_HOSTS views through the plugin on a real Dask cluster: a `dask scheduler` and two
`dask worker` processes on 127.0.0.1, started as subprocesses.

The documents must equal the local process pool's, and the hosts must have been read on the
workers: they write their own disk cache (TB_PROFILE_CACHE_DIR of the workers), the server's
store never decodes them. Skipped where dask is not installed, except in CI (CI=true), where
that is a failure (pip install -e ".[test]" installs it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin.analysis.hosts import executors, host_pool
from tb_profile_plugin.xspace import cache
from tests.fixtures import session_dir

pytestmark = pytest.mark.dask

TWO_HOSTS = session_dir("two_hosts")
VIEWS = ("overview_page", "pod_viewer", "tensorflow_stats", "input_pipeline_analyzer")
STARTUP_TIMEOUT_S = 60
KILL_HOSTS = 24


def _need_dask() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        reason = 'dask is not installed: pip install "tb-profile[dask]"'
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _dask_cluster(tmp: Path, nanny: bool = True) -> Iterator[tuple[str, list[Path],
                                                                   list[subprocess.Popen[bytes]]]]:
    """A scheduler and two one-thread workers on 127.0.0.1: (address, each worker's disk
    cache directory, the worker processes). Without a nanny a killed worker stays dead."""
    _need_dask()
    address = f"tcp://127.0.0.1:{_free_port()}"
    env = {k: v for k, v in os.environ.items() if k != executors.SCHEDULER_ENV}
    dask = [sys.executable, "-m", "dask"]
    port = address.rsplit(":", 1)[1]
    scheduler = subprocess.Popen(
        [*dask, "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"],
        env=env, stdout=subprocess.DEVNULL, stderr=(tmp / "scheduler.log").open("w"))
    workers: list[subprocess.Popen[bytes]] = []
    caches = [tmp / f"worker_cache{k}" for k in range(2)]
    for k, worker_cache in enumerate(caches):
        workers.append(subprocess.Popen(
            [*dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
             "--host", "127.0.0.1", "--name", f"w{k}", *([] if nanny else ["--no-nanny"])],
            env={**env, "TB_PROFILE_CACHE_DIR": str(worker_cache)}, cwd=tmp,
            stdout=subprocess.DEVNULL, stderr=(tmp / f"worker{k}.log").open("w")))
    try:
        from distributed import Client as DaskClient

        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                with DaskClient(address, timeout=5, set_as_default=False) as client:
                    client.wait_for_workers(2, timeout=max(1, deadline - time.monotonic()))
                break
            except (OSError, TimeoutError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield address, caches, workers
    finally:
        executors.shutdown()
        executors.configure(None)
        for proc in [*reversed(workers), scheduler]:
            proc.terminate()
        for proc in [*workers, scheduler]:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Path]]]:
    """(scheduler address, the workers' disk cache directories)."""
    with _dask_cluster(tmp_path_factory.mktemp("dask")) as (address, caches, _):
        yield address, caches


def _plugin(logdir: Path, scheduler: str | None) -> Any:
    from tb_profile_plugin.plugin import ProfilePlugin

    flags = argparse.Namespace(profile_scheduler=scheduler)
    return ProfilePlugin(base_plugin.TBContext(logdir=str(logdir), flags=flags))


def _documents(plugin: Any) -> dict[str, Any]:
    apps = plugin.get_plugin_apps()
    docs: dict[str, Any] = {}
    hosts = Client(apps["/hosts"]).get("/", query_string={"run": TWO_HOSTS.name,
                                                           "tag": "pod_viewer"})
    assert hosts.status_code == 200
    docs["hosts"] = json.loads(hosts.get_data())
    tools = Client(apps["/run_tools"]).get("/", query_string={"run": TWO_HOSTS.name})
    docs["run_tools"] = json.loads(tools.get_data())
    for view in VIEWS:
        response = Client(apps["/data"]).get("/", query_string={
            "run": TWO_HOSTS.name, "tag": view, "host": "ALL_HOSTS"})
        assert response.status_code == 200, response.get_data()
        docs[view] = json.loads(response.get_data())
    return docs


def test_all_hosts_views_on_dask_equal_the_local_pool(
    cluster: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address, worker_caches = cluster
    logdir = tmp_path / "logdir"
    shutil.copytree(TWO_HOSTS, logdir / "plugins" / "profile" / TWO_HOSTS.name)
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "server_cache"))
    monkeypatch.delenv(executors.SCHEDULER_ENV, raising=False)

    host_pool.clear_cache()
    on_dask = _plugin(logdir, address)
    dask_docs = _documents(on_dask)
    assert executors.scheduler_address() == address
    # The hosts were decoded on the workers (their cache), never in the server.
    assert len({p.name for c in worker_caches for p in c.glob("*.tbpc")}) == 2
    assert not (tmp_path / "server_cache").exists() or not any(
        (tmp_path / "server_cache").glob("*.tbpc"))
    assert not any(str(p) in on_dask._store for p in logdir.glob("**/*.xplane.pb"))

    executors.configure(None)
    host_pool.clear_cache()
    local_docs = _documents(_plugin(logdir, None))
    assert dask_docs["hosts"][0] == "ALL_HOSTS"
    assert dask_docs == local_docs
    assert dask_docs["overview_page"]["multi_host"]["num_common_steps"] == 127


def test_killing_a_worker_during_the_request_still_yields_the_full_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 of one of the two workers (no nanny: it stays dead) while an ALL_HOSTS pod
    viewer request of 24 hosts is in flight: the scheduler runs its hosts on the other."""
    logdir = tmp_path / "logdir"
    session = logdir / "pod" / "plugins" / "profile" / TWO_HOSTS.name
    session.mkdir(parents=True)
    files = sorted(TWO_HOSTS.glob("*.xplane.pb"))
    for k in range(KILL_HOSTS):
        shutil.copy(files[k % 2], session / f"h{k:02d}.xplane.pb")
    run = f"pod/{TWO_HOSTS.name}"
    query = {"run": run, "tag": "pod_viewer", "host": "ALL_HOSTS"}
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path / "server_cache"))
    monkeypatch.delenv(executors.SCHEDULER_ENV, raising=False)
    (tmp_path / "dask").mkdir()
    with _dask_cluster(tmp_path / "dask", nanny=False) as (address, caches, workers):
        host_pool.clear_cache()
        apps = _plugin(logdir, address).get_plugin_apps()
        answers: list[Any] = []
        request = threading.Thread(
            target=lambda: answers.append(Client(apps["/data"]).get("/", query_string=query)))
        request.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not list(caches[0].glob("*.tbpc")) and time.monotonic() < deadline:
            time.sleep(0.01)
        killed_decoded = len(list(caches[0].glob("*.tbpc")))
        decoded_before = killed_decoded + len(list(caches[1].glob("*.tbpc")))
        assert request.is_alive() and decoded_before < KILL_HOSTS
        workers[0].kill()  # SIGKILL, mid-host
        workers[0].wait(timeout=20)
        request.join(STARTUP_TIMEOUT_S * 4)
        assert not request.is_alive()
        assert workers[1].poll() is None
        response = answers[0]
        assert response.status_code == 200, response.get_data()
        on_dask = json.loads(response.get_data())
        # The surviving worker decoded every host the dead one had not finished.
        assert len(list(caches[1].glob("*.tbpc"))) >= KILL_HOSTS - killed_decoded

    host_pool.clear_cache()
    response = Client(_plugin(logdir, None).get_plugin_apps()["/data"]).get(
        "/", query_string=query)
    assert response.status_code == 200
    assert on_dask == json.loads(response.get_data())
    assert len(on_dask["hosts"]) == KILL_HOSTS
