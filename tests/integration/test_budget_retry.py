"""Asking again after a 503 continues (request_budget.py, continuations.py, xspace/store.py):
a real capture made longer in time (custom_loop's threads played again after its end, ~1M
events) under a budget far below its decode and analysis; each ask answers 503 on time, the
file is decoded once, and an ask soon answers 200."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.hostile_corpus import _mutate, played_again
from tests.integration.conftest import bad_session

COPIES = 700  # custom_loop's 1,445 events, 700 times: ~1M events, ~0.1 s of decode alone
BUDGET_S = 0.05


def test_asking_again_after_a_503_continues_and_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from tb_profile_plugin.plugin import ProfilePlugin
    from tb_profile_plugin.xspace import cache

    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    monkeypatch.setenv("TB_PROFILE_REQUEST_SECONDS", str(BUDGET_S))
    bad_session(tmp_path, "long", {"h.xplane.pb": _mutate("custom_loop", played_again(COPIES))
                                   .SerializeToString()})
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(tmp_path)))
    data = Client(plugin.get_plugin_apps()["/data"])
    query = {"run": "long/2020_01_01_00_00_00", "tag": "overview_page", "host": "h"}
    statuses = []
    for _ in range(100):
        started = time.monotonic()
        response = data.get("/", query_string=query)
        took_s = time.monotonic() - started
        statuses.append(response.status_code)
        if response.status_code == 200:
            break
        assert response.status_code == 503, response.get_data()[:300]
        assert b"asking again continues" in response.get_data()
        assert took_s < BUDGET_S + 0.5, f"a 503 after {took_s:.2f} s"
        time.sleep(0.1)
    assert statuses[0] == 503, "the budget was not below the work: the test shows nothing"
    assert statuses[-1] == 200, f"{len(statuses)} asks, none answered"
    assert response.get_json()["steps"]
    assert plugin._store.decode_count == 1 < len(statuses), (plugin._store.decode_count,
                                                              statuses)
    # Later asks are answered from the finished document, within the budget.
    assert data.get("/", query_string=query).status_code == 200
