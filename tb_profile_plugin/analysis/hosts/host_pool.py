"""Per-host results of a run's files: cached per file, computed on the executor when several.

`analyze_files({host: path})` returns every host's `HostAnalysis`, `facts_of_files` every
host's `HostFacts` (what the `run_tools` and `hosts` routes and the views' `available` read):

1. A host whose file (path and `fs.identity`: size, mtime, inode, ctime, content fingerprint)
   was seen before is served from an in-memory cache of the small results (least recently used
   dropped beyond `CACHE_ENTRIES`). A failure (facts saying the file could not be read) is
   remembered for `FAILURE_TTL_S` seconds only, and under the file's identity, which a chmod
   changes (its ctime): a host whose permissions are fixed is read again without a restart.
2. One missing host is computed in this process (through `ProfileStore` when one is given, so
   a profile the server already decoded is reused): a single-host request never waits for a
   worker.
3. Several missing hosts go to the executor (analysis/hosts/executors.py: the local process pool,
   or a Dask cluster), one task per host. Each task decodes its file (through the worker's own
   disk cache), computes and returns only the small result; the server never decodes them.
   A local worker that dies breaks the pool: the pool is replaced and the hosts without an
   answer are submitted again, once (Dask reschedules lost tasks itself). A request that stops
   waiting (503, 499) cancels its hosts not started; those already running finish in their
   workers and their answers are kept in the cache above, so asking again continues.

Each pass reports hosts done / total to the current request's tracker
(analysis/hosts/host_progress.py: the page's and the CLI's progress bars).

Local paths are made absolute before they leave the process, so workers with another working
directory open the same files; remote URLs (gs://, s3://) are passed as they are.
"""

from __future__ import annotations

import collections
import functools
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from tb_profile_plugin import fs
from tb_profile_plugin.analysis.hosts import executors, host_progress
from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis, analyze, analyze_file
from tb_profile_plugin.analysis.hosts.host_facts import (
    HostFacts,
    host_facts,
    host_facts_file,
    unreadable_facts,
)
from tb_profile_plugin.errors import EngineUnavailable, NotFound, UnreadableProfile
from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.xspace.store import ProfileStore, identify_profile

CACHE_ENTRIES = 2048
#: How long an unreadable host's facts are remembered (its file's identity unchanged).
FAILURE_TTL_S = 5.0
#: Kept for callers of the old pool: the local pool's workers (capped by $TB_PROFILE_HOST_WORKERS).
WORKERS_ENV = executors.WORKERS_ENV

T = TypeVar("T")
_Key = tuple[Any, ...]  # (kind, path, *fs.Identity)
#: key -> (result, when it expires: time.monotonic(); None for a result that does not)
_cache: collections.OrderedDict[_Key, tuple[Any, float | None]] = collections.OrderedDict()
_lock = threading.Lock()
#: How many host files were computed on the executor (tests and the bench read it).
pool_runs = 0
#: How many host tasks were submitted again after a local worker died (tests read it).
pool_retries = 0


def pool_size(num_hosts: int) -> int:
    """Local workers for `num_hosts` files: the CPU count (or $TB_PROFILE_HOST_WORKERS), at
    most one per host."""
    return max(1, min(executors.local_workers(), num_hosts))


def _stat(path: str) -> tuple[Any, ...]:
    """The identity of a host file (`fs.identity`); NotFound when it is gone,
    UnreadableProfile when it is not a regular file, over the size limit or cannot be reached
    (messages name no directory)."""
    return tuple(identify_profile(path))


def _failed(value: Any) -> bool:
    """Whether `value` is facts saying the file could not be read."""
    return getattr(value, "failure", None) is not None


def _remember(key: _Key, value: Any) -> None:
    expires = time.monotonic() + FAILURE_TTL_S if _failed(value) else None
    with _lock:
        _cache[key] = (value, expires)
        _cache.move_to_end(key)
        while len(_cache) > CACHE_ENTRIES:
            _cache.popitem(last=False)


def _lookup(key: _Key) -> Any:
    with _lock:
        found = _cache.get(key)
        if found is None:
            return None
        value, expires = found
        if expires is not None and time.monotonic() >= expires:
            del _cache[key]  # a remembered failure is tried again
            return None
        _cache.move_to_end(key)
        return value


def worker_path(path: str) -> str:
    """The path a worker opens: absolute for local files, URLs unchanged."""
    return path if fs.is_remote(path) else os.path.abspath(path)


