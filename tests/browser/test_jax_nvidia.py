"""Real JAX captures on an NVIDIA H200 (tests/data/jax_nvidia_*) in a real Chromium.

`jax_nvidia_train` is a bf16 training step whose kernels run inside a CUDA graph (no op on the
events; xspace/hlo_modules.py reads them from the module's HLO) and whose host spends 97 % of
each step building batches in Python. Its overview must say that the device waits on the host
and name the Python function, must not advise bfloat16 to a bfloat16 program, and must list
JAX op paths as device ops; its kernel table must show the ops the document holds, Hopper GEMMs
on Tensor Cores. Every page keeps a clean console and talks to 127.0.0.1 only.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.checks import assert_clean, document, row_names, shown_text
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import fixture_run, open_view
from tests.browser.support import PageRecord
from tests.fixtures import DATA_DIR

pytestmark = pytest.mark.browser

FIXTURES = ("jax_nvidia_train", "jax_nvidia_plain")


def _copy(logdir: Path) -> None:
    for name in FIXTURES:
        shutil.copytree(DATA_DIR / name, logdir / name)


@pytest.fixture(scope="module")
def nvidia_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with own_tensorboard(tmp_path_factory, "jax_nvidia", _copy) as base:
        yield base


def test_overview_says_the_device_waits_on_the_host_and_names_the_python(
    page: Page, nvidia_url: str, record: PageRecord
) -> None:
    run = fixture_run(nvidia_url, "jax_nvidia_train")
    host, doc = document(nvidia_url, run, "overview_page")
    keys = [a["key"] for a in doc["advice"]]
    assert "host_bound" in keys and "mixed_precision" not in keys

    open_view(page, nvidia_url, "overview_page", run, host)
    assert "the device waits on the host" in shown_text(page, "overview-verdict-statement")
    shown_keys = row_names(page, "recommendation", "key")
    assert shown_keys == keys
    host_bound = page.locator('[data-testid="recommendation"][data-key="host_bound"]')
    assert "batch (capture_nvidia.py:101)" in (host_bound.text_content() or "")
    assert shown_text(page, "overview-device-type") == "NVIDIA H200"
    ops: list[dict[str, Any]] = doc["top_device_ops"]
    shown_ops = row_names(page, "top-op-row")
    assert shown_ops == [op["name"] for op in ops]
    assert "jit(train_step)/jvp()/dot_general" in shown_ops
    assert not [name for name in shown_ops if "XlaModule" in name]
    assert_clean(record)


@pytest.mark.parametrize("scenario", FIXTURES)
def test_kernel_table_shows_the_hlo_ops_of_graph_kernels(
    page: Page, nvidia_url: str, record: PageRecord, scenario: str
) -> None:
    run = fixture_run(nvidia_url, scenario)
    host, doc = document(nvidia_url, run, "kernel_stats")
    rows: list[dict[str, Any]] = doc["rows"][:100]
    assert rows and not any("XlaModule" in r["op_name"] for r in rows)

    open_view(page, nvidia_url, "kernel_stats", run, host)
    assert row_names(page, "kernel-row", "kernelName") == [r["kernel_name"] for r in rows]
    assert row_names(page, "kernel-row") == [r["op_name"] for r in rows]
    hopper = [r for r in rows if r["kernel_name"].startswith(("nvjet_", "sm90_xmma"))]
    assert hopper and all(r["uses_tensor_core"] for r in hopper)
    assert_clean(record)
