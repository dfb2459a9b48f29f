"""Where per-host work runs: one `concurrent.futures.Executor` for the whole process.

Per-host work is a pure function of a file path or URL that returns a small result
(analysis/hosts/host_pool.py submits `analyze_file` and `host_facts_file`). Two engines run it:

- **local** (the default): the standard library's `ProcessPoolExecutor`, as many workers as
  CPUs (`TB_PROFILE_HOST_WORKERS` caps them), created on first use and kept for the life of
  the process, so later requests find warm workers. Workers come from a *forkserver* (spawn
  where there is none): nothing of the server (its threads, its sockets, TensorBoard's state) is
  forked. The forkserver is started with `PYTHONSAFEPATH=1` and preloads the analysis modules,
  so neither it nor a worker puts the current directory on its import path: a file named
  `inspect.py` or `numpy.py` where TensorBoard was started cannot shadow the real module.
  A worker that dies (out of memory, killed) breaks the pool; `reset_local` replaces it and
  host_pool.py retries the hosts that had no answer.
- **Dask distributed**, when a scheduler address is configured: `TB_PROFILE_SCHEDULER`, the
  TensorBoard flag `--profile_scheduler`, or `--scheduler` on the `tb-profile` commands (they
  call `configure`). One `distributed.Client` per address, connected on first use with a
  timeout (`CONNECT_TIMEOUT_S`, `TB_PROFILE_SCHEDULER_TIMEOUT_S`), its `get_executor()` used
  like the local pool; the scheduler runs again a task whose worker died, and a task that
  failed is retried once (`DASK_RETRIES`). dask is imported only
  then (`pip install "tb-profile[dask]"`). An unreachable scheduler, or one without workers,
  raises `EngineUnavailable` (HTTP 503, CLI exit 6) with the address and what to do, never a
  hang.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any, TypeVar

import tb_profile_plugin
from tb_profile_plugin import column_threads, memory_release
from tb_profile_plugin.errors import EngineUnavailable
from tb_profile_plugin.xspace import cache

#: Environment variable naming a Dask scheduler (tcp://HOST:8786); unset: the local pool.
SCHEDULER_ENV = "TB_PROFILE_SCHEDULER"
#: Environment variable capping the local pool's workers (default: the machine's CPU count).
WORKERS_ENV = "TB_PROFILE_HOST_WORKERS"
#: Seconds to wait for a scheduler to answer, and for it to have at least one worker
#: (default; $TB_PROFILE_SCHEDULER_TIMEOUT_S sets another).
CONNECT_TIMEOUT_S = 10.0
TIMEOUT_ENV = "TB_PROFILE_SCHEDULER_TIMEOUT_S"
#: Times Dask runs again a host task that failed on a worker.
DASK_RETRIES = 1
#: Modules the forkserver imports once, so every forked worker starts with them loaded.
PRELOAD = ["tb_profile_plugin.analysis.hosts.executors",
           "tb_profile_plugin.analysis.hosts.host_analysis",
           "tb_profile_plugin.analysis.hosts.host_facts"]

T = TypeVar("T")
_lock = threading.Lock()
_configured: str | None = None
_local: ProcessPoolExecutor | None = None
_clients: dict[str, Any] = {}


def configure(scheduler: str | None) -> None:
    """Use the Dask scheduler at `scheduler` (None or "": `TB_PROFILE_SCHEDULER`, else local)."""
    global _configured
    _configured = scheduler or None


def scheduler_address() -> str | None:
    """The configured Dask scheduler address, or None for the local pool."""
    return _configured or os.environ.get(SCHEDULER_ENV) or None


def local_workers() -> int:
    """Workers of the local pool: the CPU count, or $TB_PROFILE_HOST_WORKERS when set."""
    configured = os.environ.get(WORKERS_ENV, "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return os.cpu_count() or 1


def describe() -> str:
    """The engine in words, for logs and `tb-profile serve`'s start-up line."""
    address = scheduler_address()
    if address:
        return f"Dask scheduler {address}"
    return f"local process pool ({local_workers()} workers)"


def executor() -> Executor:
    """The executor per-host work goes to (see the module docstring)."""
    address = scheduler_address()
    if address:
        return _dask_executor(address)
    global _local
    with _lock:
        if _local is None:
            _local = ProcessPoolExecutor(local_workers(), mp_context=_clean_context(),
                                         initializer=_on_worker_start)
        return _local


def host_task(task: Callable[[str], T], path: str) -> T:
    """`task(path)` as a worker runs it (what host_pool.py submits, on either engine): the C
    allocator put back to glibc's dynamic thresholds first, where the environment fixed them
    (Dask's nanny does: 1.8x slower analysis otherwise; memory_release.py), and the freed heap
    given back after (its disk-cache writes finished first), so a long-lived worker does not
    hold its last host's peak. A worker takes its host's lines one after another (the pool
    already runs a host per CPU: column_threads.py)."""
    memory_release.tune_worker_allocator()
    column_threads.single_threaded()
    try:
        return task(path)
    finally:
        # The disk cache writes its entries after the answer (xspace/cache/writer.py); a worker
        # waits for them here, so the host's columns are freed before its next host (left
        # queued, they kept the tree of 16 x 2.4M-event hosts at 1.52 GB instead of ~0.95).
        cache.flush()
        memory_release.release_now()


