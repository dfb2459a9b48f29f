"""The TensorFlow stats and kernel stats views in a real Chromium, checked against the JSON.

TensorFlow stats on the real capture `tfdata_slow` (standalone, and inside TensorBoard's
Profile tab): the row count, the names and figures of the rows shown, the pies' slices and
shares, sorting by a header (and back), the name filter, paging to the last row, the CSV
link, and the IDLE switch (off by default, table and pies; a re-fetch, kept in the URL,
undone by back). `two_hosts` checks
the "summed over N hosts" note. The synthetic GPU profile (tests/browser/synthetic.py)
covers what CPU captures lack: device pies, the Tensor Core column, and kernel stats (every
row and column, yes/no badges, filters, a long kernel name cut with an ellipsis, a profile
with a GPU but no kernels). Every page must keep a clean console and talk to 127.0.0.1 only.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser import synthetic
from tests.browser.checks import (
    MISSING,
    PERCENT,
    US,
    assert_clean,
    assert_figure,
    assert_shown_number,
    check_csv_link,
    document,
    row_names,
    shown_text,
)
from tests.browser.fit_checks import assert_cut_in_the_middle
from tests.browser.pages import (
    PROFILE_IFRAME,
    Root,
    expect_view,
    fixture_run,
    get_json,
    open_in_tensorboard,
    open_view,
    selection_hash,
    standalone,
)
from tests.browser.support import MULTI_HOST_FIXTURE, PageRecord

pytestmark = pytest.mark.browser

TFSTATS = "tensorflow_stats"
KERNELS = "kernel_stats"
PAGE_ROWS = 100  # rows a page shows by default
MAX_SLICES = 10  # slices a pie names; the rest are "Other"
NO_TYPE = "(no type)"
IDLE = "IDLE"
Row = dict[str, Any]


# -- what the pies should show ------------------------------------------------------------


def expected_slices(parts: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pie's slices: the largest MAX_SLICES parts (ties in order), the rest as Other."""
    positive = sorted((part for part in parts if part[1] > 0), key=lambda part: -part[1])
    named = positive[:MAX_SLICES] if len(positive) > MAX_SLICES + 1 else positive
    rest = positive[len(named) :]
    return named + ([("Other", sum(value for _, value in rest))] if rest else [])


def summed(rows: list[Row], key: str, value: str) -> list[tuple[str, float]]:
    """`value` summed per `key` (empty keys as NO_TYPE), in order of first appearance."""
    sums: dict[str, float] = {}
    for row in rows:
        name = row[key] or NO_TYPE
        sums[name] = sums.get(name, 0.0) + row[value]
    return list(sums.items())


def check_pie(root: Root, testid: str, parts: list[tuple[str, float]], total: float) -> None:
    """The pie `testid` has the expected slices, named in its legend with their shares."""
    slices = expected_slices(parts)
    pie = root.get_by_test_id(testid)
    expect(pie).to_have_attribute("data-slices", str(len(slices)))
    expect(pie.get_by_test_id(f"{testid}-chart").locator("canvas").first).to_be_visible()
    legend = pie.get_by_test_id("pie-slice")
    expect(legend).to_have_count(len(slices))
    assert legend.evaluate_all("items => items.map(i => i.dataset.name)") == [
        name for name, _ in slices
    ]
    shares = pie.get_by_test_id("pie-slice-percent").all_text_contents()
    for (name, value), text in zip(slices, shares, strict=True):
        assert_shown_number(text.strip(), 100 * value / total, PERCENT, f"{testid} {name}")


# -- TensorFlow stats ---------------------------------------------------------------------


