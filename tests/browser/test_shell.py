"""The Profile tab's shell in a real Chromium: inside TensorBoard, standalone, URL state, errors.

Each test drives the app the way a user does (selectors, reload, back) and asserts on the
stable `data-testid` hooks, never on pixels. Runs are matched by their first path part, the
fixture scenario (`two_hosts/...`), so the tests do not depend on session timestamps.
"""

from __future__ import annotations

import re
import urllib.parse

import pytest
from playwright.sync_api import Page, expect

from tests.browser.pages import (
    LOAD_TIMEOUT_MS,
    PROFILE_IFRAME,
    Root,
    expect_view,
    loaded_runs,
    option_values,
    run_of,
    standalone,
)
from tests.browser.support import MULTI_HOST_FIXTURE, PageRecord
from tests.fixtures import DATA_DIR, FIXTURES

pytestmark = pytest.mark.browser

ALL_HOSTS = "ALL_HOSTS"


def hosts_on_disk(run: str) -> set[str]:
    """The host names a run must list: the stems of its session's .xplane.pb files."""
    *tb_run, session = run.split("/")
    session_dir = DATA_DIR.joinpath(*tb_run, "plugins", "profile", session)
    hosts = {path.name.removesuffix(".xplane.pb") for path in session_dir.glob("*.xplane.pb")}
    assert hosts, f"no .xplane.pb under {session_dir}"
    return hosts


def check_runs_and_hosts(root: Root) -> None:
    """The run selector lists every fixture; the two-host run lists exactly its two hosts."""
    runs = loaded_runs(root)
    for scenario in FIXTURES:
        run_of(runs, scenario)
    expect_view(root)

    run = run_of(runs, MULTI_HOST_FIXTURE)
    root.get_by_test_id("run-select").select_option(run)
    expect(root.get_by_test_id("run-select")).to_have_value(run)
    host_select = root.get_by_test_id("host-select")
    real_hosts = host_select.locator(f"option:not([value='{ALL_HOSTS}']):not([value=''])")
    expect(real_hosts).to_have_count(2, timeout=LOAD_TIMEOUT_MS)
    expect(host_select).to_be_enabled()
    listed = [value for value in option_values(host_select) if value != ALL_HOSTS]
    assert set(listed) == hosts_on_disk(run)
    view = root.get_by_test_id("view-select").input_value()
    expect_view(root, view, run)


def test_profile_tab_inside_tensorboard(page: Page, tensorboard_url: str) -> None:
    page.goto(f"{tensorboard_url}/#profile")
    tab = page.get_by_role("tab", name=re.compile(r"^\s*profile\s*$", re.I), selected=True)
    expect(tab).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    frame = page.frame_locator(PROFILE_IFRAME)
    check_runs_and_hosts(frame)


def test_standalone_page(page: Page, tensorboard_url: str) -> None:
    page.goto(standalone(tensorboard_url))
    check_runs_and_hosts(page)
    expect(page).to_have_title(re.compile("Profile"))


