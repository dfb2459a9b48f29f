"""continuations: a build goes on past its request's time (one at a time per key, at most
`max_continuing` at once), and stops at its deadline when none may go on."""

from __future__ import annotations

import threading
import time

import pytest

from tb_profile_plugin import request_budget
from tb_profile_plugin.continuations import Continuations
from tb_profile_plugin.errors import RequestTimedOut


def _slow_build(calls: list[int], seconds: float = 0.5) -> int:
    calls.append(1)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # a stage with checkpoints, longer than the budget
        request_budget.checkpoint()
        time.sleep(0.01)
    return 42


def test_outside_a_request_the_build_runs_in_the_caller() -> None:
    assert Continuations().run("k", lambda: threading.current_thread().name) == \
        threading.current_thread().name


def test_a_build_longer_than_the_budget_goes_on_and_the_next_ask_gets_it() -> None:
    builds = Continuations()
    calls: list[int] = []
    with pytest.raises(RequestTimedOut), request_budget.bounded(0.1):
        builds.run("k", lambda: _slow_build(calls))
    assert builds.continuing == 1
    with request_budget.bounded(5.0):  # joins the build under way, not a second one
        assert builds.run("k", lambda: _slow_build(calls)) == 42
    assert calls == [1]
    assert builds.continuing == 0 and builds.finished_after_request == 1


def test_without_a_free_slot_the_build_stops_at_its_deadline() -> None:
    builds = Continuations(max_continuing=0)
    calls: list[int] = []
    with pytest.raises(RequestTimedOut), request_budget.bounded(0.1):
        builds.run("k", lambda: _slow_build(calls))
    time.sleep(0.7)  # it would have finished by now, had it gone on
    assert builds.finished_after_request == 0 and builds.continuing == 0
    with pytest.raises(RequestTimedOut), request_budget.bounded(0.1):
        builds.run("k", lambda: _slow_build(calls))
    assert calls == [1, 1]  # started again: nothing was under way


def test_a_build_checking_its_budget_all_the_time_still_goes_on() -> None:
    """The build's own checkpoints do not stop it at the very deadline its request times out
    on, before the request could let it go on (`_HANDOFF_S`): a build that checks all the
    time went on 0 of 10 times with one shared deadline."""
    def busy_build() -> int:
        deadline = time.monotonic() + 0.4
        while time.monotonic() < deadline:
            request_budget.checkpoint()
        return 42

    for _ in range(10):
        builds = Continuations()
        with pytest.raises(RequestTimedOut), request_budget.bounded(0.05):
            builds.run("k", busy_build)
        assert builds.continuing == 1
        with request_budget.bounded(5.0):
            assert builds.run("k", busy_build) == 42