def check_tfstats_row(row: Any, op: Row, has_tensor_core: bool) -> None:
    """One table row shows the document's row (text exactly, numbers within rounding)."""
    expect(row).to_have_attribute("data-op-name", op["op_name"])
    expect(row).to_have_attribute("data-side", op["host_or_device"])
    name = row.get_by_test_id("tfstats-row-op_name")
    expect(name).to_have_text(op["op_name"])
    expect(name).to_have_attribute("title", op["op_name"])
    cells = {
        key: (row.get_by_test_id(f"tfstats-row-{key}").text_content() or "").strip()
        for key in ("rank", "side", "op_type", "occurrences")
    }
    assert cells == {
        "rank": str(op["rank"]),
        "side": op["host_or_device"],
        "op_type": op["op_type"],
        "occurrences": str(op["occurrences"]),
    }
    for key in ("total_time_us", "avg_time_us", "total_self_time_us", "avg_self_time_us"):
        assert_figure(row, f"tfstats-row-{key}", op[key], US)
    for key in ("self_time_fraction", "cumulative_self_time_fraction"):
        assert_figure(row, f"tfstats-row-{key}", 100 * op[key], PERCENT)
    if has_tensor_core:
        cell = row.get_by_test_id("tfstats-row-tensor_core")
        if "gpu_tensor_core_utilization" in op:
            share = 100 * op["gpu_tensor_core_utilization"]
            assert_figure(row, "tfstats-row-tensor_core", share, PERCENT)
        else:
            expect(cell).to_have_text(MISSING)


def check_tfstats(page: Page, root: Root, doc: dict[str, Any]) -> None:
    """The TensorFlow stats view shows the document: counts, rows, pies, notes, CSV link."""
    rows: list[Row] = doc["rows"]
    device = [row for row in rows if row["host_or_device"] == "Device"]
    host = [row for row in rows if row["host_or_device"] == "Host"]
    assert len(rows) == doc["num_rows"] == doc["num_device_rows"] + doc["num_host_rows"]
    assert (len(device), len(host)) == (doc["num_device_rows"], doc["num_host_rows"])

    view = root.get_by_test_id("tfstats-view")
    expect(view).to_have_attribute("data-include-idle", str(doc["include_idle"]).lower())
    expect(view).to_have_attribute("data-rows", str(len(rows)))
    expect(root.get_by_test_id("idle-toggle")).to_be_checked(checked=doc["include_idle"])
    assert shown_text(root, "tfstats-num-device-rows") == str(doc["num_device_rows"])
    assert shown_text(root, "tfstats-num-host-rows") == str(doc["num_host_rows"])
    count = root.get_by_test_id("tfstats-row-count")
    expect(count).to_have_text(f"{len(rows)} rows")
    expect(count).to_have_attribute("data-total", str(len(rows)))
    if doc["host_count"] > 1:
        expect(root.get_by_test_id("tfstats-hosts")).to_have_text(
            f"summed over {doc['host_count']} hosts"
        )
        assert shown_text(root, "tfstats-host-count") == str(doc["host_count"])
    else:
        expect(root.get_by_test_id("tfstats-hosts")).to_have_count(0)

    # The first page, row by row: the server's order, every figure of a few rows.
    shown = rows[:PAGE_ROWS]
    table_rows = root.get_by_test_id("tfstats-row")
    expect(table_rows).to_have_count(len(shown))
    assert row_names(root, "tfstats-row") == [row["op_name"] for row in shown]
    has_tensor_core = any("gpu_tensor_core_utilization" in row for row in rows)
    expect(root.get_by_test_id("tfstats-sort-tensor_core")).to_have_count(int(has_tensor_core))
    for index in sorted({0, 1, 2, len(shown) - 1}):
        if index < len(shown):
            check_tfstats_row(table_rows.nth(index), shown[index], has_tensor_core)

    # Pies: self time per op and per op type, for the device (if it has rows) and the host;
    # IDLE is in them exactly when it is in the table (one switch for both).
    expect(root.get_by_test_id("pie-idle-toggle")).to_have_count(0)
    for side, side_rows in (("device", device), ("host", host)):
        if not side_rows:
            expect(root.get_by_test_id(f"pie-{side}-op")).to_have_count(0)
            expect(root.get_by_test_id(f"pie-{side}-type")).to_have_count(0)
            continue
        total = sum(row["total_self_time_us"] for row in side_rows)
        ops = [(row["op_name"], row["total_self_time_us"]) for row in side_rows]
        check_pie(root, f"pie-{side}-op", ops, total)
        types = summed(side_rows, "op_type", "total_self_time_us")
        check_pie(root, f"pie-{side}-type", types, total)

    csv = check_csv_link(page, root, "csv-link", "rows")
    lines = csv.strip().splitlines()
    assert lines[0].startswith('"rank","host_or_device","op_type","op_name"')
    assert len(lines) == 1 + len(rows)


