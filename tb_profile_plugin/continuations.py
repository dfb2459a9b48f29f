"""Documents that go on building past their request's time, so that asking again answers.

A request over its budget answers 503 on time (request_budget.py), and its message says asking
again continues from there. Results memoised with a profile make that true stage by stage, but a
single stage longer than the budget (a decode, a nesting pass over millions of events) was
started again by every ask and never finished: on a 10M-event capture with a 0.5 s budget, 20
of 20 asks were 503s. So the data route builds a document that it keeps
(document_cache.py) on a thread of its own (`Continuations.run`):

* the request waits for it at its checkpoints; the build runs under a budget of its own with
  the request's deadline and client, so a client that leaves (499) stops it as before;
* when the request runs out of time, its build is given `continue_seconds()` more
  (TB_PROFILE_CONTINUE_SECONDS, default 600 s) and no client, and the request answers its 503
  at once. The build ends in the document cache, where the next ask finds it; an ask while it
  is still building waits for the same build (one per view, run, host and query);
* at most `MAX_CONTINUING` builds go on past their requests at once (the memory they hold is
  a request's working set each); over that, a build stops at its deadline as before.

Outside a request (tests calling the routes without a budget) the build runs in the caller.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from tb_profile_plugin import memory_release, request_budget
from tb_profile_plugin.errors import ClientGone, ProfileError, RequestTimedOut

logger = logging.getLogger(__name__)

T = TypeVar("T")

CONTINUE_SECONDS_ENV = "TB_PROFILE_CONTINUE_SECONDS"
DEFAULT_CONTINUE_SECONDS = 600.0
#: Builds going on past their requests at once.
MAX_CONTINUING = 2
#: How many times a request starts a build again that stopped for another request's reasons.
_ATTEMPTS = 3
#: Seconds a build runs past its request's deadline, for the request to extend it.
_HANDOFF_S = 0.25


def continue_seconds() -> float:
    """How long a build may go on after its request ran out of time
    (TB_PROFILE_CONTINUE_SECONDS; 0 turns continuing off)."""
    text = os.environ.get(CONTINUE_SECONDS_ENV, "").strip()
    try:
        seconds = float(text) if text else DEFAULT_CONTINUE_SECONDS
    except ValueError:
        return DEFAULT_CONTINUE_SECONDS
    return max(seconds, 0.0)


class _Build(Generic[T]):
    def __init__(self, budget: request_budget.Budget) -> None:
        self.budget = budget
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None
        self.continuing = False


class Continuations:
    """The builds under way, by key (module docstring)."""

    def __init__(self, max_continuing: int = MAX_CONTINUING) -> None:
        self.max_continuing = max_continuing
        self._lock = threading.Lock()
        self._builds: dict[Hashable, _Build[object]] = {}
        self._continuing = 0
        #: Builds finished after their request had answered (tests read it).
        self.finished_after_request = 0

    @property
    def continuing(self) -> int:
        return self._continuing

    def run(self, key: Hashable, build: Callable[[], T]) -> T:
        """`build()`, or the value of the same build already under way (module docstring)."""
        outer = request_budget.current()
        if outer is None:
            return build()
        for _ in range(_ATTEMPTS):
            job = self._join_or_start(key, build, outer)
            try:
                request_budget.wait(job.done)
            except RequestTimedOut:
                self._extend(job)
                raise
            if isinstance(job.error, (RequestTimedOut, ClientGone)):
                request_budget.checkpoint()  # this request's own reasons first
                continue  # another request's build stopped for that request: build again
            if job.error is not None:
                error = job.error
                raise (type(error)(str(error)) if isinstance(error, ProfileError) else error)
            return job.value  # type: ignore[return-value]
        request_budget.checkpoint()
        raise RequestTimedOut("the document could not be built: the requests that built it "
                              "kept stopping; ask again")

    def _join_or_start(self, key: Hashable, build: Callable[[], T],
                       outer: request_budget.Budget) -> _Build[T]:
        with self._lock:
            job = self._builds.get(key)
            if job is not None and not job.done.is_set():
                return job  # type: ignore[return-value]
            budget = request_budget.Budget(outer.seconds, outer.client, outer.what)
            # The build stops `_HANDOFF_S` after its request does: the waiting request extends
            # it in that time (`_extend`). At the same deadline the build's own checkpoint
            # could stop it first, and a build that could have gone on was lost.
            budget.started_s = outer.started_s
            budget.deadline_s = outer.deadline_s + _HANDOFF_S
            new: _Build[T] = _Build(budget)
            self._builds[key] = new  # type: ignore[assignment]
        context = contextvars.copy_context()  # the request's progress tracker goes along
        threading.Thread(target=context.run, args=(self._work, key, new, build), daemon=True,
                         name="tb-profile build").start()
        return new

    def _work(self, key: Hashable, job: _Build[T], build: Callable[[], T]) -> None:
        started_s = time.monotonic()
        try:
            with request_budget.bounded_by(job.budget):
                job.value = build()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting requests
            job.error = exc if isinstance(exc, Exception) else RuntimeError(str(exc))
            if job.continuing:
                logger.warning("a build that went on past its request stopped: %s", exc)
        finally:
            with self._lock:
                if self._builds.get(key) is job:
                    del self._builds[key]
                if job.continuing:
                    self._continuing -= 1
                    if job.error is None:
                        self.finished_after_request += 1
            job.done.set()
            if job.continuing:  # no request trims after it (plugin.py does after requests)
                memory_release.release_free_memory(time.monotonic() - started_s)

    def _extend(self, job: _Build[T]) -> None:
        """The request waiting for `job` ran out of time: let the build go on, if a slot is
        free and continuing is on."""
        seconds = continue_seconds()
        with self._lock:
            if job.continuing or job.done.is_set() or seconds <= 0 \
                    or self._continuing >= self.max_continuing:
                return
            job.continuing = True
            self._continuing += 1
            job.budget.client = None  # the request answers now; nobody to watch
            job.budget.seconds = seconds
            job.budget.deadline_s = time.monotonic() + seconds
