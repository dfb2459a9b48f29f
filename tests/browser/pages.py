"""How the browser tests reach the Profile tab: its addresses, selectors and waits.

Shared by every test module here. Runs are matched by their first path part, the fixture
scenario (`two_hosts/...`), so tests do not depend on session timestamps.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any

from playwright.sync_api import FrameLocator, Locator, Page, expect

# First loads decode and analyse a real profile on a 2-core machine: be patient.
LOAD_TIMEOUT_MS = 60_000
PROFILE_IFRAME = 'iframe[src*="plugin_entry.html?name=profile"]'
API = "/data/plugin/profile"

Root = Page | FrameLocator


def standalone(base: str, hash_: str = "") -> str:
    return f"{base}{API}/index.html{hash_}"


def selection_hash(run: str, view: str, host: str | None = None) -> str:
    """`#run=...&view=...[&host=...]` for the standalone page."""
    params = {"run": run, "view": view, **({"host": host} if host else {})}
    return "#" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def in_tensorboard(base: str, run: str, view: str) -> str:
    """TensorBoard's own page, Profile tab, with the selection as TensorBoard plugin data."""
    quote = urllib.parse.quote
    return f"{base}/#profile&p.profile.run={quote(run, safe='')}&p.profile.view={quote(view)}"


def option_values(select: Locator) -> list[str]:
    return select.locator("option").evaluate_all("options => options.map(o => o.value)")


def loaded_runs(root: Root) -> list[str]:
    """The run selector's runs, once it has loaded them."""
    select = root.get_by_test_id("run-select")
    expect(select).to_be_enabled(timeout=LOAD_TIMEOUT_MS)
    return [value for value in option_values(select) if value]


def run_of(runs: list[str], scenario: str) -> str:
    matches = [run for run in runs if run.split("/")[0] == scenario]
    assert matches, f"no run of fixture {scenario!r} among {runs}"
    return matches[0]


def expect_view(
    root: Root, view: str | None = None, run: str | None = None, host: str | None = None
) -> Locator:
    """Waits for the document of `view`, `run` and `host` (None: any); fails on an error."""
    wanted = {"data-tool": view, "data-run": run, "data-host": host}
    selector = "[data-testid=view-document]" + "".join(
        f"[{name}={json.dumps(value)}]" for name, value in wanted.items() if value is not None
    )
    document = root.locator(selector)
    error = root.get_by_test_id("error-message")
    expect(document.or_(error)).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    assert not error.is_visible(), f"error instead of a view: {error.text_content()}"
    return document


def open_view(page: Page, base: str, view: str, run: str, host: str | None = None) -> Locator:
    """Opens the standalone page on `view` of `run` (and `host`); waits for its document."""
    page.goto(standalone(base, selection_hash(run, view, host)))
    return expect_view(page, view, run, host)


def open_in_tensorboard(page: Page, base: str, view: str, run: str, host: str) -> FrameLocator:
    """Opens TensorBoard's Profile tab on `view` of `run`; waits for the document of `host`."""
    page.goto(in_tensorboard(base, run, view))
    frame = page.frame_locator(PROFILE_IFRAME)
    expect_view(frame, view, run, host)
    return frame


def get_json(base: str, route: str, **params: str) -> Any:
    """GETs a plugin route of the test server and decodes its JSON answer."""
    url = f"{base}{API}/{route}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=120) as response:
        return json.load(response)


def runs_of_server(base: str) -> list[str]:
    runs: list[str] = get_json(base, "runs")
    return runs


def fixture_run(base: str, scenario: str) -> str:
    """The run of fixture `scenario` on the server at `base`."""
    return run_of(runs_of_server(base), scenario)


def first_host(base: str, run: str, view: str) -> str:
    """The first host the server offers for `view` of `run`."""
    host: str = get_json(base, "hosts", run=run, tag=view)[0]
    return host
