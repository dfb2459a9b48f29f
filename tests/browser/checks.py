"""Reading what a view shows and comparing it with the server's JSON: shared assertions.

Every view test reads figures through their `data-testid` and compares them with the `data`
route's document within the rounding the view shows, checks a page's console and traffic,
and fetches the view's CSV links.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from playwright.sync_api import Page, expect

from tests.browser.pages import Root, first_host, get_json
from tests.browser.support import LOCAL_HOST, PageRecord

MS = 3  # decimals shown for milliseconds
US = 1  # decimals shown for microseconds (op and kernel tables)
PERCENT = 1  # decimals shown for percentages
MISSING = "—"


def shown_text(root: Root, testid: str) -> str:
    element = root.get_by_test_id(testid)
    expect(element).to_have_count(1)
    return (element.text_content() or "").strip()


def assert_shown_number(text: str, expected: float, decimals: int, what: str) -> None:
    """`text` is `expected` rounded to `decimals` places."""
    assert re.fullmatch(rf"-?\d+\.\d{{{decimals}}}", text), f"{what} shows {text!r}"
    tolerance = 0.5 * 10**-decimals + 1e-9
    assert abs(float(text) - expected) <= tolerance, f"{what}: shown {text}, JSON {expected}"


def assert_figure(root: Root, testid: str, expected: float, decimals: int) -> None:
    """The figure `testid` shows `expected` rounded to `decimals` places."""
    assert_shown_number(shown_text(root, testid), expected, decimals, testid)


def row_names(root: Root, testid: str, attribute: str = "opName") -> list[str]:
    """The `data-*` attribute (camelCase dataset key) of every row `testid`, in order."""
    names: list[str] = root.get_by_test_id(testid).evaluate_all(
        "(rows, key) => rows.map(row => row.dataset[key])", attribute
    )
    return names


def assert_clean(record: PageRecord) -> None:
    assert record.page_errors == []
    assert record.console_errors == []
    assert record.foreign_requests() == []


def check_csv_link(page: Page, root: Root, testid: str, table: str) -> str:
    """The link points at this server's data_csv route and answers 200 text/csv; its text."""
    href = root.get_by_test_id(testid).get_attribute("href")
    assert href, f"{testid} has no href"
    url = urllib.parse.urlsplit(href)
    assert url.hostname == LOCAL_HOST and url.path.endswith("/data/plugin/profile/data_csv")
    assert urllib.parse.parse_qs(url.query)["table"] == [table]
    response = page.request.get(href)
    assert response.status == 200, f"{href}: {response.status}"
    assert response.headers["content-type"].startswith("text/csv")
    text = response.text()
    assert text.startswith('"')  # a quoted header row
    return text


def document(base: str, run: str, view: str, **params: str) -> tuple[str, dict[str, Any]]:
    """The first host of `run` for `view`, and that host's document (with view `params`)."""
    host = first_host(base, run, view)
    doc: dict[str, Any] = get_json(base, "data", run=run, tag=view, host=host, **params)
    return host, doc
