"""The progress bar of a slow ALL_HOSTS page load in Chromium: a run of 128 hosts (copies of the
real two-host capture) on a fresh TensorBoard, opened on the pod viewer's ALL_HOSTS; after a
second of loading the page shows hosts done / total from the `progress` route, and the bar goes
when the document arrives."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import assert_clean
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import open_view, selection_hash, standalone
from tests.browser.support import PageRecord
from tests.fixtures import session_dir

pytestmark = pytest.mark.browser

HOSTS = 128
SESSION = "2026_01_01_00_00_00"
RUN = f"pod/{SESSION}"


def _fill(logdir: Path) -> None:
    session = logdir / "pod" / "plugins" / "profile" / SESSION
    session.mkdir(parents=True)
    files = sorted(session_dir("two_hosts").glob("*.xplane.pb"))
    for k in range(HOSTS):
        shutil.copy(files[k % 2], session / f"h{k:03d}.xplane.pb")


@pytest.fixture(scope="module")
def pod_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with own_tensorboard(tmp_path_factory, "hosts_progress", _fill) as base:
        yield base


def test_slow_all_hosts_load_shows_hosts_done_of_total(
    page: Page, pod_url: str, record: PageRecord
) -> None:
    page.goto(standalone(pod_url, selection_hash(RUN, "pod_viewer", "ALL_HOSTS")))
    bar = page.get_by_test_id("hosts-progress")
    expect(bar).to_be_visible(timeout=30_000)
    expect(bar).to_have_attribute("data-total", str(HOSTS))
    done = int(bar.get_attribute("data-done") or "-1")
    assert 0 <= done <= HOSTS
    expect(bar).to_contain_text(f"/ {HOSTS}")
    progress = page.get_by_test_id("hosts-progress-bar")
    assert progress.get_attribute("max") == str(HOSTS)
    document = open_view(page, pod_url, "pod_viewer", RUN, "ALL_HOSTS")
    expect(document).to_be_visible()
    expect(bar).to_have_count(0)
    assert_clean(record)
