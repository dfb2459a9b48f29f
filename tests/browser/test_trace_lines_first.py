"""A big GPU capture's trace in a real Chromium: its streams first, then its derived tracks.

The server answers the first windows of a big GPU capture from its lines alone while it makes
the GPUs' derived tracks (trace/lines_first.py; `derived_pending` in the document). Here a
TensorBoard started with TB_PROFILE_TRACE_LINES_FIRST_EVENTS=0 treats the real JAX capture
jax_gpu_conv (8 MI300X GPUs) as big: the page's first document has no derived track, the page
asks again, and draws the "XLA Modules" track of every GPU once it is made, with the same
events as a window asked of the server then. Clean console, 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from playwright.sync_api import Page, Response, expect

from tests.browser.checks import assert_clean
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import first_host, fixture_run, open_view
from tests.browser.support import PageRecord
from tests.browser.trace_page import VIEW as TRACE
from tests.browser.trace_page import hook, settled, wait_hook, window_json
from tests.fixtures import DATA_DIR

pytestmark = pytest.mark.browser

CAPTURE = "jax_gpu_conv"


def _copy(logdir: Path) -> None:
    shutil.copytree(DATA_DIR / CAPTURE, logdir / CAPTURE)


@pytest.fixture(scope="module")
def lines_first_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mock.patch.dict(os.environ, {"TB_PROFILE_TRACE_LINES_FIRST_EVENTS": "0"}):
        with own_tensorboard(tmp_path_factory, "lines_first", _copy) as base:
            yield base


def _derived_names(doc: dict[str, Any]) -> dict[int, list[str]]:
    """The derived tracks' names of every GPU process, by pid."""
    return {p["pid"]: [t["name"] for t in p["threads"] if t["derived"]]
            for p in doc["processes"] if p["name"].startswith("/device:GPU:")}


def test_the_streams_come_first_then_the_derived_tracks(
    page: Page, lines_first_url: str, record: PageRecord
) -> None:
    base = lines_first_url
    run = fixture_run(base, CAPTURE)
    host = first_host(base, run, TRACE)
    whole_span: list[dict[str, Any]] = []  # the whole-span documents the page received

    def keep(response: Response) -> None:
        if f"tag={TRACE}" in response.url and "start_time_ms" not in response.url \
                and "/data/plugin/profile/data" in response.url and response.ok:
            whole_span.append(json.loads(response.body()))

    page.on("response", keep)
    open_view(page, base, TRACE, run, host)
    viewer = page.get_by_test_id("trace-viewer")
    expect(viewer).to_have_attribute("data-derived-pending", "false", timeout=30_000)
    drawn = wait_hook(page, lambda h: settled(h) and h["loaded"]["total_events"] > 0,
                      "the timeline drawn again")
    # The page's first document came before the derived tracks; the last one has them.
    assert whole_span[0]["derived_pending"] and whole_span[0]["derived_events"] == 0
    assert not any(_derived_names(whole_span[0]).values())
    assert not whole_span[-1]["derived_pending"] and whole_span[-1]["derived_events"] > 0
    assert len(whole_span) >= 2
    # What the page draws now is the window with the derived tracks: every GPU's XLA Modules
    # track, the first GPU's at the top, drawn.
    shown = window_json(base, drawn["loaded"]["url"])
    assert not shown["derived_pending"]
    gpus = _derived_names(shown)
    assert len(gpus) == 8 and all("XLA Modules" in names for names in gpus.values())
    first = min(gpus)
    module_tid = next(t["tid"] for p in shown["processes"] if p["pid"] == first
                      for t in p["threads"] if t["name"] == "XLA Modules")
    drawn = wait_hook(page, lambda h: settled(h)
                      and f"{first}:{module_tid}:0" in h["drawn_row_keys"],
                      "the first GPU's XLA Modules track drawn")
    assert hook(page)["loaded"]["total_events"] == shown["total_events"]
    assert_clean(record)
