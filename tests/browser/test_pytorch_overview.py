"""The overview of a PyTorch run shows its step time in torch-tb-profiler's categories and,
with GPU data, each GPU's utilization, est. SM efficiency and achieved occupancy, in a real
Chromium: the real CPU capture pytorch_cpu_train (DataLoader-bound) and a GPU-layout trace
from tests/kineto_builder.py (no GPU capture can be committed); a TensorFlow capture shows
neither section."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import PERCENT, assert_clean, assert_figure, document, row_names
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import fixture_run, open_view
from tests.browser.support import PageRecord
from tests.fixtures import DATA_DIR
from tests.kineto_builder import gpu_training_step_trace

pytestmark = pytest.mark.browser

OVERVIEW = "overview_page"
ROLES = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec",
         "other"]


def _fill(logdir: Path) -> None:
    shutil.copytree(DATA_DIR / "pytorch_cpu_train", logdir / "pytorch_cpu_train")
    shutil.copytree(DATA_DIR / "custom_loop", logdir / "custom_loop")
    gpu_training_step_trace().write(
        logdir / "synthetic_gpu" / "worker0.1700000000000.pt.trace.json")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with own_tensorboard(tmp_path_factory, "pytorch_overview", _fill) as url:
        yield url


def test_cpu_run_shows_the_pytorch_breakdown(page: Page, base: str,
                                             record: PageRecord) -> None:
    run = "pytorch_cpu_train/run0"
    host, doc = document(base, run, OVERVIEW)
    root = open_view(page, base, OVERVIEW, run, host)
    assert row_names(root, "pytorch-breakdown-row", "category") == ROLES
    for key in ("dataloader", "cpu_exec", "other"):
        assert_figure(root, f"pytorch-breakdown-percent-{key}",
                      doc["pytorch_breakdown"][key]["percent"], PERCENT)
    assert doc["pytorch_breakdown"]["dataloader"]["percent"] > 80
    expect(root.get_by_test_id("gpu-metrics-section")).to_have_count(0)  # CPU only
    assert_clean(record)


def test_gpu_run_shows_each_gpu(page: Page, base: str, record: PageRecord) -> None:
    host, doc = document(base, "synthetic_gpu", OVERVIEW)
    root = open_view(page, base, OVERVIEW, "synthetic_gpu", host)
    (gpu,) = doc["gpu_metrics"]
    row = root.get_by_test_id("gpu-metrics-row")
    expect(row).to_have_attribute("data-device", "/device:GPU:0")
    assert_figure(root, "gpu-metrics-utilization", gpu["gpu_utilization_percent"], PERCENT)
    assert_figure(root, "gpu-metrics-sm-efficiency", gpu["est_sm_efficiency_percent"], PERCENT)
    assert_figure(root, "gpu-metrics-occupancy", gpu["est_achieved_occupancy_percent"], PERCENT)
    assert_figure(root, "pytorch-breakdown-percent-kernel",
                  doc["pytorch_breakdown"]["kernel"]["percent"], PERCENT)
    assert_clean(record)


def test_tensorflow_run_has_no_pytorch_sections(page: Page, base: str,
                                                record: PageRecord) -> None:
    run = fixture_run(base, "custom_loop")
    root = open_view(page, base, OVERVIEW, run)
    expect(root.get_by_test_id("category-section")).to_be_visible()
    expect(root.get_by_test_id("pytorch-breakdown-section")).to_have_count(0)
    assert_clean(record)
