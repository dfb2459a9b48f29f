"""Capture Profile in a real Chromium: the dialog captures a live TensorFlow training process.

A real TensorFlow program with a profiler server (tests/integration/tf_training.py) runs for
the module; a real TensorBoard serves an empty logdir. From the empty state the user opens
the dialog, first captures a closed port (a clear error, the dialog stays usable), then the
live server: a progress state shows while it runs, then the result, and the new run is in the
run selector and selected, its overview showing steps, without a page reload.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.pages import LOAD_TIMEOUT_MS, expect_view, option_values, standalone
from tests.browser.support import PageRecord
from tests.integration.conftest import free_port
from tests.integration.profiler_servers import (
    TrainingServer,
    start_training_servers,
    stop_training_servers,
)

pytestmark = [pytest.mark.browser, pytest.mark.tensorflow]
SESSION = re.compile(r"^\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d(_\d+)?$")


@pytest.fixture(scope="module")
def trainer() -> Iterator[TrainingServer]:
    servers = start_training_servers(1)
    yield servers[0]
    stop_training_servers(servers)


def test_dialog_captures_a_live_server_and_selects_the_new_run(
    page: Page, empty_tensorboard_url: str, trainer: TrainingServer, record: PageRecord,
) -> None:
    page.goto(standalone(empty_tensorboard_url))
    expect(page.get_by_test_id("empty-state")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    page.get_by_test_id("capture-button").first.click()
    dialog = page.get_by_test_id("capture-dialog")
    expect(dialog).to_be_visible()

    # A closed port: one clear sentence, and the dialog can be used again.
    closed = free_port()
    dialog.get_by_test_id("capture-addresses").fill(f"127.0.0.1:{closed}")
    dialog.get_by_test_id("capture-duration").fill("1000")
    dialog.get_by_test_id("capture-submit").click()
    error = dialog.get_by_test_id("capture-error")
    expect(error).to_contain_text(f"127.0.0.1:{closed} refused the connection",
                                  timeout=LOAD_TIMEOUT_MS)
    expect(dialog.get_by_test_id("capture-submit")).to_be_enabled()

    # The live server, with every field of the dialog set.
    dialog.get_by_test_id("capture-addresses").fill(f"grpc://{trainer.address}")
    dialog.get_by_test_id("capture-duration").fill("1500")
    dialog.get_by_test_id("capture-retries").fill("1")
    dialog.get_by_test_id("capture-delay").fill("0")
    dialog.get_by_test_id("capture-host-level").select_option("2")
    dialog.get_by_test_id("capture-device-level").select_option("1")
    dialog.get_by_test_id("capture-python-level").select_option("0")
    dialog.get_by_test_id("capture-submit").click()
    expect(dialog.get_by_test_id("capture-progress")).to_be_visible()
    expect(dialog.get_by_test_id("capture-submit")).to_be_disabled()
    result = dialog.get_by_test_id("capture-result")
    expect(result).to_contain_text("Captured 1500 ms from 1 host", timeout=LOAD_TIMEOUT_MS)
    expect(dialog.get_by_test_id("capture-progress")).to_have_count(0)

    # The new run is listed and selected behind the dialog, without a reload.
    run_select = page.get_by_test_id("run-select")
    expect(run_select).to_have_value(SESSION, timeout=LOAD_TIMEOUT_MS)
    run = run_select.input_value()
    assert run in (result.text_content() or "")
    assert run in option_values(run_select)
    dialog.get_by_test_id("capture-close").click()
    expect(dialog).to_be_hidden()
    document = expect_view(page, "overview_page", run, f"127.0.0.1_{trainer.port}")
    step_count = document.get_by_test_id("overview-step-count")
    expect(step_count).to_have_text(re.compile(r"\d+"), timeout=LOAD_TIMEOUT_MS)
    assert int(re.sub(r"\D", "", step_count.text_content() or "")) >= 10  # 1.5 s of ~10 ms steps

    assert record.page_errors == []
    # The only console error is Chromium's note about the closed port's 502 answer.
    assert all("502" in message for message in record.console_errors), record.console_errors
    assert all(url.startswith(empty_tensorboard_url) or url.startswith("data:")
               for url in record.requests), record.requests
