"""Numbers that can be, tables that tell rows apart (issue 29 items 6, 7, 8), in Chromium.

- Profile info (keras_fit): every line's busy time is at most its span (busy was the sum of
  nested events' durations: 660.6 ms busy in a 245.7 ms span).
- Kernel stats on AMD (jax_gpu_conv, the ROCm tracer): registers and occupancy are unknown,
  "—" in the page and null in the document, never 0.
- TensorFlow stats on a TPU layout (synthetic, as JAX on a TPU v6 Lite writes it): the
  `copy-start` row's GB/s is "—" (bytes over the issue's near-zero time), the fusion's is
  its rate; the module column names `jit_train_step`, never the program id.
- TensorFlow stats (tfdata_slow): IDLE is off by default, table and pies; the switch puts
  it back in both; shares are then of the time with IDLE.
- Alike op names (jax_nvidia_train: `jit(train_step)/…/dot_general` rows) read differently
  in the cut table: no two distinct names show the same text.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import MISSING, PERCENT, assert_clean, assert_shown_number, document
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import fixture_run, open_view
from tests.browser.support import PageRecord
from tests.fixtures import DATA_DIR
from tests.xspace_builder import XSpaceBuilder

pytestmark = pytest.mark.browser

CAPTURES = ("keras_fit", "jax_gpu_conv", "tfdata_slow", "jax_nvidia_train")
TPU_RUN = "tpu_copy"
US = 1_000_000  # ps
FUSION = "%fusion.1 = bf16[1024,1024]{1,0} fusion(bf16[1024,1024]{1,0} %p0), kind=kLoop"
COPY_START = ("%copy-start.1 = (f32[4096,1024]{1,0:S(5)}, f32[4096,1024]{1,0}, u32[]) "
              "copy-start(f32[4096,1024]{1,0:S(5)} %p1)")
COPY_DONE = ("%copy-done.1 = f32[4096,1024]{1,0} copy-done((f32[4096,1024]{1,0:S(5)}, "
             "f32[4096,1024]{1,0}, u32[]) %copy-start.1)")
PROGRAM_ID = -5_829_104_365_772_113  # as the op's int64 stat holds it


def _tpu_layout() -> bytes:
    """One TPU core: `jit_train_step` three times; per execution a 30 µs fusion, a copy-start
    timed 2 ps on the device (16 MiB accessed) and its 965 µs copy-done. The module's name
    carries the program id as uint64, the ops' stat as int64 (negative)."""
    b = XSpaceBuilder(hostnames=["tpu-vm"])
    tpu = b.plane("/device:TPU:0", plane_id=1)
    tpu.plane_stat("device_type_string", "TPU v6 Lite")
    modules = tpu.line("XLA Modules", line_id=2)
    ops = tpu.line("XLA Ops", line_id=3)
    tpu.metadata_stats(FUSION, "fusion.1", hlo_category="loop fusion",
                       tf_op="jit(train_step)/add", program_id=PROGRAM_ID, flops=2.0e6,
                       bytes_accessed=4.0e6)
    tpu.metadata_stats(COPY_START, "copy-start.1", hlo_category="data formatting",
                       program_id=PROGRAM_ID, bytes_accessed=16.0 * 2**20)
    tpu.metadata_stats(COPY_DONE, "copy-done.1", hlo_category="data formatting",
                       program_id=PROGRAM_ID, bytes_accessed=16.0 * 2**20)
    host = b.plane("/host:CPU", plane_id=2).line("python", line_id=1)
    host.event("train", offset_ps=0, duration_ps=3000 * US)  # the views need host events
    for k in range(3):
        t0 = k * 1000 * US
        modules.event(f"jit_train_step({PROGRAM_ID % 2**64})", t0, 1000 * US, run_id=k)
        ops.event(FUSION, t0, 30 * US, display_name="fusion.1", device_duration_ps=30 * US)
        ops.event(COPY_START, t0 + 30 * US, 2, display_name="copy-start.1",
                  device_duration_ps=2)
        ops.event(COPY_DONE, t0 + 35 * US, 965 * US, display_name="copy-done.1",
                  device_duration_ps=965 * US)
    return b.serialize()