def test_clean_console_and_no_foreign_requests(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    page.goto(f"{tensorboard_url}/#profile")
    check_runs_and_hosts(page.frame_locator(PROFILE_IFRAME))
    page.goto(standalone(tensorboard_url))
    check_runs_and_hosts(page)
    assert record.page_errors == []
    assert record.console_errors == []
    assert any("/data/plugin/profile/data?" in url for url in record.requests)
    assert record.foreign_requests() == []


@pytest.mark.parametrize("where", ["standalone", "tensorboard"])
def test_bad_run_in_url_shows_error(
    page: Page, tensorboard_url: str, record: PageRecord, where: str
) -> None:
    bad_run = "no_such_run/<b>bold</b>"
    if where == "standalone":
        page.goto(standalone(tensorboard_url, "#run=no_such_run%2F%3Cb%3Ebold%3C%2Fb%3E"))
        root: Root = page
    else:  # TensorBoard's own hash carries plugin data as p.<plugin>.<key>
        page.goto(f"{tensorboard_url}/#profile&p.profile.run=no_such_run%2F%3Cb%3Ebold%3C%2Fb%3E")
        root = page.frame_locator(PROFILE_IFRAME)
    error = root.get_by_test_id("error-message")
    expect(error).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    assert error.text_content().strip(), "the error message is empty"
    expect(root.get_by_test_id("run-select")).to_have_value(bad_run)
    expect(root.locator("b")).to_have_count(0)  # the run name stayed text
    assert record.page_errors == []
    # The only console errors are the browser's own notes of the 4xx answer.
    for message in record.console_errors:
        assert re.search(r"status of 4\d\d", message), record.console_errors


def test_every_view_renders(page: Page, tensorboard_url: str) -> None:
    page.goto(standalone(tensorboard_url))
    run = run_of(loaded_runs(page), "keras_fit")
    page.get_by_test_id("run-select").select_option(run)
    expect_view(page, run=run)
    view_select = page.get_by_test_id("view-select")
    views = option_values(view_select)
    assert views, "the run lists no views"
    for view in views:
        view_select.select_option(view)
        document = expect_view(page, view, run)
        # Every view explains itself: the diagnostics panel is part of each one.
        expect(document.get_by_test_id("diagnostics")).to_be_attached()


def test_selection_survives_reload_and_back(page: Page, tensorboard_url: str) -> None:
    page.goto(standalone(tensorboard_url))
    runs = loaded_runs(page)
    expect_view(page)
    run = run_of(runs, MULTI_HOST_FIXTURE)
    first = next(other for other in runs if other != run)
    page.get_by_test_id("run-select").select_option(first)
    expect_view(page, run=first)
    page.get_by_test_id("run-select").select_option(run)
    host_select = page.get_by_test_id("host-select")
    real_hosts = host_select.locator(f"option:not([value='{ALL_HOSTS}']):not([value=''])")
    expect(real_hosts).to_have_count(2, timeout=LOAD_TIMEOUT_MS)
    expect_view(page, run=run)
    default_host = host_select.input_value()
    host = next(name for name in sorted(hosts_on_disk(run)) if name != default_host)
    host_select.select_option(host)
    expect_view(page, run=run, host=host)
    in_url = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).fragment)
    assert (in_url["run"], in_url["host"]) == ([run], [host])

    page.reload()
    expect(page.get_by_test_id("run-select")).to_have_value(run, timeout=LOAD_TIMEOUT_MS)
    expect(page.get_by_test_id("host-select")).to_have_value(host, timeout=LOAD_TIMEOUT_MS)
    expect_view(page, run=run, host=host)

    page.go_back()  # before the host was chosen: the run's default host
    expect(host_select).to_have_value(default_host, timeout=LOAD_TIMEOUT_MS)
    page.go_back()  # before the run was chosen
    expect(page.get_by_test_id("run-select")).to_have_value(first, timeout=LOAD_TIMEOUT_MS)
    page.go_forward()
    expect(page.get_by_test_id("run-select")).to_have_value(run, timeout=LOAD_TIMEOUT_MS)


def test_tensorboard_reload_restores_selection(page: Page, tensorboard_url: str) -> None:
    page.goto(f"{tensorboard_url}/#profile")
    frame = page.frame_locator(PROFILE_IFRAME)
    run = run_of(loaded_runs(frame), MULTI_HOST_FIXTURE)
    frame.get_by_test_id("run-select").select_option(run)
    expect_view(frame, run=run)
    page.reload()  # TensorBoard re-creates the iframe from its fixed address
    frame = page.frame_locator(PROFILE_IFRAME)
    expect(frame.get_by_test_id("run-select")).to_have_value(run, timeout=LOAD_TIMEOUT_MS)
    expect_view(frame, run=run)


def test_empty_logdir_explains_where_profiles_go(
    page: Page, empty_tensorboard_url: str, record: PageRecord
) -> None:
    page.goto(standalone(empty_tensorboard_url))
    empty = page.get_by_test_id("empty-state")
    expect(empty).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    expect(empty).to_contain_text("plugins/profile/<session>/<host>.xplane.pb")
    expect(empty).to_contain_text("profile_batch")
    expect(empty).to_contain_text("tf.profiler.experimental.start")
    expect(page.get_by_test_id("capture-button").first).to_be_enabled()
    assert record.console_errors == [] and record.page_errors == []
