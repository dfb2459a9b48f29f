"""Independent per-line column work of one profile on a few threads.

The compiled passes over a line's events (the decoder's walk of a line, xspace/_wire.c; the
trace's nesting order, analysis/events/_nesting.c) release the GIL, and lines are independent:
a profile of many threads decodes and indexes its lines side by side (docs/architecture.md,
"Lines side by side"). Each item writes only its own outputs (its own columns, or its own
disjoint slice of shared ones), and the results come back in the items' order, so the outcome
is the one of a loop. A profile of one long line gains nothing and pays nothing. The pool
threads' heaps are trimmed after each batch (memory_release.release_now).

Threads: `TB_PROFILE_COLUMN_THREADS`, else the CPUs this process may run on, at most
`MAX_THREADS`; 1 in a host-pool worker (`single_threaded`: the pool already runs a host per
CPU). Work below `MIN_WORK` (events or bytes, as the caller counts it) stays on the caller's
thread.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from tb_profile_plugin import memory_release

T = TypeVar("T")
R = TypeVar("R")

THREADS_ENV = "TB_PROFILE_COLUMN_THREADS"
MAX_THREADS = 4
#: Events (or bytes) below which the lines are taken one after another: a thread hand-off costs
#: tens of microseconds, a million events' pass tens of milliseconds.
MIN_WORK = 1 << 20
#: Events past which two stages of one analysis are not run side by side (`beside`): their
#: temporaries together would be the analysis' peak, and there memory, not time, is the
#: bound (a 10M-event 8-GPU overview: +290 MB; 2M: +50-130 MB for 20-35% less time).
BESIDE_MAX_WORK = 4_000_000

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_single = False


def threads() -> int:
    """Threads the per-line work may use in this process."""
    if _single:
        return 1
    configured = os.environ.get(THREADS_ENV, "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (not Linux)
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cpus))


def single_threaded() -> None:
    """This process takes lines one after another (a host-pool worker: one host per CPU)."""
    global _single
    _single = True


def map_lines(function: Callable[[T], R], items: Sequence[T], work: int) -> list[R]:
    """`[function(item) for item in items]`, on a few threads where there are several items
    and `work` (their events or bytes) is at least `MIN_WORK`. The first exception raised is
    raised here, after every item started has finished (none writes after the return)."""
    count = min(threads(), len(items))
    if count < 2 or work < MIN_WORK or _in_pool():
        return [function(item) for item in items]
    pool = _executor()
    futures = [pool.submit(function, item) for item in items]
    results: list[R] = []
    failure: BaseException | None = None
    for future in futures:
        try:
            results.append(future.result())
        except BaseException as exc:  # noqa: BLE001 - re-raised below, once all have finished
            failure = failure or exc
    memory_release.release_now()
    if failure is not None:
        raise failure
    return results


@contextlib.contextmanager
def beside(function: Callable[[], object], work: int) -> Iterator[None]:
    """Runs `function` on a pool thread while the caller's block runs, where there is a second
    thread to run it and `work` (events) is from `MIN_WORK` to `BESIDE_MAX_WORK`, and waits
    for it at the end of the block; elsewhere it does nothing. For a result the caller reads
    later and builds itself when it is not there (an error in `function` is left for that
    build to raise), made by a compiled or numpy pass that releases the GIL. Runs in the
    caller's context (its request's time budget)."""
    if threads() < 2 or not MIN_WORK <= work <= BESIDE_MAX_WORK or _in_pool():
        yield
        return
    context = contextvars.copy_context()
    future = _executor().submit(context.run, function)
    try:
        yield
    finally:
        try:
            future.result()
        except Exception:  # noqa: BLE001, S110 - the caller's own build raises it
            pass


_POOL_PREFIX = "tb-profile-lines"


def _in_pool() -> bool:
    """Whether this is one of the pool's threads: work it hands the pool runs here instead (a
    pool thread waiting on work queued behind the other threads' waits could wait forever)."""
    return threading.current_thread().name.startswith(_POOL_PREFIX)


def _executor() -> ThreadPoolExecutor:
    """The process' pool, of `threads()` workers (a map of fewer items keeps the rest idle).
    Made again only when `threads()` changed (its setting): the old pool is dropped, not shut
    down, so a map still submitting to it is never refused; its idle threads end with it."""
    global _pool, _pool_size
    size = threads()
    with _lock:
        if _pool is None or _pool_size != size:
            _pool = ThreadPoolExecutor(size, thread_name_prefix=_POOL_PREFIX)
            _pool_size = size
        return _pool
