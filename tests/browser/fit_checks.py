"""What "a table fits" means in the page, measured in Chromium: shared by the fit tests.

`table_fit(page)` walks every DataTable (`table.data-table.fitted`) of the page and returns,
per table, its width and its box's, every numeric or content-sized cell (and header) whose
text is clipped (scrollWidth > clientWidth), and every name cell's middle cut: the full name
(its cell's `title`), the text shown (`innerText`: the cut-out middle is `display: none`), whether
the ellipsis is drawn before the tail, and whether the shown text overflows its box.
`check_middle_cut` asserts that a name cell shows its full name, or its start and end with
an ellipsis between.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Locator, Page, expect

ELLIPSIS = "\u2026"

_MEASURE = """() => [...document.querySelectorAll('table.data-table.fitted')].map((table) => {
  const box = table.closest('.data-table-scroll') ?? table.parentElement;
  const clipped = (cell) => cell.scrollWidth > cell.clientWidth;
  const label = (cell) => `${cell.dataset.testid ?? cell.textContent.trim()}: ` +
    `${JSON.stringify(cell.textContent.trim())} ${cell.scrollWidth} > ${cell.clientWidth}`;
  const fitted = [...table.querySelectorAll('tbody td.fit')];
  const headers = [...table.querySelectorAll('thead th')];
  const names = [...table.querySelectorAll('tbody td.name .middle-text')].map((span) => {
    const tail = span.querySelector('.middle-tail');
    return {
      testid: span.closest('td').dataset.testid,
      full: span.closest('td').title || span.title,
      text: span.textContent,
      shown: span.innerText,
      cut: span.dataset.cut === '1',
      fold: span.dataset.fold === '1',
      parts: [...span.children].filter((c) => !c.classList.contains('middle-cut'))
        .map((c) => c.textContent),
      ellipsis: tail ? getComputedStyle(tail, '::before').content : null,
      overflows: span.scrollWidth > span.clientWidth,
    };
  });
  return {
    testid: table.dataset.testid,
    table_px: table.offsetWidth,
    box_px: box.clientWidth,
    numeric_cells: table.querySelectorAll('tbody td.num').length,
    fitted_cells: fitted.length,
    clipped: fitted.filter(clipped).map(label),
    clipped_headers: headers.filter((h) => !h.classList.contains('name') && clipped(h))
      .map(label),
    names,
  };
})"""


def table_fit(page: Page) -> list[dict[str, Any]]:
    """Every fitted table of the page, measured (see the module docstring)."""
    tables: list[dict[str, Any]] = page.evaluate(_MEASURE)
    return tables


def check_middle_cut(name: dict[str, Any]) -> None:
    """A name cell shows its whole name, or its start, an ellipsis and its end, in its box."""
    full, shown = name["full"], name["shown"]
    where = f"{name['testid']} {full!r}"
    assert name["text"] == full, f"{where}: the DOM lost part of the name: {name['text']!r}"
    assert not name["overflows"], f"{where}: {shown!r} overflows its cell"
    if not name["cut"]:
        assert shown == full, f"{where} shows {shown!r}"
        return
    assert name["ellipsis"] == f'"{ELLIPSIS}"', f"{where}: no ellipsis drawn ({name['ellipsis']})"
    # innerText leaves out the hidden middle and the drawn ellipsis: head + tail.
    assert len(shown) < len(full), f"{where}: cut, yet shows {shown!r}"
    if name["fold"]:  # alike names: the shared start folded (middle_text.tsx, cutParts)
        check_fold(where, full, name["parts"])
        return
    # The head is half of what is kept (rounded down), as the CLI's _middle_cut keeps it.
    head = len(shown) // 2
    assert full.startswith(shown[:head]) and full.endswith(shown[head:]), (
        f"{where}: {shown!r} is not the name's start and end, half each"
    )


def check_fold(where: str, full: str, parts: list[str]) -> None:
    """A folded name shows pieces of itself in order: its start (maybe empty), then what
    follows each ellipsis; the last piece, when not empty, is its end."""
    assert full.startswith(parts[0]), f"{where}: {parts!r} does not start as the name"
    at = len(parts[0])
    for piece in parts[1:]:
        found = full.find(piece, at + 1)
        assert piece == "" or found > at, f"{where}: {parts!r} is not cut from the name"
        at = found + len(piece) if piece else at
    assert parts[-1] == "" or full.endswith(parts[-1]), f"{where}: {parts!r} lost the end"


def assert_cut_in_the_middle(cell: Locator, full: str) -> None:
    """The name cell `cell` shows `full` cut in the middle: its start and end, half each."""
    cut = cell.locator(".middle-text")
    expect(cut).to_have_attribute("data-cut", "1")
    shown = cut.inner_text()
    assert len(shown) < len(full), f"no ellipsis: {shown!r}"
    head = len(shown) // 2
    assert full.startswith(shown[:head]) and full.endswith(shown[head:]), shown
