"""Hosts done / total of the per-host work in flight, for the page's and the CLI's progress bars.

A request (or a CLI command) that analyses several hosts runs `with tracking(tracker):`; the
tracker is then the current one of that thread (a context variable, like request_budget's
budget), and analysis/hosts/host_pool.py reports into it: `begin(phase, total)` when a pass over the
hosts starts (`facts`: reading each host's planes and names; `analysis`, `profile_info`,
`tf_data_bottleneck_analysis`: a view's per-host part), `advance()` as each host's result
arrives (from the per-file cache at once, from a worker when it finishes). Outside a tracked
request both do nothing.

The plugin keeps the trackers of each run's requests in a `RunTrackers` (the `progress` route
reads the newest one, docs/api.md); the CLI gives its tracker a listener that redraws its bar.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: Words for each phase, as the page and the CLI show them ("analysing hosts 3/16").
PHASE_WORDS = {
    "facts": "reading hosts",
    "analysis": "analysing hosts",
    "profile_info": "reading hosts' planes",
    "tf_data_bottleneck_analysis": "analysing hosts' tf.data pipelines",
}
#: How long a finished request's progress stays readable, and how many runs are remembered.
KEEP_FINISHED_S = 60.0
MAX_RUNS = 256
#: Finished requests kept per run (the newest), however many a minute brings.
MAX_FINISHED_PER_RUN = 8

Listener = Callable[["Tracker"], None]


class Tracker:
    """The progress of one request: its current phase and hosts done / total in it."""

    def __init__(self, listener: Listener | None = None) -> None:
        self.started = time.monotonic()
        self.phase: str | None = None
        self.done = 0
        self.total = 0
        self.finished_at: float | None = None
        self._listener = listener
        self._lock = threading.Lock()

    def begin(self, phase: str, total: int) -> None:
        with self._lock:
            self.phase, self.done, self.total = phase, 0, total
        self._tell()

    def advance(self) -> None:
        with self._lock:
            self.done = min(self.done + 1, self.total)
        self._tell()

    def finish(self) -> None:
        self.finished_at = time.monotonic()

    def words(self) -> str:
        return PHASE_WORDS.get(self.phase or "", self.phase or "starting")

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {"phase": self.phase, "words": self.words(), "done": self.done,
                    "total": self.total, "finished": self.finished_at is not None,
                    "elapsed_s": round((self.finished_at or time.monotonic()) - self.started, 3)}

    def _tell(self) -> None:
        if self._listener is not None:
            self._listener(self)


_current: contextvars.ContextVar[Tracker | None] = contextvars.ContextVar(
    "tb_profile_host_progress", default=None)


@contextlib.contextmanager
def tracking(tracker: Tracker) -> Iterator[Tracker]:
    """Make `tracker` the current thread's until the block ends (then it is finished)."""
    token = _current.set(tracker)
    try:
        yield tracker
    finally:
        _current.reset(token)
        tracker.finish()


def begin(phase: str, total: int) -> None:
    tracker = _current.get()
    if tracker is not None:
        tracker.begin(phase, total)


def advance() -> None:
    tracker = _current.get()
    if tracker is not None:
        tracker.advance()


class RunTrackers:
    """The trackers of each run's requests in flight (and finished ones, for a minute: at
    most `MAX_FINISHED_PER_RUN` of them)."""

    def __init__(self) -> None:
        self._runs: collections.OrderedDict[str, list[Tracker]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def start(self, run: str) -> Tracker:
        tracker = Tracker()
        now = time.monotonic()
        with self._lock:
            kept = [t for t in self._runs.pop(run, [])
                    if t.finished_at is None or now - t.finished_at < KEEP_FINISHED_S]
            finished = [t for t in kept if t.finished_at is not None]
            if len(finished) > MAX_FINISHED_PER_RUN:  # a busy minute: the newest finished
                dropped = {id(t) for t in finished[:-MAX_FINISHED_PER_RUN]}
                kept = [t for t in kept if id(t) not in dropped]
            self._runs[run] = [*kept, tracker]
            while len(self._runs) > MAX_RUNS:
                self._runs.popitem(last=False)
        return tracker

    def newest(self, run: str) -> Tracker | None:
        """The newest request of `run` still in flight, else the last one finished."""
        with self._lock:
            trackers = list(self._runs.get(run, []))
        running = [t for t in trackers if t.finished_at is None]
        if running:
            return running[-1]
        return trackers[-1] if trackers else None

