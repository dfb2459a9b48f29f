"""Pages never contradict themselves (issue 29): one clock, one step table, readable threads.

- *One clock* (analysis/hosts/clock.py): on the real capture `keras_fit`, the memory profile
  page's peak (its time in ms and its step) is the trace viewer's allocation event: the
  allocation is found by what it is (its address, op and bytes in use, never by its time),
  the trace viewer's search selects it, and its details say the memory page's start time;
  the step event (`step_num`) drawn around it in the trace says the memory page's step.
- *Steps track* on the real GPU capture `jax_nvidia_train` (trace/derived.py): the bars of
  the GPU's "Steps" track are the overview's steps (same numbers, same durations in ms), and
  the device-busy track is labelled "Steps: device busy".
- *Readable thread labels* (frontend data.ts `readableLabels`): the gutter shows a host
  thread's name without its long numeric id, names several threads share numbered 1, 2, ...
  in track order; hovering says the full name, id included.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import assert_clean, document, shown_text
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import LOAD_TIMEOUT_MS, fixture_run, get_json, open_view
from tests.browser.support import PageRecord
from tests.browser.trace_page import VIEW, Hook, open_viewer, settled, wait_hook, window_json
from tests.fixtures import DATA_DIR

pytestmark = pytest.mark.browser

MEMORY = "memory_profile"
ALLOCATION = "MemoryAllocation"
GPU_CAPTURE = "jax_nvidia_train"
LONG_ID = re.compile(r"/-?\d{6,}$")


def _names(doc: dict[str, Any]) -> list[str]:
    """The window's event names (a string table, or the names themselves)."""
    ev = doc["events"]
    if "strings" in doc:
        return [doc["strings"][k] for k in ev["name"]]
    return list(ev["name"])


def _window_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    ev, names = doc["events"], _names(doc)
    keys = ("id", "pid", "tid", "start_us", "duration_us", "depth")
    return [dict(zip(keys, row, strict=True), name=name)
            for *row, name in zip(*(ev[k] for k in keys), names, strict=True)]


def _thread(doc: dict[str, Any], process: str, thread: str) -> tuple[int, int]:
    """(pid, tid) of `thread` of the process named `process` in a window answer."""
    for p in doc["processes"]:
        if p["name"] == process:
            for t in p["threads"]:
                if t["name"] == thread:
                    return p["pid"], t["tid"]
    raise AssertionError(f"no thread {thread!r} of {process!r}: {doc['processes']}")


def _find_allocation(base: str, run: str, host: str, snapshot: dict[str, Any]) -> tuple[int, int]:
    """(search index, event id) of the one allocation event with the snapshot's address, op
    and bytes in use: found by what it is, whatever time the trace gives it."""
    total = get_json(base, "trace_search", run=run, host=host, q=ALLOCATION)["total_matches"]
    assert total > 0, f"no {ALLOCATION} event in the trace"
    found = []
    for k in range(total):
        match = get_json(base, "trace_search", run=run, host=host, q=ALLOCATION,
                         index=str(k))["match"]
        stats = get_json(base, "trace_event", run=run, host=host,
                         event_id=str(match["id"]))["event"]["stats"]
        if (stats.get("addr") == snapshot["address"] and stats.get("tf_op") == snapshot["tf_op"]
                and stats.get("bytes_allocated") == snapshot["heap_bytes"]):
            found.append((k, int(match["id"])))
    assert len(found) == 1, f"{len(found)} allocation events are the memory peak: {found}"
    return found[0]


