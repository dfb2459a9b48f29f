"""Profile info as a page (issue 18 item 8), in a real Chromium on real captures.

keras_fit (a CPU capture of model.fit: Keras, 4 steps, allocator and tf.data iterator events,
no GPU) and jax_gpu_attention (a JAX capture on 8 AMD GPUs, kernels on GPU:0, no tf.data).
The page shows the document's figures as tables, not JSON: every host with its producer, every
plane and line with its event count and span, and what each view needs with whether this
capture has it (kernel stats: no on the CPU capture, yes on the GPU one; tf.data: the
reverse).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import assert_clean, assert_shown_number, document
from tests.browser.conftest import captures_tensorboard
from tests.browser.pages import fixture_run, open_view
from tests.browser.support import PageRecord

pytestmark = pytest.mark.browser

VIEW = "profile_info"
LABELS = {"overview_page": "Overview", "kernel_stats": "Kernel stats",
          "memory_profile": "Memory profile", "tf_data_bottleneck_analysis": "tf.data bottlenecks",
          "pod_viewer": "Pod viewer", "trace_viewer": "Trace viewer",
          "tensorflow_stats": "TensorFlow stats", "input_pipeline_analyzer": "Input pipeline"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with captures_tensorboard(tmp_path_factory, "profile_info",
                              ("keras_fit", "jax_gpu_attention")) as url:
        yield url


def _check_page(page: Page, doc: dict[str, Any]) -> dict[str, str]:
    """The page shows the document: counts, the needs table, each host's producer, planes and
    lines. Returns {view: has-data} as shown."""
    expect(page.get_by_test_id("profile-info-view")).to_be_visible()
    expect(page.get_by_test_id("generic-view")).to_have_count(0)  # no raw JSON dump
    expect(page.get_by_test_id("profile-info-host-count")).to_have_text(str(doc["host_count"]))
    expect(page.get_by_test_id("profile-info-total-events")).to_have_text(
        str(doc["total_events"]))
    rows = page.get_by_test_id("view-needs-row")
    expect(rows).to_have_count(len(doc["views"]))
    shown: dict[str, str] = {}
    for index, need in enumerate(doc["views"]):
        row = rows.nth(index)
        expect(row).to_have_attribute("data-view", need["view"])
        expect(row.get_by_test_id("view-needs-row-view")).to_have_text(LABELS[need["view"]])
        expect(row.get_by_test_id("view-needs-row-needs")).to_have_text(need["needs"])
        expect(row.get_by_test_id("view-needs-row-found")).to_have_text(need["found"])
        expect(row.get_by_test_id("view-needs-row-offered")).to_have_text(
            "yes" if need["offered"] else "no")
        shown[need["view"]] = row.get_by_test_id("view-needs-row-has_data").inner_text()
        assert shown[need["view"]] == ("yes" if need["has_data"] else "no")
    hosts = page.get_by_test_id("profile-host")
    expect(hosts).to_have_count(len(doc["hosts"]))
    for index, host in enumerate(doc["hosts"]):
        section = hosts.nth(index)
        expect(section).to_have_attribute("data-host", host["host"])
        producer = host["producer"]
        expect(section.get_by_test_id("profile-host-framework")).to_have_text(
            producer["framework"])
        expect(section.get_by_test_id("profile-host-evidence")).to_have_text(
            f" (from {producer['evidence']})")
        versions = ", ".join(f"{k} {v}" for k, v in producer["versions"].items())
        expect(section.get_by_test_id("profile-host-versions")).to_have_text(
            versions or "not recorded in the profile")
        assert_shown_number(section.get_by_test_id("profile-host-capture-ms").inner_text(),
                            host["capture_window_ms"], 3, "capture window")
        planes = section.get_by_test_id("plane-row")
        expect(planes).to_have_count(len(host["planes"]))
        for k, plane in enumerate(host["planes"]):
            expect(planes.nth(k)).to_have_attribute("data-plane", plane["name"])
            expect(planes.nth(k).get_by_test_id("plane-row-events")).to_have_text(
                str(plane["events"]))
        lines = section.get_by_test_id("line-row")
        expect(lines).to_have_count(min(len(host["lines"]), 100))
        for k in (0, min(len(host["lines"]), 100) - 1):
            line = host["lines"][k]
            row = lines.nth(k)
            expect(row).to_have_attribute("data-line", line["line"])
            expect(row.get_by_test_id("line-row-events")).to_have_text(str(line["events"]))
            for key in ("begin_ms", "end_ms", "busy_ms"):
                assert_shown_number(row.get_by_test_id(f"line-row-{key}").inner_text(),
                                    line[key], 3, key)
    return shown


def _opened(page: Page, base: str, capture: str) -> tuple[str, str, dict[str, Any],
                                                          dict[str, str]]:
    """Opens profile info of `capture`: (run, host, document, {view: has-data as shown})."""
    run = fixture_run(base, capture)
    host, doc = document(base, run, VIEW)
    open_view(page, base, VIEW, run, host)
    return run, host, doc, _check_page(page, doc)


def test_cpu_capture(page: Page, base: str, record: PageRecord) -> None:
    _, _, doc, has = _opened(page, base, "keras_fit")
    assert has["kernel_stats"] == "no" and has["tf_data_bottleneck_analysis"] == "yes"
    assert has["memory_profile"] == "yes" and has["overview_page"] == "yes"
    needs = {n["view"]: n for n in doc["views"]}
    assert needs["kernel_stats"]["found"] == "no GPU plane"
    assert needs["overview_page"]["found"] == "4 steps (Keras step functions)"
    assert needs["memory_profile"]["found"] == "48 allocator events"  # tests/data/README: 48
    assert needs["tf_data_bottleneck_analysis"]["found"] == "50 iterator events"  # README: 50
    [vm] = doc["hosts"]
    assert vm["producer"]["framework"] == "Keras" and vm["producer"]["versions"] == {}
    assert doc["total_events"] == 3486  # tests/data/README
    assert_clean(record)


def test_gpu_capture(page: Page, base: str, record: PageRecord) -> None:
    run, host, doc, has = _opened(page, base, "jax_gpu_attention")
    assert has["kernel_stats"] == "yes" and has["tf_data_bottleneck_analysis"] == "no"
    needs = {n["view"]: n for n in doc["views"]}
    assert needs["kernel_stats"]["found"] == "150 GPU kernels on 8 GPU planes"
    assert needs["tf_data_bottleneck_analysis"]["offered"] is False
    kernels = build_kernel_count(base, run, host)
    assert kernels == 150  # the kernel stats view counts the same kernels
    [gpu] = doc["hosts"]
    assert gpu["producer"]["framework"] == "JAX"
    gpu_planes = [p for p in gpu["planes"] if p["name"].startswith("/device:GPU:")]
    assert len(gpu_planes) == 8
    assert_clean(record)


def build_kernel_count(base: str, run: str, host: str) -> int:
    """Kernel launches as the kernel stats view counts them (its rows' occurrences)."""
    _, doc = document(base, run, "kernel_stats")
    return sum(row["occurrences"] for row in doc["rows"])
