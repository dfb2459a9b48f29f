"""Giving freed memory back to the operating system after heavy requests.

Decoding and analysing a profile allocates and frees hundreds of MB: numpy columns, protobuf's
arenas for the metadata tables (which Python's tracemalloc does not see), many small strings.
glibc keeps what was freed in its heaps for reuse, so a server that has answered a few heavy
requests holds their peak in RSS long after, and concurrent requests stack on it. After a
request that computed for a while, `release_free_memory()` asks glibc to return the free pages
(`malloc_trim(0)`, a few ms). Elsewhere (musl, macOS, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable

#: Requests shorter than this allocated too little to be worth a trim.
HEAVY_REQUEST_SECONDS = 0.1
#: At most one trim in this long (concurrent heavy requests share one).
MIN_INTERVAL_SECONDS = 0.5

_lock = threading.Lock()
_last_s = 0.0


def _find_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_trim = _find_trim()


def release_free_memory(request_seconds: float) -> bool:
    """Trims the C heap after a request that took `request_seconds` (heavy enough, and none
    trimmed in the last MIN_INTERVAL_SECONDS); True when it trimmed."""
    global _last_s
    if _trim is None or request_seconds < HEAVY_REQUEST_SECONDS:
        return False
    with _lock:
        now_s = time.monotonic()
        if now_s - _last_s < MIN_INTERVAL_SECONDS:
            return False
        _last_s = now_s
    _trim(0)
    return True
