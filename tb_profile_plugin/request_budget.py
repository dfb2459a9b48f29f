"""How long one HTTP request may compute, and stopping it when its client has gone.

A request's work runs in the request's thread. `bounded(...)` gives that thread a budget: a
deadline (TB_PROFILE_REQUEST_SECONDS, default 600 s) and, under TensorBoard's server, the
client's socket. The analyses call `checkpoint()` between their stages and in their outer
loops (decoding line by line, the nesting and forest passes level by level, each memoised
result before it is built); a checkpoint past the deadline raises `RequestTimedOut` (HTTP 503
with a sentence), one after the client closed its connection raises `ClientGone`, so an
abandoned request stops within one stage instead of computing to the end. Results finished
before the stop stay cached with their profile, so asking again continues where it stopped.
A decode is not a request's own work: it runs to its end on a thread of its own and goes into
the store (xspace/store.py), the request only waits for it (`wait`), so a request that stops
while a file is decoded leaves the decoded file for the next one. Host tasks on the executor
that have started finish likewise and are kept (analysis/hosts/host_pool.py); those not
started are cancelled.

A client that closed its connection is told from one that only half-closed it (sent its
request, then `shutdown(SHUT_WR)`, and still reads): both read as end of stream, so at the
first end of stream the budget writes an interim `HTTP/1.1 100 Continue` (which every HTTP/1.1
client skips; werkzeug sends the same for `Expect: 100-continue`). A peer that has gone answers
it with a reset, seen at the next checkpoint as a hang-up (`client_closed`); a half-closed
client reads it and its answer.

Outside a request (the CLI, the workers, tests calling analyses directly) `checkpoint()` does
nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import logging
import os
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator

from tb_profile_plugin.errors import ClientGone, RequestTimedOut

logger = logging.getLogger(__name__)

REQUEST_SECONDS_ENV = "TB_PROFILE_REQUEST_SECONDS"
DEFAULT_REQUEST_SECONDS = 600.0
#: A checkpoint looks at the client's socket at most this often (a peek is a system call).
CLIENT_POLL_SECONDS = 0.05


def request_seconds() -> float:
    """The configured budget of one request, in seconds (TB_PROFILE_REQUEST_SECONDS)."""
    text = os.environ.get(REQUEST_SECONDS_ENV, "").strip()
    if not text:
        return DEFAULT_REQUEST_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        logger.warning("%s=%r is not a number of seconds; using %.0f s",
                       REQUEST_SECONDS_ENV, text, DEFAULT_REQUEST_SECONDS)
        return DEFAULT_REQUEST_SECONDS
    return seconds if seconds > 0 else DEFAULT_REQUEST_SECONDS


#: What `Budget` writes to tell a client that half-closed from one that has gone (HTTP/1.1).
INTERIM_RESPONSE = b"HTTP/1.1 100 Continue\r\n\r\n"
_GONE_ERRNOS = (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN, errno.EBADF)


def _hung_up(sock: socket.socket) -> bool:
    """True when the connection is over both ways (a reset, or a peer gone): poll's POLLHUP
    or POLLERR. A half-closed peer (end of stream read, still reading) shows neither."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLHUP | select.POLLERR)
        return any(events & (select.POLLHUP | select.POLLERR) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no poll (Windows), or a closed socket
        return False


def _peer(sock: socket.socket) -> str:
    """"open" (data pending, nothing yet, or a socket that cannot be peeked: TLS), "gone" (a
    reset, or a hang-up: `_hung_up`) or "ended" (end of stream: closed, or only half-closed)."""
    try:
        if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b"":
            return "open"
    except BlockingIOError:
        return "open"
    except OSError as exc:
        return "gone" if exc.errno in _GONE_ERRNOS else "open"
    except (ValueError, TypeError):  # TLS sockets take no flags
        return "open"
    return "gone" if _hung_up(sock) else "ended"


def _send_probe(sock: socket.socket, probe: bytes) -> bool:
    """Writes `probe`; False when the peer is already gone (the write fails at once)."""
    try:
        sock.sendall(probe)
    except OSError:
        return False
    return True


def client_closed(sock: socket.socket, probe: bytes = b"") -> bool:
    """True when the peer of `sock` has gone: a reset, or a hang-up (`_hung_up`). Pending
    data, no data yet, or a socket that cannot be peeked (TLS) mean the client may still read.
    End of stream alone is no proof (a client that half-closed still reads): then `probe`,
    when given, is written to the peer (a peer that has gone answers it with a reset, seen by
    the next call; writing to one already gone fails at once)."""
    state = _peer(sock)
    if state == "ended" and probe:
        return not _send_probe(sock, probe)
    return state == "gone"


class Budget:
    """One request's deadline and its client's socket."""

    def __init__(self, seconds: float, client: socket.socket | None = None,
                 what: str = "this request", probe: bytes = b"") -> None:
        self.seconds = seconds
        self.started_s = time.monotonic()
        self.deadline_s = self.started_s + seconds
        self.client = client
        self.what = what
        #: Written once, at the first end of stream (`client_closed`); b"" writes nothing.
        self._probe = probe
        self._next_poll_s = self.started_s + CLIENT_POLL_SECONDS

    def check(self) -> None:
        now_s = time.monotonic()
        if now_s > self.deadline_s:
            raise RequestTimedOut(
                f"{self.what} stopped after {now_s - self.started_s:.1f} s, over the "
                f"{self.seconds:g} s limit ({REQUEST_SECONDS_ENV}); what was finished is kept, "
                "so asking again continues from there")
        if self.client is not None and now_s >= self._next_poll_s:
            self._next_poll_s = now_s + CLIENT_POLL_SECONDS
            state = _peer(self.client)
            if state == "ended" and self._probe:  # closed, or only half-closed: ask once
                probe, self._probe = self._probe, b""
                state = "ended" if _send_probe(self.client, probe) else "gone"
            if state == "gone":
                raise ClientGone(
                    f"{self.what} stopped after {now_s - self.started_s:.2f} s: "
                    "the client closed its connection")


_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "tb_profile_request_budget", default=None)


