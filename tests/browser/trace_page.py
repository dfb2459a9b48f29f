"""Reading the trace viewer's page: its test hook `window.__tbTrace` and the windows it drew.

`window.__tbTrace` (frontend/src/views/trace_viewer/test_hook.ts) reports what each frame
drew; these helpers wait for it to settle and fetch the JSON of the window it drew from, so
a test compares the page with the routes' answers. Shared by the trace browser tests.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page

from tests.browser.pages import LOAD_TIMEOUT_MS, get_json, open_view

VIEW = "trace_viewer"
Hook = dict[str, Any]


def hook(page: Page) -> Hook:
    value: Hook | None = page.evaluate("() => window.__tbTrace ?? null")
    assert value is not None, "the trace viewer published no window.__tbTrace"
    return value


def wait_hook(page: Page, ready: Callable[[Hook], bool], what: str) -> Hook:
    """Polls window.__tbTrace until `ready` holds (the page's CSP forbids wait_for_function)."""
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    last: Hook | None = None
    while time.monotonic() < deadline:
        last = page.evaluate("() => window.__tbTrace ?? null")
        if last is not None and ready(last):
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; last hook: {_short(last)}")


def _short(value: Hook | None) -> str:
    if value is None:
        return "None"
    return str({k: v for k, v in value.items() if k not in ("targets", "drawn_row_keys")})


def settled(h: Hook) -> bool:
    """Drawn, no input waiting for its frame, nothing loading, and the last frame drew the last
    loaded window."""
    return (
        h["frames"] > 0
        and not h.get("frame_pending", False)
        and not h["loading"]
        and h["loaded"] is not None
        and h["drawn_url"] == h["loaded"]["url"]
    )


def open_viewer(page: Page, base: str, run: str, host: str) -> Hook:
    open_view(page, base, VIEW, run, host)
    return wait_hook(page, settled, "the first frame")


def url_params(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def window_json(base: str, url: str) -> dict[str, Any]:
    """The JSON of the window URL the page fetched, fetched again directly."""
    doc: dict[str, Any] = get_json(base, "data", **url_params(url))
    return doc