def run_on_executor(
    task: Callable[[str], T], paths: list[str], on_done: Callable[[int], None] = lambda _: None,
    on_late: Callable[[int, T], None] = lambda _, __: None,
) -> list[T]:
    """`task(path)` for every path on the executor, in order (see the module docstring);
    `on_done(index)` as each result arrives, in order. When the request stops waiting (its
    budget, its client, an error), the hosts not started are cancelled and those running
    finish in their workers: `on_late(index, result)` is called with each of their results,
    and with those that finished before the stop (host_pool keeps them for the next ask)."""
    global pool_retries
    results: dict[int, T] = {}
    for attempt in range(2):
        pool = executors.executor()
        watch = executors.scheduler_watch(pool)  # a Dask scheduler that stops answering: 503
        futures: dict[int, Future[T]] = {}
        try:
            for index, path in enumerate(paths):
                if index not in results:
                    futures[index] = pool.submit(executors.host_task, task, worker_path(path))
            for index, future in futures.items():
                results[index] = _result(future, watch)
                on_done(index)
            break
        except BrokenProcessPool:
            executors.reset_local(pool)
            if attempt:
                raise EngineUnavailable(
                    "a host analysis worker died twice during this request (out of memory?); "
                    f"set {executors.WORKERS_ENV} lower to analyse fewer hosts at once") from None
            for index, future in futures.items():  # keep what finished before the break
                if (index not in results and future.done() and not future.cancelled()
                        and future.exception() is None):
                    results[index] = future.result()
                    on_done(index)
            with _lock:
                pool_retries += len(paths) - len(results)
        except CancelledError:  # a Dask client that lost its scheduler cancels its futures
            address = executors.scheduler_address() or "?"
            executors.forget_client(address)
            raise executors.unavailable(address, "went away during the request") from None
        except BaseException:  # the request stops waiting: what finished is kept too
            for index, value in results.items():
                on_late(index, value)
            raise
        finally:
            for index, future in futures.items():
                if index not in results and not future.cancel():  # running: keep its answer
                    future.add_done_callback(functools.partial(_late, on_late, index))
    return [results[index] for index in range(len(paths))]


def _late(on_late: Callable[[int, T], None], index: int, future: Future[T]) -> None:
    """A host's answer that arrived after its request stopped waiting, handed to `on_late`."""
    try:
        if future.cancelled() or future.exception() is not None:
            return
        on_late(index, future.result())
    except Exception:  # noqa: BLE001 - a Dask future may fail to fetch; nothing to keep then
        return


#: A request waiting for a worker looks at its budget this often (request_budget.py).
WAIT_POLL_SECONDS = 0.25


def _result(future: Future[T], watch: Callable[[], None] = lambda: None) -> T:
    """The future's result; meanwhile the request's budget is checked, so a request past its
    time or left by its client stops waiting (its pending hosts are then cancelled), and
    `watch()` is called (executors.scheduler_watch: a Dask scheduler that no longer answers
    raises EngineUnavailable)."""
    while True:
        checkpoint()
        try:
            return future.result(timeout=WAIT_POLL_SECONDS)
        except TimeoutError:  # concurrent.futures' and Dask's (builtin since Python 3.11)
            watch()


def _per_host(
    kind: str, paths: Mapping[str, str], local: Callable[[str], T], remote: Callable[[str], T],
    on_host: Callable[[str], None] = lambda _: None,
) -> dict[str, T]:
    global pool_runs
    keys = {host: (kind, path, *_stat(path)) for host, path in paths.items()}
    results: dict[str, T] = {}
    missing: list[str] = []
    host_progress.begin(kind, len(paths))

    def host_done(host: str) -> None:
        on_host(host)
        host_progress.advance()

    for host, key in keys.items():
        found = _lookup(key)
        if found is None:
            missing.append(host)
        else:
            results[host] = found
            host_done(host)
    if len(missing) == 1:
        host = missing[0]
        results[host] = local(paths[host])
        _remember(keys[host], results[host])
        host_done(host)
    elif missing:
        done = run_on_executor(remote, [paths[h] for h in missing],
                               lambda index: host_done(missing[index]),
                               lambda index, value: _remember(keys[missing[index]], value))
        for host, value in zip(missing, done, strict=True):
            results[host] = value
            _remember(keys[host], value)
        with _lock:
            pool_runs += len(missing)
    return {host: results[host] for host in paths}


def per_file(
    kind: str, paths: Mapping[str, str], task: Callable[[str], T],
    local: Callable[[str], T] | None = None,
) -> dict[str, T]:
    """{host: task(path)} for {host: path}, in the order of `paths`: `kind` names the task in
    the per-file cache; several missing hosts run on the executor (`task` must be a module-level
    function of the path), one in this process (`local(path)`, else `task(path)`)."""
    return _per_host(kind, paths, local or task, task)


def analyze_files(
    paths: Mapping[str, str], store: ProfileStore | None = None
) -> dict[str, HostAnalysis]:
    """{host: HostAnalysis} for {host: xplane path}, in the order of `paths`."""

    def local(path: str) -> HostAnalysis:
        return analyze(store.open(path)) if store is not None else analyze_file(path)

    return _per_host("analysis", paths, local, analyze_file)


def facts_of_files(
    paths: Mapping[str, str], store: ProfileStore | None = None,
    on_host: Callable[[str], None] = lambda _: None,
) -> dict[str, HostFacts]:
    """{host: HostFacts} for {host: xplane path}, in the order of `paths`; an unreadable or
    vanished file gives facts that carry the error (`HostFacts.failure`). `on_host(host)` is
    called as each host's facts are known (the CLI's progress bar)."""

    def local(path: str) -> HostFacts:
        if store is None:
            return host_facts_file(path)
        try:
            return host_facts(store.open(path))
        except (UnreadableProfile, NotFound) as exc:
            return unreadable_facts(exc)

    found: dict[str, HostFacts] = {}
    present: dict[str, str] = {}
    for host, path in paths.items():
        try:
            _stat(path)
            present[host] = path
        except (UnreadableProfile, NotFound) as exc:
            found[host] = unreadable_facts(exc)
            on_host(host)
    found.update(_per_host("facts", present, local, host_facts_file, on_host))
    return {host: found[host] for host in paths}


def clear_cache() -> None:
    with _lock:
        _cache.clear()