def test_memory_peak_is_at_the_trace_time_and_step_of_its_allocation(
    page: Page, tensorboard_url: str, record: PageRecord
) -> None:
    base = tensorboard_url
    run = fixture_run(base, "keras_fit")
    host, doc = document(base, run, MEMORY)
    snapshot = doc["timeline"][doc["peak_timeline_index"]]
    assert snapshot["event"] == "allocation" and snapshot["step"] is not None
    # What the memory page shows: the peak's time, and its step in the details panel.
    open_view(page, base, MEMORY, run, host)
    expect(page.get_by_test_id("memory-details")).to_have_attribute(
        "data-position", str(doc["peak_timeline_index"]))
    peak_ms = shown_text(page, "memory-peak-time")
    assert shown_text(page, "memory-detail-time") == f"{peak_ms} ms"
    step = shown_text(page, "memory-detail-step")
    assert step == str(snapshot["step"]), step
    assert shown_text(page, "memory-detail-op") == snapshot["tf_op"]

    # The same allocation in the trace viewer: its search selects it, its details say when.
    k, event_id = _find_allocation(base, run, host, snapshot)
    open_viewer(page, base, run, host)
    box = page.get_by_test_id("trace-search")
    box.fill(ALLOCATION)
    box.press("Enter")
    status = page.get_by_test_id("trace-search-status")
    expect(status).to_have_attribute("data-index", "0", timeout=LOAD_TIMEOUT_MS)
    for index in range(1, k + 1):
        page.get_by_test_id("trace-search-next").click()
        expect(status).to_have_attribute("data-index", str(index), timeout=LOAD_TIMEOUT_MS)
    h = wait_hook(page, lambda x: x["selected_id"] == event_id and settled(x), "the allocation")
    details = page.get_by_test_id("trace-details")
    expect(details).to_have_attribute("data-event-id", str(event_id))
    expect(details).to_have_attribute("data-state", "ok", timeout=LOAD_TIMEOUT_MS)
    expect(page.get_by_test_id("trace-detail-name")).to_have_text(ALLOCATION)
    expect(page.get_by_test_id("trace-detail-start-ms")).to_have_text(peak_ms)
    addr = page.locator("[data-testid=trace-stat][data-key=addr] [data-testid=trace-stat-value]")
    expect(addr).to_have_text(str(snapshot["address"]))
    # To the microsecond, in the answers the two pages drew from.
    window = window_json(base, h["loaded"]["url"])
    events = _window_events(window)
    (allocation,) = [e for e in events if e["id"] == event_id]
    assert allocation["start_us"] == pytest.approx(snapshot["time_ms"] * 1000, abs=1e-3)

    # The step the trace draws around it (the python thread's event with a step_num) is the
    # memory page's step: clicking that bar says so.
    pid, tid = _thread(window, "/host:CPU", "python")
    at = allocation["start_us"]
    holders = [e for e in events if (e["pid"], e["tid"], e["depth"]) == (pid, tid, 0)
               and e["start_us"] <= at <= e["start_us"] + e["duration_us"]]
    assert len(holders) == 1, holders
    step_event = holders[0]
    stats = get_json(base, "trace_event", run=run, host=host,
                     event_id=str(step_event["id"]))["event"]["stats"]
    assert str(stats.get("step_num")) == step, (step_event, stats)
    target = next(t for t in h["targets"] if t["id"] == step_event["id"])
    canvas = page.get_by_test_id("trace-canvas").bounding_box()
    assert canvas is not None
    left = max(target["x"], 200) + 4  # inside the track area (the gutter is 200 px)
    page.mouse.click(canvas["x"] + left, canvas["y"] + target["y"] + target["h"] / 2)
    expect(details).to_have_attribute("data-event-id", str(step_event["id"]))
    expect(details).to_have_attribute("data-state", "ok", timeout=LOAD_TIMEOUT_MS)
    step_value = page.locator(
        "[data-testid=trace-stat][data-key=step_num] [data-testid=trace-stat-value]")
    expect(step_value).to_have_text(step)
    assert_clean(record)


# -- the GPU capture ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    def fill(logdir: Path) -> None:
        shutil.copytree(DATA_DIR / GPU_CAPTURE, logdir / GPU_CAPTURE)

    with own_tensorboard(tmp_path_factory, "one_clock_gpu", fill) as base:
        yield base


def _labels(h: Hook) -> dict[str, dict[str, Any]]:
    return {label["name"]: label for label in h["thread_labels"]}