def is_local(pool: Executor) -> bool:
    return isinstance(pool, ProcessPoolExecutor)


def reset_local(broken: Executor) -> None:
    """Forget a local pool that broke (a worker died), so the next `executor()` starts one."""
    global _local
    with _lock:
        if _local is broken:
            _local = None
    broken.shutdown(wait=False, cancel_futures=True)


def shutdown() -> None:
    """Stop the local pool and close Dask clients (tests; the process's exit does it too)."""
    global _local
    with _lock:
        pool, _local = _local, None
        clients = list(_clients.values())
        _clients.clear()
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
    for client in clients:
        client.close()


def forget_client(address: str) -> None:
    """Drop the client of `address` (its scheduler went away); the next use reconnects."""
    with _lock:
        client = _clients.pop(address, None)
    if client is not None:
        try:
            client.close(timeout=2)
        except Exception:  # already gone
            pass


def unavailable(address: str, what: str) -> EngineUnavailable:
    return EngineUnavailable(
        f"the Dask scheduler at {address} {what}; start it (`dask scheduler`) and at least one "
        f"worker (`dask worker {address}`) on machines that can read the profiles, or unset "
        f"{SCHEDULER_ENV} / --profile_scheduler (tb-profile --scheduler) to analyse the hosts "
        "on this machine")


# --- local pool ---------------------------------------------------------------------------


def _clean_context() -> multiprocessing.context.BaseContext:
    """A forkserver context whose server was started with a safe import path (spawn on
    platforms without forkserver)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    from multiprocessing import forkserver

    if getattr(forkserver._forkserver, "_forkserver_pid", None) is None:  # not started yet
        context.set_forkserver_preload(PRELOAD)
        saved = os.environ.get("PYTHONSAFEPATH")
        os.environ["PYTHONSAFEPATH"] = "1"  # Python >= 3.11: no '' first on the server's path
        try:
            forkserver.ensure_running()
        finally:
            if saved is None:
                os.environ.pop("PYTHONSAFEPATH", None)
            else:
                os.environ["PYTHONSAFEPATH"] = saved
    return context


def clean_import_path(path: list[str], cwd: str) -> list[str]:
    """`path` without the entries that mean the current directory ('' and `cwd` itself) unless
    the package itself lives there (a checkout run from its root)."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tb_profile_plugin.__file__)))
    keep = []
    for entry in path:
        where = os.path.normpath(os.path.join(cwd, entry))
        if where == os.path.normpath(cwd) and where != package_root:
            continue
        keep.append(entry)
    return keep


def _on_worker_start() -> None:  # pragma: no cover (runs in the workers)
    sys.path[:] = clean_import_path(sys.path, os.getcwd())


# --- Dask -----------------------------------------------------------------------------------


def _dask_executor(address: str) -> Executor:
    with _lock:
        client = _clients.get(address)
    if client is None:
        client = _connect(address)
        with _lock:
            client = _clients.setdefault(address, client)
    if client.status not in ("running", "connecting"):
        forget_client(address)
        raise unavailable(address, f"is no longer reachable (client {client.status})")
    # A task whose worker died is run again by the scheduler (up to its allowed-failures);
    # `retries` also runs again a task that raised on a worker (a worker out of memory).
    return client.get_executor(pure=False, retries=DASK_RETRIES)  # type: ignore[no-any-return]


def _connect(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError as exc:
        raise EngineUnavailable(
            f"a Dask scheduler is configured ({address}) but dask is not installed here: "
            "pip install \"tb-profile[dask]\" (or unset "
            f"{SCHEDULER_ENV} / --profile_scheduler to analyse the hosts on this machine)"
        ) from exc
    timeout_s = connect_timeout_s()
    _probe(address, timeout_s)
    try:
        client = Client(address, timeout=timeout_s, set_as_default=False)
    except ValueError as exc:
        raise unavailable(address, f"is not a scheduler address ({exc})") from exc
    except (OSError, TimeoutError) as exc:
        raise unavailable(address, f"did not answer within {timeout_s:g} s") from exc
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except (OSError, TimeoutError) as exc:
        client.close()
        raise unavailable(address, f"has no workers (waited {timeout_s:g} s)") from exc
    return client


def connect_timeout_s() -> float:
    """Seconds to wait for the scheduler: $TB_PROFILE_SCHEDULER_TIMEOUT_S, else 10."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, CONNECT_TIMEOUT_S))
    except ValueError:
        return CONNECT_TIMEOUT_S
    return value if value > 0 else CONNECT_TIMEOUT_S


def _probe(address: str, timeout_s: float) -> None:
    """Fail at once, with a sentence, when nothing listens at a tcp:// address (the Dask client
    would retry until its timeout and then warn while it is collected)."""
    if not address.startswith("tcp://"):
        return
    host, _, port = address[len("tcp://"):].rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise unavailable(address, "is not a scheduler address (tcp://HOST:PORT)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise unavailable(address, f"cannot be reached ({reason})") from exc
