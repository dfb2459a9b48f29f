"""How long one HTTP request may compute, and stopping it when its client has gone.

A request's work runs in the request's thread. `bounded(...)` gives that thread a budget: a
deadline (TB_PROFILE_REQUEST_SECONDS, default 600 s) and, under TensorBoard's server, the
client's socket. The analyses call `checkpoint()` between their stages and in their outer
loops (decoding line by line, the nesting and forest passes level by level, each memoised
result before it is built); a checkpoint past the deadline raises `RequestTimedOut` (HTTP 503
with a sentence), one after the client closed its connection raises `ClientGone`, so an
abandoned request stops within one stage instead of computing to the end. Results finished
before the stop stay cached with their profile, so asking again continues where it stopped.

Outside a request (the CLI, the workers, tests calling analyses directly) `checkpoint()` does
nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import logging
import os
import socket
import time
from collections.abc import Iterator

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


def client_closed(sock: socket.socket) -> bool:
    """True when the peer closed `sock` (a peek reads end of stream or a reset); pending data,
    no data yet, or a socket that cannot be peeked (TLS) all mean the client may still read."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError as exc:
        return exc.errno in (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN, errno.EBADF)
    except (ValueError, TypeError):  # TLS sockets take no flags
        return False


class Budget:
    """One request's deadline and its client's socket."""

    def __init__(self, seconds: float, client: socket.socket | None = None,
                 what: str = "this request") -> None:
        self.seconds = seconds
        self.started_s = time.monotonic()
        self.deadline_s = self.started_s + seconds
        self.client = client
        self.what = what
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
            if client_closed(self.client):
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


@contextlib.contextmanager
def bounded(seconds: float, client: socket.socket | None = None,
            what: str = "this request") -> Iterator[Budget]:
    """Runs the block under a budget (see the module docstring)."""
    budget = Budget(seconds, client, what)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
