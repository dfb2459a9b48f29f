"""Giving freed memory back to the operating system after heavy requests.

Decoding and analysing a profile allocates and frees hundreds of MB: numpy columns, protobuf's
arenas for the metadata tables (which Python's tracemalloc does not see), many small strings.
glibc keeps what was freed in its heaps for reuse, so a server that has answered a few heavy
requests holds their peak in RSS long after, and concurrent requests stack on it. After a
request that computed for a while, `release_free_memory()` asks glibc to return the free pages
(`malloc_trim(0)`, a few ms), at most once per MIN_INTERVAL_SECONDS; a request that does not
trim leaves one trim pending for when the interval has passed, so the heap is trimmed after
every burst of requests, however short each. Elsewhere (musl, macOS, Windows) it does nothing.

Workers are the other way round. Dask's nanny starts every worker with
`MALLOC_TRIM_THRESHOLD_=65536`, and setting that variable also turns off glibc's dynamic mmap
threshold: every array over 128 kB is then a fresh `mmap`, zero-filled page by page, and freed
at once. The analysis allocates many such temporaries: on the 2.4M-event capture it took
3.9 s instead of 2.2 s (4x the page faults), which made a Dask cluster on one machine 2.3x
slower than the local pool. `tune_worker_allocator()` (called once per worker process, before
its first host) puts the thresholds where glibc's own dynamic rule takes them (mmap 32 MiB,
trim 64 MiB) when such a variable fixed them; `release_now()` trims after each host, so
a long-lived worker does not keep its last host's peak.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from collections.abc import Callable, Mapping

#: Requests shorter than this allocated too little to be worth a trim.
HEAVY_REQUEST_SECONDS = 0.1
#: At most one trim in this long (concurrent heavy requests share one).
MIN_INTERVAL_SECONDS = 0.5

_lock = threading.Lock()
_last_s = 0.0


#: Environment variables that fix glibc's thresholds (and so turn its dynamic rule off).
FIXED_THRESHOLD_ENVS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                        "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
#: Where glibc's dynamic rule takes the thresholds on 64-bit machines (its maxima).
WORKER_MMAP_THRESHOLD_BYTES = 32 << 20
WORKER_TRIM_THRESHOLD_BYTES = 2 * WORKER_MMAP_THRESHOLD_BYTES
_M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3


def _libc_function(name: str) -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function: Callable[..., int] = getattr(libc, name)
    except (OSError, AttributeError):
        return None
    return function


_trim = _libc_function("malloc_trim")
_mallopt = _libc_function("mallopt")
_tuned = False


def release_free_memory(request_seconds: float) -> bool:
    """Trims the C heap after a request that took `request_seconds` (heavy enough, and none
    trimmed in the last MIN_INTERVAL_SECONDS); True when it trimmed. Any request that does not
    trim now leaves one trim pending, MIN_INTERVAL_SECONDS after the last (`_trim_later`): a
    fast cycle of requests (each under HEAVY_REQUEST_SECONDS, or within the interval of the
    last trim) otherwise never trimmed, and the heap's free memory grew round after round
    (issue 30 item 4: a 20 MB bound, three runs, 150 rounds: 0.58 -> 0.95 GB; with this the
    soak test holds, tests/integration/test_soak.py)."""
    global _last_s
    if _trim is None:
        return False
    with _lock:
        now_s = time.monotonic()
        if request_seconds < HEAVY_REQUEST_SECONDS or now_s - _last_s < MIN_INTERVAL_SECONDS:
            _trim_later(max(_last_s, _last_pending_s) + MIN_INTERVAL_SECONDS - now_s)
            return False
        _last_s = now_s
    _trim(0)
    return True


_pending: threading.Timer | None = None
_last_pending_s = 0.0


def _trim_later(delay_s: float) -> None:
    """Schedules one trim in `delay_s` (none if one is pending; at most one per
    MIN_INTERVAL_SECONDS, and not counted as a request's own trim); called under `_lock`."""
    global _pending
    if _pending is not None:
        return
    _pending = threading.Timer(max(delay_s, 0.0), _pending_trim)
    _pending.daemon = True
    _pending.name = "tb-profile trim"
    _pending.start()


def _pending_trim() -> None:
    global _pending, _last_pending_s
    with _lock:
        _pending = None
        _last_pending_s = time.monotonic()
    if _trim is not None:
        _trim(0)


def tune_worker_allocator(environ: Mapping[str, str] | None = None) -> bool:
    """In a worker process: when the environment fixed glibc's malloc thresholds (Dask's
    nanny sets MALLOC_TRIM_THRESHOLD_), set them where glibc's dynamic rule would take them;
    once per process. True when it changed them."""
    global _tuned
    env = os.environ if environ is None else environ
    if _tuned or _mallopt is None or not any(env.get(name) for name in FIXED_THRESHOLD_ENVS):
        return False
    _mallopt(_M_MMAP_THRESHOLD, WORKER_MMAP_THRESHOLD_BYTES)
    _mallopt(_M_TRIM_THRESHOLD, WORKER_TRIM_THRESHOLD_BYTES)
    _tuned = True
    return True


def release_now() -> None:
    """Gives the freed heap back now, after heavy work that is not a request's own: a host's
    analysis built (before the document: host_analysis.analyze), a worker's task done
    (executors.host_task), or a batch of per-line work on threads (column_threads.py: glibc
    gives each thread a heap of its own, and what a pool thread freed there, a decoded line's
    grown buffers, is reused only by that thread; the 2.07M-event NVIDIA capture's overview
    706 -> 627 MB). Not one of the requests' rate-limited trims (`release_free_memory` still
    runs after the request)."""
    if _trim is not None:
        _trim(0)