@pytest.fixture(scope="module")
def tfdata_slow(tensorboard_url: str) -> str:
    """The run of the tfdata_slow fixture, as the server names it."""
    return fixture_run(tensorboard_url, "tfdata_slow")


def test_tfstats_standalone_shows_the_documents_numbers(
    page: Page, tensorboard_url: str, tfdata_slow: str, record: PageRecord
) -> None:
    # The page starts without IDLE (the route's default keeps it: docs/api.md).
    host, doc = document(tensorboard_url, tfdata_slow, TFSTATS, include_idle="false")
    assert doc["num_device_rows"] == 0 and doc["num_host_rows"] > 10
    open_view(page, tensorboard_url, TFSTATS, tfdata_slow, host)
    check_tfstats(page, page, doc)

    # The largest host slice under the pointer (IDLE is left out of the pies): a tooltip
    # made of text nodes.
    busy = [row for row in doc["rows"] if row["op_name"] != IDLE]
    top_name, top_value = expected_slices(
        [(row["op_name"], row["total_self_time_us"]) for row in busy]
    )[0]
    chart = page.get_by_test_id("pie-host-op-chart")
    box = chart.bounding_box()
    assert box is not None
    # Slices start at 12 o'clock and go clockwise; the largest (> 25 %) covers 3 o'clock.
    assert top_value / sum(row["total_self_time_us"] for row in busy) > 0.25
    page.mouse.move(box["x"] + box["width"] * 0.8, box["y"] + box["height"] / 2)
    tip = page.locator(".tbp-tip-pie")
    expect(tip).to_be_visible(timeout=5_000)
    expect(tip.locator(".tbp-tip-title")).to_have_text(top_name)
    assert_clean(record)


def test_tfstats_inside_tensorboard_with_idle_toggle(
    page: Page, tensorboard_url: str, tfdata_slow: str, record: PageRecord
) -> None:
    host, busy = document(tensorboard_url, tfdata_slow, TFSTATS, include_idle="false")
    frame = open_in_tensorboard(page, tensorboard_url, TFSTATS, tfdata_slow, host)
    check_tfstats(page, frame, busy)

    # The toggle works in the iframe too, and TensorBoard's reload keeps it (sessionStorage;
    # without the link's p.profile.* in TensorBoard's hash, which would win).
    _, doc = document(tensorboard_url, tfdata_slow, TFSTATS)
    frame.get_by_test_id("idle-toggle").check()
    expect(frame.get_by_test_id("tfstats-view")).to_have_attribute("data-include-idle", "true")
    check_tfstats(page, frame, doc)
    page.goto(f"{tensorboard_url}/#profile")
    page.reload()
    frame = page.frame_locator(PROFILE_IFRAME)
    expect_view(frame, TFSTATS, tfdata_slow, host)
    expect(frame.get_by_test_id("tfstats-view")).to_have_attribute("data-include-idle", "true")
    expect(frame.get_by_test_id("idle-toggle")).to_be_checked()
    assert_clean(record)


# Names sorted as the page sorts text (the browser's collation), ties in their order;
# the argument is [names, 1 for A to Z or -1 for Z to A].
COLLATE = """([names, sign]) => names
    .map((name, index) => [name, index])
    .sort((a, b) => sign * a[0].localeCompare(b[0]) || a[1] - b[1])
    .map(([name]) => name)"""


