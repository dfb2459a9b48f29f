"""The empty page and the capture dialog: how to capture with TensorFlow and with JAX, and
why a logdir of linked runs looks empty (the `links` route's message, and how to allow them).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import own_tensorboard
from tests.browser.pages import LOAD_TIMEOUT_MS, get_json, runs_of_server, standalone
from tests.browser.support import PageRecord
from tests.fixtures import DATA_DIR

pytestmark = pytest.mark.browser

LINKED = ("keras_fit", "tfdata_slow")


@pytest.fixture(scope="module")
def linked_tensorboard_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A TensorBoard whose logdir holds only symbolic links to runs outside it."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")

    def fill(logdir: Path) -> None:
        for capture in LINKED:
            shutil.copytree(DATA_DIR / capture, elsewhere / capture)
            (logdir / capture).symlink_to(elsewhere / capture, target_is_directory=True)

    with own_tensorboard(tmp_path_factory, "linked", fill) as base:
        yield base


def test_empty_page_shows_tensorflow_and_jax_ways_to_capture(
    page: Page, empty_tensorboard_url: str, record: PageRecord
) -> None:
    page.goto(standalone(empty_tensorboard_url))
    empty = page.get_by_test_id("empty-state")
    expect(empty).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    how = page.get_by_test_id("empty-how-to")
    expect(how.locator("[data-framework=tensorflow]")).to_contain_text(
        "tf.profiler.experimental.start(logdir)")
    expect(how.locator("[data-framework=jax]")).to_contain_text("jax.profiler.trace(logdir)")
    server = how.locator("[data-framework=server]")
    expect(server).to_contain_text("tf.profiler.experimental.server.start(9999)")
    expect(server).to_contain_text("jax.profiler.start_server(9999)")
    # Nothing was left out, so no word about links.
    assert get_json(empty_tensorboard_url, "links")["links_left_out"] == 0
    expect(page.get_by_test_id("empty-links")).to_have_count(0)
    # The capture dialog names both servers too.
    page.get_by_test_id("capture-button").first.click()
    hint = page.get_by_test_id("capture-how-to")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("tf.profiler.experimental.server.start(9999)")
    expect(hint).to_contain_text("jax.profiler.start_server(9999)")
    assert record.console_errors == [] and record.page_errors == []


def test_linked_runs_left_out_are_explained_on_the_empty_page(
    page: Page, linked_tensorboard_url: str, record: PageRecord
) -> None:
    assert runs_of_server(linked_tensorboard_url) == []
    links = get_json(linked_tensorboard_url, "links")
    assert links["links_left_out"] == len(LINKED)
    page.goto(standalone(linked_tensorboard_url))
    expect(page.get_by_test_id("empty-state")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    note = page.get_by_test_id("empty-links")
    expect(note).to_have_text(links["message"])
    expect(note).to_have_attribute("data-links-left-out", str(len(LINKED)))
    expect(note).to_contain_text(f"{len(LINKED)} symbolic links lead outside the logdir")
    expect(note).to_contain_text("TB_PROFILE_FOLLOW_LINKS=1")
    assert record.console_errors == [] and record.page_errors == []