def checkpoint() -> None:
    """Stops the current request here if it is over its time or its client has gone."""
    budget = _current.get()
    if budget is not None:
        budget.check()


def active() -> bool:
    """Whether the calling thread runs a request under a budget."""
    return _current.get() is not None


def current() -> Budget | None:
    """The calling thread's budget (None outside a request)."""
    return _current.get()


_at_exit: contextvars.ContextVar[list[Callable[[], None]] | None] = contextvars.ContextVar(
    "tb_profile_request_exits", default=None)


def at_exit(callback: Callable[[], None]) -> bool:
    """Calls `callback()` when the current budgeted block ends (`bounded`, `bounded_by`);
    False (and nothing is called) outside one. The store drops the derived results of a profile
    it served but did not keep this way: they hold the profile in a cycle, which only the
    garbage collector's rare full passes freed (issue 30 item 4: ~370 MB of such profiles at
    rest on a 1M-event capture with a 20 MB bound)."""
    callbacks = _at_exit.get()
    if callbacks is None:
        return False
    callbacks.append(callback)
    return True


@contextlib.contextmanager
def _exits() -> Iterator[None]:
    callbacks: list[Callable[[], None]] = []
    token = _at_exit.set(callbacks)
    try:
        yield
    finally:
        _at_exit.reset(token)
        for callback in reversed(callbacks):
            try:
                callback()
            except Exception:  # noqa: BLE001 - a cleanup never fails the request
                logger.exception("cleanup after a request failed")


@contextlib.contextmanager
def bounded_by(budget: Budget) -> Iterator[Budget]:
    """Runs the block under `budget`, an existing one (continuations.py: a build on a thread
    of its own, under its request's deadline and client), with its own `at_exit` callbacks."""
    token = _current.set(budget)
    try:
        with _exits():
            yield budget
    finally:
        _current.reset(token)


#: How often `wait` looks at the budget while it waits.
WAIT_POLL_SECONDS = 0.05


def wait(done: threading.Event) -> None:
    """Waits until `done` is set, stopping at the budget like a checkpoint (the work waited
    for goes on: it is not this request's)."""
    while not done.wait(WAIT_POLL_SECONDS):
        checkpoint()


@contextlib.contextmanager
def bounded(seconds: float, client: socket.socket | None = None,
            what: str = "this request", probe: bytes = b"") -> Iterator[Budget]:
    """Runs the block under a budget (see the module docstring); `probe` is the interim
    response written to tell a half-closed client from a departed one (`INTERIM_RESPONSE` for
    HTTP/1.1 requests, b"" else)."""
    with bounded_by(Budget(seconds, client, what, probe)) as budget:
        yield budget
