"""One verdict per run: the overview and the input pipeline analyzer show the same bottleneck
(level and statement) on every committed real capture, so a page never says "potentially
input-bound" where the other says "not" (issue 28: steps inferred from a jitted function's
executions in a run with no input pipeline are never called input-bound, on either page)."""

from __future__ import annotations

from pathlib import Path

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