def expect_names(root: Root, names: list[str]) -> None:
    """The op table shows exactly `names`, in this order (retried until it does)."""
    expect(root.get_by_test_id("tfstats-row-op_name")).to_have_text(names)
    assert row_names(root, "tfstats-row") == names


def test_tfstats_table_sorts_filters_and_pages(
    page: Page, tensorboard_url: str, tfdata_slow: str, record: PageRecord
) -> None:
    host, doc = document(tensorboard_url, tfdata_slow, TFSTATS, include_idle="false")
    rows: list[Row] = doc["rows"]
    names = [row["op_name"] for row in rows]
    assert 25 < len(rows) <= PAGE_ROWS, "tfdata_slow should fill more than one page of 25"
    open_view(page, tensorboard_url, TFSTATS, tfdata_slow, host)
    expect_names(page, names)

    # Numbers sort as numbers, largest first; a second click reverses. Ties keep their order.
    by_count = page.get_by_test_id("tfstats-sort-occurrences")
    by_count.click()
    expect(page.locator("th", has=by_count)).to_have_attribute("aria-sort", "descending")
    expect_names(page, [row["op_name"] for row in sorted(rows, key=lambda r: -r["occurrences"])])
    counts = [int(t) for t in page.get_by_test_id("tfstats-row-occurrences").all_text_contents()]
    assert counts == sorted(counts, reverse=True) and counts[0] > 100 > counts[-1]
    by_count.click()
    expect(page.locator("th", has=by_count)).to_have_attribute("aria-sort", "ascending")
    expect_names(page, [row["op_name"] for row in sorted(rows, key=lambda r: r["occurrences"])])

    by_self = page.get_by_test_id("tfstats-sort-avg_self_time_us")
    by_self.click()
    expect(page.locator("th", has=by_count)).to_have_attribute("aria-sort", "none")
    largest = sorted(rows, key=lambda r: -r["avg_self_time_us"])
    expect_names(page, [row["op_name"] for row in largest])

    # Text sorts A to Z (the browser's collation), then Z to A.
    by_name = page.get_by_test_id("tfstats-sort-op_name")
    by_name.click()
    a_to_z: list[str] = page.evaluate(COLLATE, [names, 1])
    assert sorted(a_to_z) == sorted(names) and a_to_z != names
    expect_names(page, a_to_z)
    by_name.click()
    expect(page.locator("th", has=by_name)).to_have_attribute("aria-sort", "descending")
    z_to_a: list[str] = page.evaluate(COLLATE, [names, -1])
    expect_names(page, z_to_a)

    # The name filter narrows the rows (case-insensitively), keeping the sort.
    box = page.get_by_test_id("tfstats-filter")
    box.fill("MATMUL")
    wanted = [name for name in z_to_a if "matmul" in name.lower()]
    assert 0 < len(wanted) < len(names)
    expect_names(page, wanted)
    count = page.get_by_test_id("tfstats-row-count")
    expect(count).to_have_text(f"{len(wanted)} of {len(names)} rows")
    expect(count).to_have_attribute("data-rows", str(len(wanted)))
    box.fill("no op is called this")
    expect(page.get_by_test_id("tfstats-row")).to_have_count(0)
    expect(page.get_by_test_id("tfstats-empty")).to_be_visible()
    expect(count).to_have_text(f"0 of {len(names)} rows")
    box.fill("")
    # By rank, largest first, then smallest first: the server's order (one side only here).
    page.get_by_test_id("tfstats-sort-rank").click()
    page.get_by_test_id("tfstats-sort-rank").click()
    expect_names(page, names)

    # 25 rows a page: every row is reachable, the last one on the last page.
    page.get_by_test_id("tfstats-page-size").select_option("25")
    pages = -(-len(rows) // 25)
    status = page.get_by_test_id("tfstats-page")
    expect(status).to_have_attribute("data-pages", str(pages))
    expect(status).to_have_attribute("data-page", "1")
    expect_names(page, names[:25])
    expect(page.get_by_test_id("tfstats-page-prev")).to_be_disabled()
    for number in range(2, pages + 1):
        page.get_by_test_id("tfstats-page-next").click()
        expect(status).to_have_attribute("data-page", str(number))
        expect_names(page, names[(number - 1) * 25 : number * 25])
    expect(status).to_contain_text(f"Rows {(pages - 1) * 25 + 1}–{len(rows)} of {len(rows)}")
    expect(page.get_by_test_id("tfstats-page-next")).to_be_disabled()
    last = page.get_by_test_id("tfstats-row").last
    expect(last).to_have_attribute("data-op-name", rows[-1]["op_name"])
    assert_figure(last, "tfstats-row-total_self_time_us", rows[-1]["total_self_time_us"], US)
    page.get_by_test_id("tfstats-page-first").click()
    expect(status).to_have_attribute("data-page", "1")
    page.get_by_test_id("tfstats-page-last").click()
    expect(status).to_have_attribute("data-page", str(pages))
    box.fill("sgd")  # filtering goes back to the first page
    expect(status).to_have_attribute("data-page", "1")
    assert_clean(record)


def test_idle_toggle_refetches_and_is_kept_in_the_url(
    page: Page, tensorboard_url: str, tfdata_slow: str, record: PageRecord
) -> None:
    host, with_idle = document(tensorboard_url, tfdata_slow, TFSTATS)
    _, busy = document(tensorboard_url, tfdata_slow, TFSTATS, include_idle="false")
    idle_rows = [row for row in with_idle["rows"] if row["op_name"] == "IDLE"]
    assert idle_rows and busy["num_rows"] == with_idle["num_rows"] - len(idle_rows)
    open_view(page, tensorboard_url, TFSTATS, tfdata_slow, host)
    idle = page.locator("[data-testid=tfstats-row][data-op-name=IDLE]")
    view = page.get_by_test_id("tfstats-view")
    # The page starts without IDLE (it asks for include_idle=false; the URL stays plain).
    expect(view).to_have_attribute("data-include-idle", "false")
    expect(idle).to_have_count(0)
    assert any(
        "/data/plugin/profile/data?" in url and "include_idle=false" in url
        for url in record.requests
    ), "the page did not ask for the document without IDLE"
    assert "include_idle" not in urllib.parse.urlsplit(page.url).fragment

    toggle = page.get_by_test_id("idle-toggle")
    expect(toggle).not_to_be_checked()
    page.get_by_test_id("tfstats-filter").fill("i")  # the view's own state ...
    toggle.check()
    expect(view).to_have_attribute("data-include-idle", "true")
    expect(page.get_by_test_id("tfstats-filter")).to_have_value("i")  # ... survives the re-fetch
    page.get_by_test_id("tfstats-filter").fill("")
    expect(idle).to_have_count(len(idle_rows))
    check_tfstats(page, page, with_idle)
    assert any(
        "/data/plugin/profile/data?" in url and "include_idle=true" in url
        for url in record.requests
    ), "no re-fetch with include_idle=true"
    fragment = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).fragment)
    assert fragment["include_idle"] == ["true"] and fragment["view"] == [TFSTATS]
    href = page.get_by_test_id("csv-link").get_attribute("href") or ""
    assert "include_idle=false" not in href  # the CSV route's default keeps IDLE
    assert '"IDLE"' in check_csv_link(page, page, "csv-link", "rows")

    page.reload()  # the URL keeps the choice
    expect_view(page, TFSTATS, tfdata_slow, host)
    expect(view).to_have_attribute("data-include-idle", "true")
    expect(toggle).to_be_checked()

    page.go_back()  # before the toggle: IDLE is gone, and the URL is the plain selection
    expect(view).to_have_attribute("data-include-idle", "false")
    expect(toggle).not_to_be_checked()
    expect(idle).to_have_count(0)
    assert "include_idle" not in urllib.parse.urlsplit(page.url).fragment
    href = page.get_by_test_id("csv-link").get_attribute("href") or ""
    assert "include_idle=false" in href
    assert '"IDLE"' not in check_csv_link(page, page, "csv-link", "rows")

    toggle.check()  # and unchecking it again asks for the page's default (no IDLE)
    expect(view).to_have_attribute("data-include-idle", "true")
    toggle.uncheck()
    expect(view).to_have_attribute("data-include-idle", "false")
    check_tfstats(page, page, busy)
    assert "include_idle" not in urllib.parse.urlsplit(page.url).fragment

    # Another view takes no include_idle: it never reaches its data request or the URL.
    toggle.check()
    expect(view).to_have_attribute("data-include-idle", "true")
    page.get_by_test_id("view-select").select_option("overview_page")
    expect_view(page, "overview_page", tfdata_slow)
    assert "include_idle" not in urllib.parse.urlsplit(page.url).fragment
    overview_requests = [u for u in record.requests if "tag=overview_page" in u and "/data?" in u]
    assert overview_requests and not any("include_idle" in u for u in overview_requests)
    assert_clean(record)


