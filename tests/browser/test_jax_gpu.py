"""Real JAX GPU captures and the TF 2.4 GPU layout in a real Chromium, checked against the JSON.

The two committed JAX captures (tests/data/jax_gpu_conv: 8 MI300X GPUs, jax_gpu_attention:
one MI355X; see tests/data/README.md) name their ops only in JAX's stats (`name`, `hlo_op`,
`hlo_module`), never in `tf_op`. On them the overview's top device ops, the TensorFlow stats
table and the kernel table must show the JAX op paths (`jit(...)/...`) the documents hold,
never "XlaModule", with the HLO op beside; the overview names the AMD GPU model; the trace
draws one "XLA Modules" track per GPU. The synthetic TF 2.4 profile (tests/browser/
synthetic.py), whose producer wrote its own Steps line on every GPU, must draw exactly one
Steps track per GPU. Every page keeps a clean console and talks to 127.0.0.1 only.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser import synthetic
from tests.browser.checks import MISSING, assert_clean, document, row_names, shown_text
from tests.browser.conftest import own_tensorboard
from tests.browser.pages import first_host, fixture_run, open_view
from tests.browser.support import PageRecord
from tests.browser.trace_page import VIEW as TRACE
from tests.browser.trace_page import open_viewer, window_json
from tests.fixtures import DATA_DIR

pytestmark = pytest.mark.browser

JAX_GPU_FIXTURES = ("jax_gpu_conv", "jax_gpu_attention")
# What the run environment must say of each capture's GPUs (plane stats; see the JSON test).
DEVICE_TYPES = {"jax_gpu_conv": "AMD GPU - gfx942", "jax_gpu_attention": "AMD GPU - gfx950"}
JAX_OP = "jit("  # every JAX op path starts with its jitted function
XLA_MODULE_OP = "XlaModule"  # what a tf_op-only reading would show for every kernel
PAGE_ROWS = 100


def _copy_jax_gpu(logdir: Path) -> None:
    for name in JAX_GPU_FIXTURES:
        shutil.copytree(DATA_DIR / name, logdir / name)


@pytest.fixture(scope="module")
def jax_gpu_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a real TensorBoard on copies of the two real JAX GPU captures."""
    with own_tensorboard(tmp_path_factory, "jax_gpu", _copy_jax_gpu) as base:
        yield base


def _cell_texts(page: Page, testid: str) -> list[str]:
    texts: list[str] = page.get_by_test_id(testid).all_text_contents()
    return [text.strip() for text in texts]


def _shown(value: str) -> str:
    return value or MISSING


def _no_xla_module_op(names: list[str]) -> None:
    assert not [name for name in names if name.startswith(XLA_MODULE_OP)], names


@pytest.mark.parametrize("scenario", JAX_GPU_FIXTURES)
def test_overview_top_device_ops_are_jax_ops_with_their_hlo_ops(
    page: Page, jax_gpu_url: str, record: PageRecord, scenario: str
) -> None:
    run = fixture_run(jax_gpu_url, scenario)
    host, doc = document(jax_gpu_url, run, "overview_page")
    ops: list[dict[str, Any]] = doc["top_device_ops"]
    assert ops and ops[0]["name"].startswith(JAX_OP), ops[:1]

    open_view(page, jax_gpu_url, "overview_page", run, host)
    expect(page.get_by_test_id("top-ops")).to_have_attribute("data-kind", "device")
    shown = row_names(page, "top-op-row")
    assert shown == [op["name"] for op in ops]
    _no_xla_module_op(shown)
    assert _cell_texts(page, "top-op-row-hlo_op") == [_shown(op.get("hlo_op", "")) for op in ops]
    assert _cell_texts(page, "top-op-row-module") == [_shown(op.get("module", "")) for op in ops]
    assert shown_text(page, "overview-device-type") == DEVICE_TYPES[scenario]
    assert_clean(record)


@pytest.mark.parametrize("scenario", JAX_GPU_FIXTURES)
def test_tensorflow_stats_table_lists_jax_device_ops(
    page: Page, jax_gpu_url: str, record: PageRecord, scenario: str
) -> None:
    run = fixture_run(jax_gpu_url, scenario)
    # The page starts without IDLE (its one IDLE switch is off: issue 29 item 8).
    host, doc = document(jax_gpu_url, run, "tensorflow_stats", include_idle="false")
    rows: list[dict[str, Any]] = doc["rows"][:PAGE_ROWS]
    device = [row for row in rows if row["host_or_device"] == "Device" and row["op_name"] != "IDLE"]
    # The top device op is a JAX op path (the rest may be copies and argument transfers).
    assert device and device[0]["op_name"].startswith(JAX_OP), device[:1]

    open_view(page, jax_gpu_url, "tensorflow_stats", run, host)
    shown = row_names(page, "tfstats-row")
    assert shown == [row["op_name"] for row in rows]
    _no_xla_module_op(shown)
    assert _cell_texts(page, "tfstats-row-hlo_op") == [
        _shown(row.get("hlo_op", "")) for row in rows
    ]
    assert_clean(record)


