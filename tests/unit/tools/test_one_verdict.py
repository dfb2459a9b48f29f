"""One verdict per run: the overview and the input pipeline analyzer show the same bottleneck
(level and statement) on every committed real capture, so a page never says "potentially
input-bound" where the other says "not" (issue 28: steps inferred from a jitted function's
executions in a run with no input pipeline are never called input-bound, on either page)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import build_view, xplane_files


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: p.parent.parent.parent.parent.name)
def test_overview_and_input_pipeline_give_one_verdict(path: Path) -> None:
    overview = build_view("overview_page", path)["bottleneck"]
    pipeline = build_view("input_pipeline_analyzer", path)["bottleneck"]
    assert overview == pipeline


def test_a_jax_run_without_an_input_pipeline_is_not_input_bound_on_either_page() -> None:
    (path,) = [p for p in xplane_files() if "jax_nvidia_plain" in str(p)]
    for view in ("overview_page", "input_pipeline_analyzer"):
        assert build_view(view, path)["bottleneck"]["input_bound"] == "not"


# Issue 29: one verdict per page. The banner's headline says what bounds the step; the input
# level is stated only where the page calls the run input-bound, and then nothing on the page
# (its withheld advice included) says "not input-bound"; a run whose profile shows no input
# pipeline is never called input-bound, whatever the reference's level.

_SAYS_INPUT = ("highly", "moderately", "potentially")
_PAGES = ("overview_page", "input_pipeline_analyzer")
#: bound_by -> the overview category whose share it is (computation: host compute on a CPU host)
_CATEGORY_OF_BOUND = {
    "input": "input", "transfers": "device_to_device", "host": "host_compute",
    "kernel_launch": "kernel_launch", "all_others": "all_others", "output": "output",
    "collectives": "device_collectives", "compilation": "compilation",
}


def _bound_category(doc: dict[str, Any]) -> str:
    bound = doc["bottleneck"]["bound_by"]
    if bound == "computation":
        return "device_compute" if doc["has_device"] else "host_compute"
    return _CATEGORY_OF_BOUND[bound]


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: p.parent.parent.parent.parent.name)
def test_the_banner_and_the_withheld_reasons_never_contradict(path: Path) -> None:
    overview = build_view("overview_page", path)
    for view in _PAGES:
        doc = overview if view == "overview_page" else build_view(view, path)
        b = doc["bottleneck"]
        reasons = [w["reason"] for w in doc["advice_withheld"]]
        if b["stated_level"] in _SAYS_INPUT:
            assert f"{b['stated_level'].upper()} input-bound" in b["statement"]
            assert not any("not input-bound" in r for r in reasons), (view, reasons)
        else:
            for level in _SAYS_INPUT:
                assert f"{level.upper()} input-bound" not in b["statement"], view
            assert not any("potentially input-bound" in r for r in reasons), (view, reasons)
        assert "input-bound" not in b["headline"]


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: p.parent.parent.parent.parent.name)
def test_the_headline_names_what_bounds_the_step(path: Path) -> None:
    """Input where the run is highly input-bound, else the category that takes the most of
    the step time (transfers and host at 50 % or more are that category too)."""
    doc = build_view("overview_page", path)
    b = doc["bottleneck"]
    if not doc["steps"]:
        assert (b["bound_by"], b["headline"]) == ("", "")
        return
    percent = doc["categories"][_bound_category(doc)]["percent"]
    assert b["bound_percent"] == pytest.approx(percent)
    assert b["headline"].startswith("Bounded by ")
    assert b["headline"].endswith(f" ({percent:.1f} %)")
    if b["input_bound"] == "highly":
        assert b["bound_by"] == "input"
    else:
        assert percent == pytest.approx(max(c["percent"] for c in doc["categories"].values()))


def test_a_run_without_an_input_pipeline_is_never_called_input_bound() -> None:
    """No tf.data iterator and no step time waiting for input: the pages state "not", while
    on marked steps the level stays the reference's (custom_loop, two_hosts, jax_cpu_steps:
    POTENTIALLY, tests/integration/test_reference_figures.py)."""
    without = {}
    for path in xplane_files():
        doc = build_view("input_pipeline_analyzer", path)
        tf_data = any(op["category"] != "enqueue" for op in doc["input_ops"])
        if doc["steps"] and not tf_data and doc["input_percent_total"] == 0:
            without[path.parent.parent.parent.parent.name] = doc["bottleneck"]
    assert {"custom_loop", "two_hosts", "jax_cpu_steps", "jax_nvidia_device_bound",
            "jax_gpu_attention"} <= set(without)
    for name, b in without.items():
        assert b["stated_level"] == "not", name
        assert b["statement"].startswith("The program is NOT input-bound: the profile shows no "
                                         "input pipeline"), name
    assert without["custom_loop"]["input_bound"] == "potentially"  # the reference's level


def test_a_device_bound_jax_run_is_bounded_by_device_compute() -> None:
    (path,) = [p for p in xplane_files() if "jax_gpu_attention" in str(p)]
    doc = build_view("overview_page", path)
    share = doc["categories"]["device_compute"]["percent"]
    assert share > 90  # the AMD attention capture: the device computes nearly all the step
    assert doc["bottleneck"]["bound_by"] == "computation"
    assert doc["bottleneck"]["headline"] == f"Bounded by device compute ({share:.1f} %)"
    assert doc["bottleneck"]["stated_level"] == "not"