def test_gpu_steps_track_is_the_overviews_steps(
    page: Page, gpu_url: str, record: PageRecord
) -> None:
    run = fixture_run(gpu_url, GPU_CAPTURE)
    host, overview = document(gpu_url, run, "overview_page")
    steps = [(str(s["step_num"]), s["step_time_ms"]) for s in overview["steps"]]
    assert len(steps) >= 2, overview["steps"]
    open_view(page, gpu_url, "overview_page", run, host)
    expect(page.get_by_test_id("step-chart")).to_have_attribute("data-steps", str(len(steps)))

    h = open_viewer(page, gpu_url, run, host)
    window = window_json(gpu_url, h["loaded"]["url"])
    pid, tid = _thread(window, "/device:GPU:0", "Steps")
    busy = _thread(window, "/device:GPU:0", "Steps: device busy")
    bars = sorted((e for e in _window_events(window) if (e["pid"], e["tid"]) == (pid, tid)),
                  key=lambda e: e["start_us"])
    assert window["filtered_events"] == 0 or all(e["depth"] == 0 for e in bars)
    assert [e["name"] for e in bars] == [n for n, _ in steps]
    for bar, (num, ms) in zip(bars, steps, strict=True):
        assert bar["duration_us"] / 1000 == pytest.approx(ms, abs=5e-4), (num, bar, ms)
    # The bars are drawn, each as its step (the widest drawn events name their step).
    assert f"{pid}:{tid}:0" in h["drawn_row_keys"]
    drawn = {t["name"] for t in h["targets"] if t["y"] >= 0}
    assert {n for n, _ in steps} & drawn, drawn
    # Both tracks say what they are.
    labels = _labels(h)
    assert labels["Steps"]["shown"] == "Steps"
    assert labels["Steps: device busy"]["shown"] == "Steps: device busy"
    busy_bars = [e for e in _window_events(window) if (e["pid"], e["tid"]) == busy]
    assert busy_bars, "the device-busy track is empty"
    assert_clean(record)


# -- thread labels -------------------------------------------------------------------------


def expected_labels(names: list[str]) -> list[str]:
    """The rule the page follows (frontend data.ts `readableLabels`), per process."""
    bases = [LONG_ID.sub("", name) or name for name in names]
    out, seen = [], dict[str, int]()
    for base in bases:
        if bases.count(base) < 2:
            out.append(base)
        else:
            seen[base] = seen.get(base, 0) + 1
            out.append(f"{base} {seen[base]}")
    return out


def _check_labels(page: Page, h: Hook, window: dict[str, Any]) -> list[dict[str, Any]]:
    labels = _labels(h)
    checked = []
    for process in window["processes"]:
        names = [t["name"] for t in process["threads"]]
        for name, want in zip(names, expected_labels(names), strict=True):
            if name in labels:  # drawn (inside the viewport)
                label = labels[name]
                assert label["label"] == want and label["shown"] == want, label
                assert not re.search(r"\d{6,}", label["shown"]), label
                checked.append(label)
    assert checked
    return checked


def test_thread_labels_drop_long_ids_and_number_alike_threads(
    page: Page, tensorboard_url: str, gpu_url: str, record: PageRecord
) -> None:
    # keras_fit: two tf_Compute threads, two tf_data_iterator_resource threads.
    run = fixture_run(tensorboard_url, "keras_fit")
    host = get_json(tensorboard_url, "hosts", run=run, tag=VIEW)[0]
    h = open_viewer(page, tensorboard_url, run, host)
    window = window_json(tensorboard_url, h["loaded"]["url"])
    checked = _check_labels(page, h, window)
    shown = [label["shown"] for label in checked]
    assert "python" in shown and "tf_Compute 1" in shown and "tf_Compute 2" in shown, shown
    compute = next(label for label in checked if label["shown"] == "tf_Compute 1")
    assert LONG_ID.search(compute["name"]), compute
    # Hovering a label says the full name, id included.
    box = page.get_by_test_id("trace-canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 40, box["y"] + compute["y"])
    hover = wait_hook(page, lambda x: x["hover"] is not None, "the hover note")["hover"]
    assert hover["kind"] == "thread" and hover["text"].endswith(compute["name"]), hover
    expect(page.get_by_test_id("trace-hover")).to_contain_text(compute["name"])

    # jax_nvidia_train: short ids stay ("Host Threads/546"), two "python3" get numbers.
    run = fixture_run(gpu_url, GPU_CAPTURE)
    host = get_json(gpu_url, "hosts", run=run, tag=VIEW)[0]
    h = open_viewer(page, gpu_url, run, host)
    window = window_json(gpu_url, h["loaded"]["url"])
    host_threads = next(p for p in window["processes"] if p["name"] == "/host:CPU")["threads"]
    want = expected_labels([t["name"] for t in host_threads])
    assert "python3 1" in want and "python3 2" in want and "Host Threads/546" in want, want
    _check_labels(page, h, window)
    assert_clean(record)