def test_tfstats_sums_several_hosts(page: Page, tensorboard_url: str, record: PageRecord) -> None:
    run = fixture_run(tensorboard_url, MULTI_HOST_FIXTURE)
    host, doc = document(tensorboard_url, run, TFSTATS, include_idle="false")
    assert host == "ALL_HOSTS" and doc["host_count"] == 2
    page.goto(standalone(tensorboard_url, selection_hash(run, TFSTATS)))
    expect_view(page, TFSTATS, run, host)
    check_tfstats(page, page, doc)
    assert_clean(record)


# -- a GPU profile: device pies, Tensor Cores, kernel stats --------------------------------


def test_tfstats_on_a_gpu_profile_has_device_pies_and_tensor_cores(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base, run, host = synthetic_tensorboard_url, synthetic.GPU_RUN, synthetic.GPU_HOST
    _, doc = document(base, run, TFSTATS, include_idle="false")
    assert doc["num_device_rows"] > MAX_SLICES + 1, "the device pie should group an Other slice"
    open_view(page, base, TFSTATS, run, host)
    check_tfstats(page, page, doc)
    expect(page.get_by_test_id("pie-device-op")).to_have_attribute(
        "data-slices", str(MAX_SLICES + 1)
    )
    expect(page.locator("[data-testid=pie-device-op] [data-other=true]")).to_have_count(1)
    # Tensor Core utilisation per device op: the share of its kernel time on Tensor Cores.
    utilisation = {
        row["op_name"]: row["gpu_tensor_core_utilization"]
        for row in doc["rows"]
        if row["host_or_device"] == "Device"
    }
    assert utilisation["dense/MatMul"] == 1.0 and 0 < utilisation["dense_2/MatMul"] < 1
    for name in ("dense/MatMul", "dense_2/MatMul", "dense_1/MatMul"):
        row = page.locator(f'[data-testid=tfstats-row][data-side=Device][data-op-name="{name}"]')
        assert_figure(row, "tfstats-row-tensor_core", 100 * utilisation[name], PERCENT)
    # The host op whose name looks like HTML stays text.
    expect(page.locator("img[data-injected]")).to_have_count(0)
    assert_clean(record)


KERNEL_COUNTS = ("rank", "occurrences", "registers_per_thread", "shared_memory_bytes")
# Shown in the shared memory cell's title and data attributes (so the table fits 1280 px).
SHARED_PARTS = {"static_shared_memory_bytes": "staticBytes", "dynamic_shared_memory_bytes":
                "dynamicBytes"}
KERNEL_DURATIONS = ("total_duration_us", "avg_duration_us", "min_duration_us", "max_duration_us")


def check_kernel_row(row: Any, kernel: Row) -> None:
    """One kernel row shows every column of the document's row."""
    expect(row).to_have_attribute("data-kernel-name", kernel["kernel_name"])
    expect(row).to_have_attribute("data-op-name", kernel["op_name"])
    name = row.get_by_test_id("kernel-row-kernel_name")
    expect(name).to_have_text(kernel["kernel_name"])
    expect(name).to_have_attribute("title", kernel["kernel_name"])
    expect(row.get_by_test_id("kernel-row-op_name")).to_have_text(kernel["op_name"] or MISSING)
    for key in KERNEL_COUNTS:  # a figure the producer did not write: "—", never 0
        expect(row.get_by_test_id(f"kernel-row-{key}")).to_have_text(
            MISSING if kernel[key] is None else str(kernel[key]))
    shared = row.get_by_test_id("kernel-row-shared_memory_bytes").locator("span")
    for key, data_key in SHARED_PARTS.items():
        assert shared.evaluate("(s, k) => s.dataset[k]", data_key) == (
            "" if kernel[key] is None else str(kernel[key]))
    fixed, dynamic = kernel["static_shared_memory_bytes"], kernel["dynamic_shared_memory_bytes"]
    expect(shared).to_have_attribute(
        "title",
        "one total: the profiler does not split it into static and dynamic"
        if fixed is None and dynamic is None and kernel["shared_memory_bytes"] is not None
        else "not recorded by the profiler" if fixed is None and dynamic is None
        else f"static {MISSING if fixed is None else fixed} B + "
        f"dynamic {MISSING if dynamic is None else dynamic} B",
    )
    for key in KERNEL_DURATIONS:
        assert_figure(row, f"kernel-row-{key}", kernel[key], US)
    if kernel["occupancy_percent"] is None:
        expect(row.get_by_test_id("kernel-row-occupancy_percent")).to_have_text(MISSING)
    else:
        assert_figure(row, "kernel-row-occupancy_percent", kernel["occupancy_percent"], PERCENT)
    for key in ("block_dim", "grid_dim"):
        expect(row.get_by_test_id(f"kernel-row-{key}")).to_have_text(
            ",".join(str(d) for d in kernel[key])
        )
    for key in ("uses_tensor_core", "op_tensor_core_eligible"):
        badge = row.get_by_test_id(f"kernel-row-{key}").locator(".badge")
        expected = "yes" if kernel[key] else "no"
        expect(badge).to_have_attribute("data-value", expected)
        expect(badge).to_have_text(expected)


def expect_kernels(root: Root, kernels: list[Row]) -> None:
    """The kernel table shows exactly these rows (kernel and op), in this order."""
    expect(root.get_by_test_id("kernel-row")).to_have_count(len(kernels))
    assert row_names(root, "kernel-row", "kernelName") == [k["kernel_name"] for k in kernels]
    assert row_names(root, "kernel-row", "opName") == [k["op_name"] for k in kernels]


def test_kernel_stats_on_a_gpu_profile(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base, run, host = synthetic_tensorboard_url, synthetic.GPU_RUN, synthetic.GPU_HOST
    _, doc = document(base, run, KERNELS)
    kernels: list[Row] = doc["rows"]
    assert len(kernels) == doc["num_rows"] and 0 < len(kernels) <= PAGE_ROWS
    open_view(page, base, KERNELS, run, host)
    expect(page.get_by_test_id("kernel-row-count")).to_have_text(f"{len(kernels)} rows")
    expect_kernels(page, kernels)
    rows = page.get_by_test_id("kernel-row")
    for index, kernel in enumerate(kernels):
        check_kernel_row(rows.nth(index), kernel)

    # Both kinds of Tensor Core flag are present, and the long name is cut, whole in its title.
    assert {k["uses_tensor_core"] for k in kernels} == {True, False}
    assert any(k["op_tensor_core_eligible"] and not k["uses_tensor_core"] for k in kernels)
    long_cell = page.locator(
        "[data-testid=kernel-row-kernel_name]", has_text=synthetic.LONG_KERNEL[:60]
    )
    expect(long_cell).to_have_attribute("title", synthetic.LONG_KERNEL)
    assert_cut_in_the_middle(long_cell, synthetic.LONG_KERNEL)

    # Cards and the pie of the kernels with the most time (per kernel name).
    total = sum(k["total_duration_us"] for k in kernels)
    assert_figure(page, "kernel-total-us", total, US)
    on_tc = sum(k["total_duration_us"] for k in kernels if k["uses_tensor_core"])
    assert_figure(page, "kernel-tc-percent", 100 * on_tc / total, PERCENT)
    eligible = sum(k["total_duration_us"] for k in kernels if k["op_tensor_core_eligible"])
    assert_figure(page, "kernel-eligible-percent", 100 * eligible / total, PERCENT)
    per_kernel = summed(kernels, "kernel_name", "total_duration_us")
    assert shown_text(page, "kernel-count") == str(len(per_kernel))
    assert len(per_kernel) > MAX_SLICES + 1, "the synthetic profile should need an Other slice"
    check_pie(page, "pie-kernel", per_kernel, total)

    # Filters: by kernel name, by op name, and both.
    by_kernel = page.get_by_test_id("kernel-filter")
    by_op = page.get_by_test_id("kernel-filter-op")
    by_kernel.fill(synthetic.TC_KERNEL.upper())
    tc_rows = [k for k in kernels if k["kernel_name"] == synthetic.TC_KERNEL]
    assert len(tc_rows) == 2, "one kernel launched with two grid sizes: two rows"
    expect_kernels(page, tc_rows)
    expect(page.get_by_test_id("kernel-row-count")).to_have_text(
        f"{len(tc_rows)} of {len(kernels)} rows"
    )
    expect(page.locator("[data-testid=kernel-row-uses_tensor_core] .badge")).to_have_text(
        ["yes", "yes"]
    )
    by_kernel.fill("")
    by_op.fill("matmul")
    expect_kernels(page, [k for k in kernels if "matmul" in k["op_name"].lower()])
    by_kernel.fill("sgemm")
    expect_kernels(
        page,
        [k for k in kernels if "matmul" in k["op_name"].lower() and "sgemm" in k["kernel_name"]],
    )
    by_kernel.fill("")
    by_op.fill("")
    expect_kernels(page, kernels)

    # Sorting by a dimension sorts by the number of threads or blocks it describes.
    page.get_by_test_id("kernel-sort-grid_dim").click()
    blocks = sorted(kernels, key=lambda k: -k["grid_dim"][0] * k["grid_dim"][1] * k["grid_dim"][2])
    expect_kernels(page, blocks)
    page.get_by_test_id("kernel-sort-avg_duration_us").click()
    page.get_by_test_id("kernel-sort-avg_duration_us").click()
    expect_kernels(page, sorted(kernels, key=lambda k: k["avg_duration_us"]))

    csv = check_csv_link(page, page, "csv-link", "rows")
    assert len(csv.strip().splitlines()) == 1 + len(kernels)
    assert_clean(record)


def test_kernel_stats_without_kernels_explains_why(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base, run, host = (
        synthetic_tensorboard_url,
        synthetic.NO_KERNELS_RUN,
        synthetic.NO_KERNELS_HOST,
    )
    assert KERNELS in get_json(base, "run_tools", run=run)
    _, doc = document(base, run, KERNELS)
    assert doc["rows"] == [] and doc["diagnostics"]["warnings"]
    open_view(page, base, KERNELS, run, host)
    empty = page.get_by_test_id("kernel-empty")
    expect(empty).to_be_visible()
    for warning in doc["diagnostics"]["warnings"]:
        expect(empty).to_contain_text(warning)
    expect(page.get_by_test_id("diag-warnings")).to_contain_text("CUPTI")
    expect(page.get_by_test_id("kernel-row")).to_have_count(0)
    expect(page.get_by_test_id("pie-kernel")).to_have_count(0)
    assert_clean(record)
