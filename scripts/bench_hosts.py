"""Multi-host benchmark (`scripts/bench.py --hosts N`): one host vs N hosts analysed together.

Writes N synthetic hosts (tests/pod_runs.py: STEPS steps of OPS_PER_STEP host ops each, so every
host is a profile of ~STEPS * (OPS_PER_STEP + 1) events) into a temporary run directory, then
times, each in a fresh child process with the disk cache off (every host is really decoded):

  one_host_s / one_host_peak_rss_mb     the first host alone (in process, no pool)
  all_hosts_s / all_hosts_peak_rss_mb   all N hosts: per-host analysis in the worker pool
                                        (analysis/hosts/host_pool.py) plus the combination, i.e. the
                                        ALL_HOSTS pod viewer document
  serial_hosts_s                        the same N hosts analysed one after another in process
                                        (what the pool saves)

Peak RSS is of the whole process tree (the child and its pool workers), sampled every 10 ms
from /proc, so it counts every worker alive at the same time.

`server_mode(N, code, scheduler)` (`scripts/bench.py --hosts N --server [--code DIR]
[--scheduler tcp://...] [--steps S]`) measures what TensorBoard's process does: a ProfilePlugin
on a logdir holding the N hosts answers `run_tools`, `hosts` (pod viewer), then the ALL_HOSTS pod
viewer and overview, cold (disk cache off); it reports each route's seconds, the server
process's own peak RSS (VmHWM) and the process tree's (Dask workers are not in the tree).
`--code` runs another checkout of the package (a `git worktree` of an older commit) to compare
before and after.

`real_mode(capture, N)` (`scripts/bench.py --hosts N --capture FILE [--engines ...]`): real-size
hosts, N hard links of one real capture under distinct host names. For each engine and each
view (ALL_HOSTS pod viewer, overview), cold: a fresh server process with an empty disk cache
answers `run_tools`, `hosts` and the view (`seconds` is the three together, what a page load
waits for; `view_s` the data route alone); engines:

  local       the local process pool (CPU-count workers, forkserver)
  dask        a Dask cluster started fresh for each figure: `dask scheduler` and 2
              `dask worker --nthreads 1` processes on 127.0.0.1, each with an empty cache
  reference   xprof (`--reference-python`, xprof 2.24.2) `xspace_to_tool_data` given all N
              paths, `ALL_HOSTS` as its multi-host tools are, no saved results

Peak RSS: the server process's own (VmHWM) and the whole tree's, sampled every 10 ms over the
server and its children plus, for Dask, the scheduler and workers (their trees). Each figure
carries the 1-minute load average before and after it (the machine is shared).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STEPS = 400
OPS_PER_STEP = 150

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
mode, run_dir = sys.argv[2], sys.argv[3]
from pathlib import Path
from tb_profile_plugin.analysis.hosts import host_pool
from tb_profile_plugin.analysis.hosts.host_analysis import analyze_file
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.store import ProfileStore
paths = {p.name[:-len('.xplane.pb')]: str(p) for p in sorted(Path(run_dir).glob('*.xplane.pb'))}
t = time.perf_counter()
if mode == 'one':
    host, path = next(iter(paths.items()))
    profiles = {host: ProfileStore(max_bytes=0).open(path)}
    doc = registry.VIEWS['overview_page'].build(registry.ViewRequest('b', host, profiles, {}))
    steps = len(doc['steps'])
elif mode == 'serial':
    steps = sum(len(analyze_file(p).steps) for p in paths.values())
else:
    from tb_profile_plugin.xspace.model import Profile
    empty = Profile([], [], [], [], 0)  # the view reads only the profiles' errors from these
    request = registry.ViewRequest('b', 'ALL_HOSTS', {h: empty for h in paths}, {}, paths)
    doc = registry.VIEWS['pod_viewer'].build(request)
    steps = doc['num_steps']
print(json.dumps({'seconds': time.perf_counter() - t, 'steps': steps,
                  'workers': host_pool.pool_size(len(paths))}))
"""


