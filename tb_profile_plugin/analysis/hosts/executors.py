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
  then (`pip install "tb-profile[dask]"`). An unreachable scheduler, one without workers, one
  that accepts connections but does not answer (stopped, hung, another service on the port),
  or an unsupported address (not tcp://; tls:// without Dask's TLS configured) raises
  `EngineUnavailable` (HTTP 503, CLI exit 6) with the address and what to do, never a hang:
  every scheduler call runs under its own deadline (the timeout + `MARGIN_S`, `_bounded`), a
  kept client's scheduler is asked first on every request (`check_scheduler`) and every few
  seconds while a request waits for its hosts (`scheduler_watch`), and a client whose
  scheduler failed is dropped, so the next request connects afresh.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
import threading
import time
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
        _close_later(client)


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
    timeout_s = connect_timeout_s()
    connection_args = _connection_args(address)
    with _lock:
        client = _clients.get(address)
    if client is None:
        client = _connect(address, timeout_s, connection_args)
        with _lock:
            kept = _clients.setdefault(address, client)
        if kept is not client:  # another request connected at the same time
            _close_later(client)
            client = kept
    else:
        # The kept client does not notice a scheduler that stopped answering (SIGSTOP, a hung
        # machine: the connection stays open), so every request asks the scheduler first.
        check_scheduler(address, timeout_s)
    if client.status not in ("running", "connecting"):
        forget_client(address)
        raise unavailable(address, f"is no longer reachable (client {client.status})")
    # A task whose worker died is run again by the scheduler (up to its allowed-failures);
    # `retries` also runs again a task that raised on a worker (a worker out of memory).
    return client.get_executor(pure=False, retries=DASK_RETRIES)  # type: ignore[no-any-return]


def _connect(address: str, timeout_s: float, connection_args: dict[str, Any]) -> Any:
    try:
        from distributed import Client
    except ImportError as exc:
        raise EngineUnavailable(
            f"a Dask scheduler is configured ({address}) but dask is not installed here: "
            "pip install \"tb-profile[dask]\" (or unset "
            f"{SCHEDULER_ENV} / --profile_scheduler to analyse the hosts on this machine)"
        ) from exc
    deadline = time.monotonic() + timeout_s
    _probe(address, timeout_s)
    _ask_scheduler(address, timeout_s, connection_args)  # a Dask scheduler, and it answers

    def connect() -> Any:
        left = max(0.5, deadline - time.monotonic())
        client = Client(address, timeout=left, set_as_default=False,
                        **({"security": connection_args["security"]}
                           if "security" in connection_args else {}))
        try:
            client.wait_for_workers(1, timeout=max(0.5, deadline - time.monotonic()))
        except (OSError, TimeoutError) as exc:
            _close_later(client)
            raise _NoWorkers from exc
        return client

    try:
        return _bounded(address, timeout_s, connect, deadline=deadline,
                        on_late=_close_later)
    except _NoWorkers:
        raise unavailable(address, f"has no workers (waited {timeout_s:g} s)") from None


class _NoWorkers(Exception):
    pass


#: Seconds past TB_PROFILE_SCHEDULER_TIMEOUT_S a scheduler call may take before it is abandoned.
MARGIN_S = 0.5
#: While a request waits for host results on Dask, the scheduler is asked whether it still
#: answers this often (a fraction of the timeout; at most every `CHECK_INTERVAL_MAX_S`).
CHECK_INTERVAL_MAX_S = 5.0
#: Schemes a scheduler address may have (tls:// only where Dask's TLS is configured).
SCHEMES = ("tcp", "tls")


def _bounded(address: str, timeout_s: float, call: Callable[[], T], *,
             deadline: float | None = None,
             on_late: Callable[[Any], None] = lambda _: None) -> T:
    """`call()` on a daemon thread, abandoned `MARGIN_S` after `deadline` (default: now +
    `timeout_s`): a Dask call that never returns (a scheduler that accepted the connection but
    does not answer) then becomes `EngineUnavailable`; a result that comes later is handed to
    `on_late` (a client to close). Any other failure of the call is `EngineUnavailable` too."""
    if deadline is None:
        deadline = time.monotonic() + timeout_s
    done = threading.Event()
    outcome: dict[str, Any] = {}
    abandoned = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 (MemoryError from a non-Dask service too)
            outcome["error"] = exc
        done.set()
        if abandoned.is_set() and "value" in outcome:
            on_late(outcome["value"])

    threading.Thread(target=run, name=f"tb-profile scheduler call {address}",
                     daemon=True).start()
    if not done.wait(max(0.0, deadline - time.monotonic()) + MARGIN_S):
        abandoned.set()
        if done.is_set() and "value" in outcome:  # finished just now
            return outcome["value"]  # type: ignore[no-any-return]
        raise unavailable(address, _silent(timeout_s))
    error = outcome.get("error")
    if error is None:
        return outcome["value"]  # type: ignore[no-any-return]
    if isinstance(error, (EngineUnavailable, _NoWorkers)):
        raise error
    if isinstance(error, ValueError) and "address" in str(error).lower():
        raise unavailable(address, f"is not a scheduler address ({error})") from error
    if isinstance(error, TimeoutError):
        raise unavailable(address, _silent(timeout_s)) from error
    if isinstance(error, OSError):
        reason = error.strerror or str(error) or type(error).__name__
        raise unavailable(address, f"cannot be reached ({reason})") from error
    raise unavailable(address, _not_dask(error)) from error


def _silent(timeout_s: float) -> str:
    return (f"accepted the connection but did not answer within {timeout_s:g} s (is it "
            f"stopped or overloaded, or is another service listening on that port? "
            f"{TIMEOUT_ENV} sets the wait)")


def _not_dask(error: BaseException) -> str:
    detail = str(error).strip().splitlines()[0][:160] if str(error).strip() else ""
    what = type(error).__name__ + (f": {detail}" if detail else "")
    return f"did not answer as a Dask scheduler ({what}; is another service on that port?)"


def _ask_scheduler(address: str, timeout_s: float, connection_args: dict[str, Any]) -> Any:
    """The scheduler's identity over a new connection (Dask's handshake, then the `identity`
    call), within `timeout_s`: `EngineUnavailable` when it does not answer in time, or answers
    as something else than a Dask scheduler."""
    import asyncio

    from distributed.comm import connect

    args = {k: v for k, v in connection_args.items() if k != "security"}

    async def ask() -> Any:
        comm = await connect(address, timeout=timeout_s, **args)
        try:
            await comm.write({"op": "identity", "n_workers": 0, "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    def call() -> Any:
        return asyncio.run(asyncio.wait_for(ask(), timeout_s))

    identity = _bounded(address, timeout_s, call)
    if not isinstance(identity, dict) or identity.get("type") != "Scheduler":
        kind = identity.get("type") if isinstance(identity, dict) else type(identity).__name__
        raise unavailable(address, f"is not a Dask scheduler (it answered as {kind!s:.40})")
    return identity


def check_scheduler(address: str, timeout_s: float | None = None) -> None:
    """`EngineUnavailable` (and the client forgotten, so the next request connects afresh)
    unless the scheduler at `address` answers within `timeout_s` (default: the configured
    timeout)."""
    timeout_s = timeout_s or connect_timeout_s()
    try:
        _ask_scheduler(address, timeout_s, _connection_args(address))
    except EngineUnavailable:
        forget_client(address)
        raise


def scheduler_watch(pool: Executor) -> Callable[[], None]:
    """What host_pool.py calls while it waits for host results: on Dask, every few seconds
    (`check_interval_s`) it asks the scheduler whether it still answers (`check_scheduler`),
    so a scheduler that stops mid-request is a 503 within about the timeout, not a wait until
    the request's budget; on the local pool nothing."""
    address = scheduler_address()
    if is_local(pool) or not address:
        return lambda: None
    timeout_s = connect_timeout_s()
    interval = check_interval_s(timeout_s)
    last = [time.monotonic()]

    def watch() -> None:
        if time.monotonic() - last[0] >= interval:
            check_scheduler(address, timeout_s)
            last[0] = time.monotonic()

    return watch


def check_interval_s(timeout_s: float) -> float:
    return min(CHECK_INTERVAL_MAX_S, max(0.25, timeout_s / 4))


def _connection_args(address: str) -> dict[str, Any]:
    """Dask's connection arguments for `address` ({} for tcp://); `EngineUnavailable` for a
    scheme this plugin does not use, or tls:// where Dask's TLS is not configured."""
    scheme = address.split("://", 1)[0].lower() if "://" in address else "tcp"
    if scheme not in SCHEMES:
        raise EngineUnavailable(
            f"the Dask scheduler address {address} has the scheme {scheme}://, which "
            f"tb-profile does not use; give a tcp://HOST:PORT (or a tls:// one with Dask's TLS "
            f"configured) in {SCHEDULER_ENV} / --profile_scheduler (tb-profile --scheduler), or "
            "unset it to analyse the hosts on this machine")
    if scheme == "tcp":
        return {}
    try:
        from distributed.security import Security
    except ImportError:
        return {}  # _connect says dask is missing
    security = Security()
    if not (getattr(security, "tls_ca_file", None) and getattr(security, "tls_client_cert", None)):
        raise EngineUnavailable(
            f"the Dask scheduler address {address} uses tls:// but Dask's TLS is not "
            "configured here: set distributed.comm.tls.ca-file and "
            "distributed.comm.tls.client.cert/key (DASK_DISTRIBUTED__COMM__TLS__CA_FILE, "
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT, ...__KEY), or give a tcp:// address in "
            f"{SCHEDULER_ENV} / --profile_scheduler (tb-profile --scheduler)")
    return {**security.get_connection_args("client"), "security": security}


def _close_later(client: Any) -> None:
    """Close `client` on a daemon thread: closing a client whose scheduler does not answer
    can itself wait, and no request waits for it."""

    def close() -> None:
        try:
            client.close(timeout=2)
        except BaseException:  # noqa: BLE001 (already gone, or its loop stopped)
            pass

    threading.Thread(target=close, name="tb-profile close dask client", daemon=True).start()


def connect_timeout_s() -> float:
    """Seconds to wait for the scheduler: $TB_PROFILE_SCHEDULER_TIMEOUT_S, else 10."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, CONNECT_TIMEOUT_S))
    except ValueError:
        return CONNECT_TIMEOUT_S
    return value if value > 0 else CONNECT_TIMEOUT_S


def _probe(address: str, timeout_s: float) -> None:
    """Fail at once, with a sentence, when nothing listens at a tcp:// (tls://) address (the
    Dask client would retry until its timeout and then warn while it is collected)."""
    scheme, _, rest = address.partition("://")
    if scheme not in SCHEMES or not rest:
        return
    host, _, port = rest.rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise unavailable(address, f"is not a scheduler address ({scheme}://HOST:PORT)")

    def reach() -> None:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()

    _bounded(address, timeout_s, reach)  # a name that does not resolve in time too
