"""analysis/hosts/executors.py: a clean import path for local workers, and a clear error when the
configured Dask scheduler cannot be reached (HTTP 503, CLI exit 6), never a hang."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin.analysis.hosts import executors, host_pool
from tb_profile_plugin.errors import EngineUnavailable
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import session_dir

ROOT = Path(__file__).resolve().parents[3]
TWO_HOSTS = session_dir("two_hosts")
_SHADOW = 'raise ImportError("the {name}.py of the working directory was imported")\n'


@pytest.fixture(autouse=True)
def _local_engine() -> Iterator[None]:
    yield
    executors.configure(None)
    host_pool.clear_cache()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends


def test_inspect_and_numpy_in_the_working_directory_do_not_break_workers(
    tmp_path: Path,
) -> None:
    """TensorBoard started where a file shadows a standard or installed module: the old pool's
    `python -m` workers put the working directory first on their path and died."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("inspect", "numpy", "dataclasses"):
        (work / f"{name}.py").write_text(_SHADOW.format(name=name))
    script = tmp_path / "bin" / "serve.py"  # like the `tensorboard` console script
    script.parent.mkdir()
    script.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.append({str(ROOT)!r})
        from pathlib import Path
        from tb_profile_plugin.analysis.hosts import host_pool
        if __name__ == "__main__":
            files = sorted(Path({str(TWO_HOSTS)!r}).glob("*.xplane.pb"))
            paths = {{p.name: str(p) for p in files}}
            facts = host_pool.facts_of_files(paths)
            analyses = host_pool.analyze_files(paths)
            print(json.dumps({{"pool_runs": host_pool.pool_runs,
                              "steps": {{h: len(a.steps) for h, a in analyses.items()}},
                              "events": {{h: f.num_events for h, f in facts.items()}}}}))
    """))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    env.update(TB_PROFILE_CACHE_DIR="off", TB_PROFILE_HOST_WORKERS="2")
    env.pop(executors.SCHEDULER_ENV, None)
    done = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["pool_runs"] == 4  # facts and analyses of both hosts, on the workers
    from tb_profile_plugin.analysis.hosts.host_analysis import analyze_file

    for path in sorted(TWO_HOSTS.glob("*.xplane.pb")):
        assert result["steps"][path.name] == len(analyze_file(str(path)).steps) > 0
        assert result["events"][path.name] > 0


def test_clean_import_path_drops_the_working_directory() -> None:
    cwd = "/somewhere/else"
    path = ["", "/somewhere/else", "/usr/lib/python3.11", str(ROOT)]
    assert executors.clean_import_path(path, cwd) == ["/usr/lib/python3.11", str(ROOT)]
    # A checkout run from its own root keeps its root (the package lives there).
    assert executors.clean_import_path(["", str(ROOT)], str(ROOT)) == ["", str(ROOT)]


def test_local_pool_is_kept_between_requests() -> None:
    first = executors.executor()
    assert executors.executor() is first
    assert executors.is_local(first)


def test_unreachable_scheduler_is_a_clear_error_not_a_hang() -> None:
    address = f"tcp://127.0.0.1:{_closed_port()}"
    executors.configure(address)
    paths = {p.name: str(p) for p in sorted(TWO_HOSTS.glob("*.xplane.pb"))}
    started = time.monotonic()
    with pytest.raises(EngineUnavailable) as raised:
        host_pool.analyze_files(paths)
    assert time.monotonic() - started < executors.CONNECT_TIMEOUT_S
    message = str(raised.value)
    assert address in message and "dask scheduler" in message and "dask worker" in message
    assert raised.value.http_status == 503 and raised.value.exit_code == 6


def test_unreachable_scheduler_is_a_503_naming_it(tmp_path: Path) -> None:
    from tb_profile_plugin.plugin import ProfilePlugin

    address = f"tcp://127.0.0.1:{_closed_port()}"
    logdir = tmp_path / "logdir"
    shutil.copytree(TWO_HOSTS, logdir / "plugins" / "profile" / TWO_HOSTS.name)
    flags = argparse.Namespace(profile_scheduler=address)
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(logdir), flags=flags))
    client = Client(plugin.get_plugin_apps()["/data"])
    response = client.get("/", query_string={"run": TWO_HOSTS.name, "tag": "pod_viewer",
                                             "host": "ALL_HOSTS"})
    assert response.status_code == 503
    error = json.loads(response.get_data())["error"]
    assert address in error and "TB_PROFILE_SCHEDULER" in error
    # One host needs no worker: it is still served.
    host = sorted(TWO_HOSTS.glob("*.xplane.pb"))[0].name.removesuffix(".xplane.pb")
    response = client.get("/", query_string={"run": TWO_HOSTS.name, "tag": "overview_page",
                                             "host": host})
    assert response.status_code == 200


def test_cli_exits_6_with_one_line(tmp_path: Path) -> None:
    address = f"tcp://127.0.0.1:{_closed_port()}"
    env = dict(os.environ, TB_PROFILE_CACHE_DIR="off")
    done = subprocess.run(
        [sys.executable, "-m", "tb_profile_plugin.cli", "summary", str(TWO_HOSTS),
         "--scheduler", address], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 6, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and address in lines[0] and lines[0].startswith("tb-profile: ")


def test_all_hosts_views_never_decode_the_hosts_in_the_server(tmp_path: Path) -> None:
    """run_tools, hosts and the combining views read facts and analyses from the workers, and
    their documents are those built here from the decoded hosts."""
    from tb_profile_plugin.plugin import ProfilePlugin

    logdir = tmp_path / "logdir"
    shutil.copytree(TWO_HOSTS, logdir / "plugins" / "profile" / TWO_HOSTS.name)
    tf_data = logdir / "tf_data" / "plugins" / "profile" / TWO_HOSTS.name
    tf_data.mkdir(parents=True)
    for name in ("a", "b"):  # two hosts with tf.data pipelines
        shutil.copy(next(session_dir("tfdata_slow").glob("*.xplane.pb")),
                    tf_data / f"{name}.xplane.pb")
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(logdir)))
    apps = plugin.get_plugin_apps()
    assert "pod_viewer" in json.loads(Client(apps["/run_tools"]).get(
        "/", query_string={"run": TWO_HOSTS.name}).get_data())
    views = {TWO_HOSTS.name: ("overview_page", "input_pipeline_analyzer", "tensorflow_stats",
                              "pod_viewer", "profile_info"),
             f"tf_data/{TWO_HOSTS.name}": ("tf_data_bottleneck_analysis", "profile_info")}
    for run, names in views.items():
        session = logdir / run.removesuffix(TWO_HOSTS.name) / "plugins" / "profile" / \
            TWO_HOSTS.name
        profiles = {p.name.removesuffix(".xplane.pb"): decode_xspace(p.read_bytes())
                    for p in sorted(session.glob("*.xplane.pb"))}
        for view in names:
            query = {"run": run, "tag": view}
            hosts = Client(apps["/hosts"]).get("/", query_string=query)
            assert json.loads(hosts.get_data())[0] == "ALL_HOSTS"
            response = Client(apps["/data"]).get("/", query_string={**query,
                                                                    "host": "ALL_HOSTS"})
            assert response.status_code == 200, response.get_data()
            # The same document as one built here from the decoded hosts.
            here = registry.VIEWS[view].build(registry.ViewRequest(run, "ALL_HOSTS", profiles, {}))
            assert json.loads(response.get_data()) == json.loads(json.dumps(here)), view
    assert plugin._store.cached_bytes == 0
    assert plugin._store.decode_count == 0


def test_a_host_task_returns_after_its_disk_cache_writes(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache writes entries after the answer; a worker's host task waits for them, so the
    host's columns are not still held (queued) when the worker takes its next host."""
    from tb_profile_plugin.xspace import cache
    from tb_profile_plugin.xspace.cache import writer as cache_writer

    written: list[str] = []
    real_write = cache_writer._write_entry

    def slow_write(*args: object, **kwargs: object) -> None:
        time.sleep(0.3)
        real_write(*args, **kwargs)  # type: ignore[arg-type]
        written.append("entry")

    monkeypatch.setattr(cache_writer, "_write_entry", slow_write)
    monkeypatch.setenv("TB_PROFILE_CACHE_DIR", str(tmp_path))
    path = next(session_dir("custom_loop").glob("*.xplane.pb"))
    profile = decode_xspace(path.read_bytes())

    def task(_: str) -> int:
        cache.save_later(profile, "host-task-entry")
        return 7

    assert executors.host_task(task, str(path)) == 7
    assert written == ["entry"]
    assert not cache_writer._pending