@pytest.mark.parametrize("scenario", JAX_GPU_FIXTURES)
def test_kernel_table_names_the_jax_op_and_hlo_op_of_each_kernel(
    page: Page, jax_gpu_url: str, record: PageRecord, scenario: str
) -> None:
    run = fixture_run(jax_gpu_url, scenario)
    host, doc = document(jax_gpu_url, run, "kernel_stats")
    rows: list[dict[str, Any]] = doc["rows"][:PAGE_ROWS]
    assert rows and rows[0]["op_name"].startswith(JAX_OP), rows[:1]

    open_view(page, jax_gpu_url, "kernel_stats", run, host)
    assert row_names(page, "kernel-row", "kernelName") == [row["kernel_name"] for row in rows]
    shown_ops = row_names(page, "kernel-row")
    assert shown_ops == [row["op_name"] for row in rows]
    _no_xla_module_op(shown_ops)
    assert _cell_texts(page, "kernel-row-op_name") == [_shown(row["op_name"]) for row in rows]
    assert _cell_texts(page, "kernel-row-hlo_op") == [_shown(row["hlo_op"]) for row in rows]
    assert_clean(record)


def _gpu_tracks(doc: dict[str, Any]) -> dict[int, list[tuple[int, str]]]:
    """(tid, name) of every track of every GPU process of a trace window, by pid."""
    return {
        process["pid"]: [(thread["tid"], thread["name"]) for thread in process["threads"]]
        for process in doc["processes"]
        if process["name"].startswith("/device:GPU:")
    }


def _tids_named(tracks: list[tuple[int, str]], name: str) -> list[int]:
    return [tid for tid, track in tracks if track == name]


def test_trace_draws_one_xla_modules_track_per_jax_gpu(
    page: Page, jax_gpu_url: str, record: PageRecord
) -> None:
    run = fixture_run(jax_gpu_url, "jax_gpu_conv")
    host = first_host(jax_gpu_url, run, TRACE)
    drawn = open_viewer(page, jax_gpu_url, run, host)
    gpus = _gpu_tracks(window_json(jax_gpu_url, drawn["loaded"]["url"]))
    assert len(gpus) == 8
    for tracks in gpus.values():
        assert len(_tids_named(tracks, "XLA Modules")) == 1, tracks
        assert len(_tids_named(tracks, "Steps")) <= 1, tracks
    # The first GPU's module track is at the top of the page: it is drawn, at depth 0.
    first = min(gpus)
    module_tid = _tids_named(gpus[first], "XLA Modules")[0]
    assert f"{first}:{module_tid}:0" in drawn["drawn_row_keys"]
    assert_clean(record)


def test_trace_draws_one_steps_track_per_gpu_on_the_tf24_layout(
    page: Page, synthetic_tensorboard_url: str, record: PageRecord
) -> None:
    base = synthetic_tensorboard_url
    drawn = open_viewer(page, base, synthetic.TF24_RUN, synthetic.TF24_HOST)
    gpus = _gpu_tracks(window_json(base, drawn["loaded"]["url"]))
    assert len(gpus) == 2
    for pid, tracks in gpus.items():
        steps = _tids_named(tracks, "Steps")
        assert len(steps) == 1, tracks
        assert f"{pid}:{steps[0]}:0" in drawn["drawn_row_keys"]
    assert_clean(record)


@pytest.mark.parametrize("scenario", JAX_GPU_FIXTURES)
def test_overview_steps_are_the_jitted_function_executions_and_its_table(
    page: Page, jax_gpu_url: str, record: PageRecord, scenario: str
) -> None:
    run = fixture_run(jax_gpu_url, scenario)
    host, doc = document(jax_gpu_url, run, "overview_page")
    assert doc["step_rule"] == "executions"
    jitted: list[dict[str, Any]] = doc["jitted_functions"]
    assert jitted and doc["step_module"] == jitted[0]["module"]

    open_view(page, jax_gpu_url, "overview_page", run, host)
    assert shown_text(page, "overview-step-count") == str(len(doc["steps"]))
    assert shown_text(page, "overview-step-rule") == f"(executions of {doc['step_module']})"
    assert row_names(page, "jitted-row", "module") == [row["module"] for row in jitted]
    steps_flags = row_names(page, "jitted-row", "steps")
    assert steps_flags == [str(row["module"] == doc["step_module"]).lower() for row in jitted]
    assert _cell_texts(page, "jitted-row-calls") == [str(row["calls"]) for row in jitted]
    assert _cell_texts(page, "jitted-row-mean_ms") == [f"{row['mean_ms']:.3f}" for row in jitted]
    assert _cell_texts(page, "jitted-row-devices") == [str(row["devices"]) for row in jitted]
    expect(page.get_by_test_id("jitted-csv")).to_have_attribute(
        "href", re.compile(r"table=jitted_functions")
    )
    assert_clean(record)
