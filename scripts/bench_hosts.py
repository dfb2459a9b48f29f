"""Multi-host benchmark (`scripts/bench.py --hosts N`): one host vs N hosts analysed together.

Writes N synthetic hosts (tests/pod_runs.py: STEPS steps of OPS_PER_STEP host ops each, so every
host is a profile of ~STEPS * (OPS_PER_STEP + 1) events) into a temporary run directory, then
times, each in a fresh child process with the disk cache off (every host is really decoded):

  one_host_s / one_host_peak_rss_mb     the first host alone (in process, no pool)
  all_hosts_s / all_hosts_peak_rss_mb   all N hosts: per-host analysis in the worker pool
                                        (analysis/host_pool.py) plus the combination, i.e. the
                                        ALL_HOSTS pod viewer document
  serial_hosts_s                        the same N hosts analysed one after another in process
                                        (what the pool saves)

Peak RSS is of the whole process tree (the child and its pool workers), sampled every 10 ms
from /proc, so it counts every worker alive at the same time.
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

ROOT = Path(__file__).resolve().parent.parent
STEPS = 400
OPS_PER_STEP = 150

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
mode, run_dir = sys.argv[2], sys.argv[3]
from pathlib import Path
from tb_profile_plugin.analysis import host_pool
from tb_profile_plugin.analysis.host_analysis import analyze_file
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


def _measure(mode: str, run_dir: Path) -> dict[str, float]:
    env = dict(os.environ, TB_PROFILE_CACHE_DIR="off")
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(ROOT), mode, str(run_dir)],
                            env=env, stdout=subprocess.PIPE, text=True)
    peak_kb = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_kb
        while not done.is_set():
            peak_kb = max(peak_kb, _tree_rss_kb(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"bench child {mode} failed ({proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_mb"] = peak_kb / 1024
    return result


def run(num_hosts: int) -> dict[str, object]:
    sys.path.insert(0, str(ROOT))
    from tests import pod_runs

    plans = [pod_runs.HostPlan(f"worker_{k:03d}", k % 3, STEPS + k % 3, 1000 * k,
                               clock_skew_us=37 * k, ops_per_step=OPS_PER_STEP,
                               slow_steps=frozenset({50 + k})) for k in range(num_hosts)]
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