_SERVER_CHILD = r"""
import argparse, json, sys, time
sys.path.insert(0, sys.argv[1])
logdir, run, scheduler = sys.argv[2], sys.argv[3], sys.argv[4] or None
from tensorboard.plugins import base_plugin
from werkzeug.test import Client
from tb_profile_plugin.plugin import ProfilePlugin

def main():
    flags = argparse.Namespace(profile_scheduler=scheduler)
    apps = ProfilePlugin(base_plugin.TBContext(logdir=logdir, flags=flags)).get_plugin_apps()
    seconds = {}
    for name, route, query in [
            ("run_tools", "/run_tools", {"run": run}),
            ("hosts", "/hosts", {"run": run, "tag": "pod_viewer"}),
            ("pod_viewer", "/data", {"run": run, "tag": "pod_viewer", "host": "ALL_HOSTS"}),
            ("overview_page", "/data", {"run": run, "tag": "overview_page", "host": "ALL_HOSTS"})]:
        t = time.perf_counter()
        response = Client(apps[route]).get("/", query_string=query)
        assert response.status_code == 200, response.get_data()[:300]
        seconds[name] = time.perf_counter() - t
    hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status")
                  if line.startswith("VmHWM:"))
    print(json.dumps({"seconds": seconds, "server_peak_rss_mb": hwm_kb / 1024}))

if __name__ == "__main__":
    main()
"""


def _tree_rss_kb(root_pid: int) -> int:
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def _measure(mode: str, run_dir: Path, argv: list[str] | None = None) -> dict[str, Any]:
    env = dict(os.environ, TB_PROFILE_CACHE_DIR="off")
    argv = argv or ["-c", _CHILD, str(ROOT), mode, str(run_dir)]
    result = _sampled([sys.executable, *argv], env, [])
    result["peak_rss_mb"] = result.pop("tree_peak_rss_mb")
    return result


def _plans(num_hosts: int, steps: int = STEPS) -> list[Any]:
    sys.path.insert(0, str(ROOT))
    from tests import pod_runs

    return [pod_runs.HostPlan(f"worker_{k:03d}", k % 3, steps + k % 3, 1000 * k,
                              clock_skew_us=37 * k, ops_per_step=OPS_PER_STEP,
                              slow_steps=frozenset({50 + k})) for k in range(num_hosts)]


def server_mode(num_hosts: int, code: Path | None = None, scheduler: str | None = None,
                steps: int = STEPS) -> dict[str, object]:
    """The plugin's ALL_HOSTS routes in a fresh process (see the module docstring)."""
    plans = _plans(num_hosts, steps)
    from tests import pod_runs

    with tempfile.TemporaryDirectory() as tmp:
        bench_dir = Path(tmp)
        run_dir = bench_dir / "logdir" / "plugins" / "profile" / "session"
        paths = pod_runs.write_run(run_dir, plans)
        size_mb = sum(Path(p).stat().st_size for p in paths.values()) / 2**20
        script = bench_dir / "serve.py"  # a main module with a guard, like tensorboard's
        script.write_text(_SERVER_CHILD)
        argv = [str(script), str(code or ROOT), str(bench_dir / "logdir"), "session",
                scheduler or ""]
        result = _measure("server", run_dir, argv)
    return {"hosts": num_hosts, "cpus": os.cpu_count(), "code": str(code or ROOT),
            "engine": scheduler or "local pool", "events_per_host": steps * (OPS_PER_STEP + 1),
            "files_mb": size_mb, "seconds": result["seconds"],
            "server_peak_rss_mb": result["server_peak_rss_mb"],
            "tree_peak_rss_mb": result["peak_rss_mb"]}


def run(num_hosts: int) -> dict[str, object]:
    plans = _plans(num_hosts)  # puts the checkout on the import path
    from tests import pod_runs

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "session"
        paths = pod_runs.write_run(run_dir, plans)
        size_mb = sum(Path(p).stat().st_size for p in paths.values()) / 2**20
        one = _measure("one", run_dir)
        everything = _measure("all", run_dir)
        serial = _measure("serial", run_dir)
    return {
        "hosts": num_hosts, "cpus": os.cpu_count(), "workers": everything["workers"],
        "events_per_host": STEPS * (OPS_PER_STEP + 1), "files_mb": size_mb,
        "one_host_s": one["seconds"], "one_host_peak_rss_mb": one["peak_rss_mb"],
        "all_hosts_s": everything["seconds"], "all_hosts_peak_rss_mb": everything["peak_rss_mb"],
        "all_hosts_common_steps": everything["steps"],
        "serial_hosts_s": serial["seconds"], "serial_hosts_peak_rss_mb": serial["peak_rss_mb"],
    }


