"""Per-host analyses of a run's files: cached per file, and computed in parallel when several.

`analyze_files({host: path})` returns every host's `HostAnalysis`:

1. A host whose file (path, size, modification time) was analysed before is served from an
   in-memory cache (small results, least recently used dropped beyond `CACHE_ENTRIES`).
2. One missing host is analysed in this process (through `ProfileStore` when one is given, so
   a profile the server already decoded is reused): a single-host request never pays for a pool.
3. Several missing hosts go to a pool of `min(os.cpu_count(), hosts)` worker processes
   (analysis/host_worker.py, started with `python -m`, so nothing of the server process, its
   threads or its main script is forked or re-imported). Each worker takes the next host file,
   decodes and analyses it and sends back only the small result (`analyze_file`), then drops
   the decoded columns before the next one: memory is bounded by one decoded host per worker
   plus the small per-host results.

Decoded columns go through the disk cache (xspace/cache.py) in the workers too, so a later
open of the same file, in any process, maps it instead of decoding it again.
"""

from __future__ import annotations

import collections
import json
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from tb_profile_plugin import fs
from tb_profile_plugin.analysis.host_analysis import HostAnalysis, analyze, analyze_file
from tb_profile_plugin.errors import NotFound
from tb_profile_plugin.xspace.store import ProfileStore

CACHE_ENTRIES = 512
#: Environment variable capping the pool's workers (default: the machine's CPU count).
WORKERS_ENV = "TB_PROFILE_HOST_WORKERS"

_Key = tuple[str, int, int]
_cache: collections.OrderedDict[_Key, HostAnalysis] = collections.OrderedDict()
_lock = threading.Lock()
#: How many host files were analysed in pool workers (tests and the bench read it).
pool_runs = 0


def pool_size(num_hosts: int) -> int:
    """Workers for `num_hosts` files: the CPU count (or $TB_PROFILE_HOST_WORKERS), at most one
    per host."""
    cpus = os.cpu_count() or 1
    configured = os.environ.get(WORKERS_ENV, "")
    if configured.isdigit() and int(configured) > 0:
        cpus = int(configured)
    return max(1, min(cpus, num_hosts))


def _key(path: str) -> _Key:
    try:
        size_bytes, mtime_ns = fs.stat(path)
    except FileNotFoundError as exc:
        raise NotFound(f"profile file {path} does not exist (any more)") from exc
    return path, size_bytes, mtime_ns


def _remember(key: _Key, analysis: HostAnalysis) -> None:
    with _lock:
        _cache[key] = analysis
        _cache.move_to_end(key)
        while len(_cache) > CACHE_ENTRIES:
            _cache.popitem(last=False)


def _lookup(key: _Key) -> HostAnalysis | None:
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
        return found


_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise RuntimeError("a host analysis worker exited unexpectedly (out of memory?)")
    return data


def run_workers(paths: list[str], workers: int) -> list[HostAnalysis]:
    """HostAnalysis of each path, computed by `workers` worker processes (see module doc)."""
    pending = list(reversed(list(enumerate(paths))))
    results: list[HostAnalysis | None] = [None] * len(paths)
    failures: list[BaseException] = []
    lock = threading.Lock()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))

    def drive() -> None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tb_profile_plugin.analysis.host_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            while True:
                with lock:
                    if not pending or failures:
                        return
                    index, path = pending.pop()
                proc.stdin.write((json.dumps(path) + "\n").encode())
                proc.stdin.flush()
                size = int.from_bytes(_read_exact(proc.stdout, 8), "little")
                status, value = pickle.loads(_read_exact(proc.stdout, size))
                if status != "ok":
                    raise value
                results[index] = value
        except BaseException as exc:
            with lock:
                failures.append(exc)
        finally:
            proc.stdin.close()
            proc.wait()

    with ThreadPoolExecutor(workers) as threads:
        for _ in range(workers):
            threads.submit(drive)
    if failures:
        raise failures[0]
    return [r for r in results if r is not None]


def analyze_files(
    paths: Mapping[str, str], store: ProfileStore | None = None
) -> dict[str, HostAnalysis]:
    """{host: HostAnalysis} for {host: xplane path}, in the order of `paths`."""
    global pool_runs
    keys = {host: _key(path) for host, path in paths.items()}
    results: dict[str, HostAnalysis] = {}
    missing: list[str] = []
    for host, key in keys.items():
        found = _lookup(key)
        if found is None:
            missing.append(host)
        else:
            results[host] = found
    if len(missing) == 1:
        host = missing[0]
        path = paths[host]
        results[host] = analyze(store.open(path)) if store is not None else analyze_file(path)
        _remember(keys[host], results[host])
    elif missing:
        done = run_workers([paths[h] for h in missing], pool_size(len(missing)))
        for host, analysis in zip(missing, done, strict=True):
            results[host] = analysis
            _remember(keys[host], analysis)
        with _lock:
            pool_runs += len(missing)
    return {host: results[host] for host in paths}


def clear_cache() -> None:
    with _lock:
        _cache.clear()