def _fill(logdir: Path) -> None:
    for capture in CAPTURES:
        shutil.copytree(DATA_DIR / capture, logdir / capture)
    session = logdir / TPU_RUN / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    (session / "tpu-vm.xplane.pb").write_bytes(_tpu_layout())


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with own_tensorboard(tmp_path_factory, "numbers", _fill) as url:
        yield url


def _number(text: str) -> float:
    return float(text.strip().replace(",", ""))


def test_busy_is_within_each_lines_span(page: Page, base: str, record: PageRecord) -> None:
    run = fixture_run(base, "keras_fit")
    host, doc = document(base, run, "profile_info")
    lines = doc["hosts"][0]["lines"]
    assert all(line["busy_ms"] <= line["end_ms"] - line["begin_ms"] + 1e-9 for line in lines)
    open_view(page, base, "profile_info", run, host)
    rows = page.get_by_test_id("line-row")
    shown = min(len(lines), 100)
    expect(rows).to_have_count(shown)
    for k in range(shown):
        row = rows.nth(k)
        begin, end, busy = (_number(row.get_by_test_id(f"line-row-{key}").inner_text())
                            for key in ("begin_ms", "end_ms", "busy_ms"))
        assert busy <= end - begin + 0.002, f"line {lines[k]['line']}: {busy} > {end} - {begin}"
        assert_shown_number(row.get_by_test_id("line-row-busy_ms").inner_text(),
                            lines[k]["busy_ms"], 3, "busy_ms")
    assert_clean(record)


def test_amd_kernels_unknown_figures_are_dashes(page: Page, base: str,
                                                record: PageRecord) -> None:
    run = fixture_run(base, "jax_gpu_conv")
    host, doc = document(base, run, "kernel_stats")
    kernels = doc["rows"]
    assert kernels
    assert all(k["registers_per_thread"] is None and k["occupancy_percent"] is None
               for k in kernels)  # the ROCm tracer writes no regs and occ_pct:0
    assert any(k["shared_memory_bytes"] for k in kernels)  # what it writes stays a number
    open_view(page, base, "kernel_stats", run, host)
    rows = page.get_by_test_id("kernel-row")
    expect(rows).to_have_count(len(kernels))
    for key in ("registers_per_thread", "occupancy_percent"):
        expect(page.get_by_test_id(f"kernel-row-{key}")).to_have_text([MISSING] * len(kernels))
    for k, kernel in enumerate(kernels):
        expect(rows.nth(k).get_by_test_id("kernel-row-shared_memory_bytes")).to_have_text(
            str(kernel["shared_memory_bytes"]))
    assert_clean(record)


def test_tpu_copy_start_has_no_bandwidth_and_ops_name_their_module(
        page: Page, base: str, record: PageRecord) -> None:
    run = fixture_run(base, TPU_RUN)
    host, doc = document(base, run, "tensorflow_stats", include_idle="false")
    by_name = {row["op_name"]: row for row in doc["rows"]}
    assert by_name["copy-start.1"]["memory_bandwidth_gb_per_s"] is None
    fusion = by_name["jit(train_step)/add"]
    assert fusion["memory_bandwidth_gb_per_s"] == pytest.approx(4.0e6 / (30 * US) * 1e3)
    assert {row["module"] for row in doc["rows"]} == {"jit_train_step"}
    open_view(page, base, "tensorflow_stats", run, host)
    start = page.locator('[data-testid=tfstats-row][data-op-name="copy-start.1"]')
    expect(start.get_by_test_id("tfstats-row-memory_bandwidth_gb_per_s")).to_have_text(MISSING)
    add = page.locator('[data-testid=tfstats-row][data-op-name="jit(train_step)/add"]')
    assert_shown_number(add.get_by_test_id("tfstats-row-memory_bandwidth_gb_per_s").inner_text(),
                        fusion["memory_bandwidth_gb_per_s"], 1, "GB/s")
    _, overview = document(base, run, "overview_page")
    assert {op["module"] for op in overview["top_device_ops"]} == {"jit_train_step"}
    start_op = next(op for op in overview["top_device_ops"] if op["name"] == "copy-start.1")
    assert start_op["memory_bandwidth_gb_per_s"] is None
    open_view(page, base, "overview_page", run, host)
    expect(page.get_by_test_id("top-op-row-module")).to_have_text(
        ["jit_train_step"] * len(overview["top_device_ops"]))
    assert_clean(record)