_REAL_SERVER_CHILD = r"""
import argparse, json, sys, time
sys.path.insert(0, sys.argv[1])
logdir, run, scheduler, view = sys.argv[2], sys.argv[3], sys.argv[4] or None, sys.argv[5]
from tensorboard.plugins import base_plugin
from werkzeug.test import Client
from tb_profile_plugin.plugin import ProfilePlugin

def main():
    flags = argparse.Namespace(profile_scheduler=scheduler)
    apps = ProfilePlugin(base_plugin.TBContext(logdir=logdir, flags=flags)).get_plugin_apps()
    seconds = {}
    t0 = time.perf_counter()
    for name, route, query in [
            ("run_tools", "/run_tools", {"run": run}),
            ("hosts", "/hosts", {"run": run, "tag": view}),
            ("view", "/data", {"run": run, "tag": view, "host": "ALL_HOSTS"})]:
        t = time.perf_counter()
        response = Client(apps[route]).get("/", query_string=query)
        assert response.status_code == 200, response.get_data()[:300]
        seconds[name] = time.perf_counter() - t
    total = time.perf_counter() - t0
    hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status")
                  if line.startswith("VmHWM:"))
    print(json.dumps({"seconds": total, "view_s": seconds["view"], "routes_s": seconds,
                      "server_peak_rss_mb": hwm_kb / 1024}))

if __name__ == "__main__":
    main()
"""

_REAL_REFERENCE_CHILD = r"""
import glob, json, sys, time
from xprof.convert import raw_to_tool_data
session, tool = sys.argv[1], sys.argv[2]
paths = sorted(glob.glob(session + "/*.xplane.pb"))
t = time.perf_counter()
data, _ = raw_to_tool_data.xspace_to_tool_data(paths, tool, {"use_saved_result": False})
seconds = time.perf_counter() - t
assert data, "the reference returned no document"
hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status")
              if line.startswith("VmHWM:"))
print(json.dumps({"seconds": seconds, "view_s": seconds, "server_peak_rss_mb": hwm_kb / 1024,
                  "document_bytes": len(data)}))
"""


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _sampled(argv: list[str], env: dict[str, str], also: list[int]) -> dict[str, Any]:
    """Run `argv`, sampling the peak RSS of its tree plus the trees of `also` (pids)."""
    load_before = _load()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    peak_kb = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_kb
        while not done.is_set():
            peak_kb = max(peak_kb, sum(_tree_rss_kb(pid) for pid in [proc.pid, *also]))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"bench child {argv[:3]} failed ({proc.returncode})")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result.update(tree_peak_rss_mb=peak_kb / 1024, load_before=load_before, load_after=_load())
    return result


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_dask(tmp: Path, env: dict[str, str]) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """A fresh scheduler and two one-thread workers (empty caches) on 127.0.0.1."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "dask"]
    procs = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    for k in range(2):
        procs.append(subprocess.Popen(
            [*dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
             "--host", "127.0.0.1"], cwd=tmp, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, "TB_PROFILE_CACHE_DIR": str(tmp / f"worker_cache{k}")}))
    from distributed import Client

    deadline = time.monotonic() + 120
    while True:
        try:
            with Client(address, timeout=5, set_as_default=False) as client:
                client.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
            return address, procs
        except (OSError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in reversed(procs):
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _links(capture: Path, session: Path, copies: int) -> None:
    session.mkdir(parents=True)
    for k in range(copies):
        os.link(capture, session / f"host_{k:03d}.xplane.pb")


def real_mode(capture: Path, copies: int, engines: list[str], views: list[str],
              reference_python: str | None) -> dict[str, Any]:
    """Cold ALL_HOSTS views on `copies` links of a real capture (see the module docstring)."""
    figures: list[dict[str, Any]] = []
    base_env = {k: v for k, v in os.environ.items() if k != "TB_PROFILE_SCHEDULER"}
    for engine in engines:
        for view in views:
            with tempfile.TemporaryDirectory(dir=capture.parent) as tmp_name:
                tmp = Path(tmp_name)
                session = tmp / "logdir" / "plugins" / "profile" / "session"
                _links(capture, session, copies)
                env = {**base_env, "TB_PROFILE_CACHE_DIR": str(tmp / "server_cache")}
                if engine == "reference":
                    if not reference_python:
                        raise SystemExit("the reference engine needs --reference-python")
                    result = _sampled([reference_python, "-c", _REAL_REFERENCE_CHILD,
                                       str(session), view], env, [])
                else:
                    procs: list[subprocess.Popen[bytes]] = []
                    address = ""
                    if engine == "dask":
                        address, procs = _start_dask(tmp, env)
                    script = tmp / "serve.py"  # a main module with a guard, like tensorboard's
                    script.write_text(_REAL_SERVER_CHILD)
                    try:
                        result = _sampled(
                            [sys.executable, str(script), str(ROOT), str(tmp / "logdir"),
                             "session", address, view], env, [p.pid for p in procs])
                    finally:
                        _stop(procs)
                figure = {"engine": engine, "view": view, **result}
                print(json.dumps(figure), file=sys.stderr, flush=True)
                figures.append(figure)
    return {"capture": str(capture), "capture_mb": capture.stat().st_size / 2**20,
            "hosts": copies, "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d"),
            "figures": figures}
