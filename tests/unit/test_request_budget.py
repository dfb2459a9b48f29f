"""request_budget: deadlines and departed clients stop a request at its next checkpoint."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from tb_profile_plugin import request_budget
from tb_profile_plugin.analysis.events.nesting import compute_nesting
from tb_profile_plugin.errors import ClientGone, RequestTimedOut


def test_checkpoint_outside_a_request_does_nothing() -> None:
    request_budget.checkpoint()  # the CLI and the workers set no budget


def test_deadline_raises_a_sentence_naming_the_limit() -> None:
    with request_budget.bounded(0.01, what="the request for /data"):
        request_budget.checkpoint()
        time.sleep(0.02)
        with pytest.raises(RequestTimedOut, match=r"the request for /data stopped after .* "
                           r"over the 0.01 s limit \(TB_PROFILE_REQUEST_SECONDS\)"):
            request_budget.checkpoint()
    request_budget.checkpoint()  # the budget ends with its block


def test_client_closed_tells_a_closed_peer_from_a_quiet_one() -> None:
    server, client = socket.socketpair()
    with server:
        assert not request_budget.client_closed(server)  # nothing sent yet: still there
        client.sendall(b"GET / HTTP/1.1\r\n")  # pending data: still there, and not consumed
        assert not request_budget.client_closed(server)
        assert server.recv(64).startswith(b"GET")
        client.close()
        assert request_budget.client_closed(server)


def test_a_departed_client_stops_a_deep_nesting_pass() -> None:
    server, client = socket.socketpair()
    n = 200_000  # one chain: the nesting passes run many rounds, each a checkpoint
    start = np.zeros(n, np.int64)
    end = np.full(n, 10, np.int64)
    with server, request_budget.bounded(60, server):
        client.close()
        time.sleep(request_budget.CLIENT_POLL_SECONDS * 2)
        with pytest.raises(ClientGone, match="the client closed its connection"):
            compute_nesting(start, end, np.array([0, n]))


@pytest.mark.parametrize("text, seconds", [("", 600.0), ("12.5", 12.5), ("abc", 600.0),
                                           ("-1", 600.0)])
def test_request_seconds_from_the_environment(
        monkeypatch: pytest.MonkeyPatch, text: str, seconds: float) -> None:
    monkeypatch.setenv("TB_PROFILE_REQUEST_SECONDS", text)
    assert request_budget.request_seconds() == seconds


def _tcp_pair() -> tuple[socket.socket, socket.socket]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    return server, client


def test_a_half_closed_client_is_asked_once_and_stays() -> None:
    server, client = _tcp_pair()
    with server, client, request_budget.bounded(60, server, "the request",
                                                request_budget.INTERIM_RESPONSE):
        client.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert server.recv(64).startswith(b"GET")
        client.shutdown(socket.SHUT_WR)  # sent its request, still reading
        for _ in range(4):
            time.sleep(request_budget.CLIENT_POLL_SECONDS * 2)
            request_budget.checkpoint()  # no ClientGone
        client.settimeout(5)
        assert client.recv(64) == request_budget.INTERIM_RESPONSE  # asked once, skipped by it


def test_a_closed_client_is_told_from_a_half_closed_one_by_the_probe() -> None:
    server, client = _tcp_pair()
    with server, request_budget.bounded(60, server, "the request",
                                        request_budget.INTERIM_RESPONSE):
        client.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert server.recv(64).startswith(b"GET")
        client.close()  # end of stream, as a half-close reads; the probe is answered by a reset
        with pytest.raises(ClientGone, match="the client closed its connection"):
            for _ in range(40):
                time.sleep(request_budget.CLIENT_POLL_SECONDS * 2)
                request_budget.checkpoint()