def test_idle_is_off_by_default_in_table_and_pies(page: Page, base: str,
                                                  record: PageRecord) -> None:
    run = fixture_run(base, "tfdata_slow")
    host, busy = document(base, run, "tensorflow_stats", include_idle="false")
    _, with_idle = document(base, run, "tensorflow_stats")  # the route's default: IDLE in
    assert with_idle["include_idle"] is True and not busy["include_idle"]
    open_view(page, base, "tensorflow_stats", run, host)
    view = page.get_by_test_id("tfstats-view")
    toggle = page.get_by_test_id("idle-toggle")
    idle_rows = page.locator("[data-testid=tfstats-row][data-op-name=IDLE]")
    idle_slices = page.locator("[data-testid=pie-slice][data-name=IDLE]")
    expect(view).to_have_attribute("data-include-idle", "false")
    expect(toggle).not_to_be_checked()
    expect(idle_rows).to_have_count(0)
    expect(idle_slices).to_have_count(0)
    expect(page.get_by_test_id("pie-idle-toggle")).to_have_count(0)  # one switch for both
    top = busy["rows"][0]
    first = page.get_by_test_id("tfstats-row").first
    expect(first).to_have_attribute("data-op-name", top["op_name"])
    assert_shown_number(first.get_by_test_id("tfstats-row-self_time_fraction").inner_text(),
                        100 * top["self_time_fraction"], PERCENT, "Self %")
    assert "include_idle=false" in (page.get_by_test_id("csv-link").get_attribute("href") or "")

    toggle.check()
    expect(view).to_have_attribute("data-include-idle", "true")
    idle = [row for row in with_idle["rows"] if row["op_name"] == "IDLE"]
    expect(idle_rows).to_have_count(len(idle))
    expect(idle_slices.first).to_be_visible()
    expect(page.get_by_test_id("tfstats-pies")).to_have_attribute("data-pie-idle", "true")
    assert "include_idle=true" in page.url
    assert_clean(record)


def test_alike_names_read_differently(page: Page, base: str, record: PageRecord) -> None:
    run = fixture_run(base, "jax_nvidia_train")
    host, doc = document(base, run, "tensorflow_stats", include_idle="false")
    dots = [row["op_name"] for row in doc["rows"] if row["op_name"].endswith("/dot_general")]
    assert len(dots) >= 3  # the rows that all read `jit(tra…_general` before
    open_view(page, base, "tensorflow_stats", run, host)
    cells = page.locator("[data-testid=tfstats-row-op_name] .middle-text")
    expect(cells).to_have_count(min(doc["num_rows"], 100))
    # Per cell: full name, the shown parts (head, then each part after an ellipsis), cut, fold.
    names = cells.evaluate_all(
        "spans => spans.map(s => [s.closest('td').title, [...s.children]"
        ".filter(c => !c.classList.contains('middle-cut')).map(c => c.textContent),"
        " s.dataset.cut === '1', s.dataset.fold === '1'])")
    assert any(cut for _, _, cut, _ in names), "no name was cut: the test shows nothing"
    shown: dict[str, str] = {}
    for full, parts, _, _ in names:
        text = "\u2026".join(parts)
        assert text not in shown or shown[text] == full, (
            f"{full!r} and {shown.get(text)!r} both read {text!r}")
        shown[text] = full
        pieces = [p for p in parts if p]
        at = 0
        for piece in pieces:  # what is shown is the name's own text, in order
            found = full.find(piece, at)
            assert found >= 0, f"{text!r} is not cut from {full!r}"
            at = found + len(piece)
    assert any(fold for *_, fold in names), "no alike names were folded"
    assert_clean(record)
