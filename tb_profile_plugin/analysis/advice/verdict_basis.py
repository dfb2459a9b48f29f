"""What each input-bound verdict measures, in words, and how it relates to the other view's.

Two views judge whether a run is input-bound, by different measures, and can disagree:

    overview_page (and input_pipeline_analyzer)   share of the step time spent waiting for
        input: host-side IteratorGetNext, host-to-device copies, the device waiting for the
        host (analysis/steps/breakdown.py: >= 20 % highly, >= 5 % moderately input-bound).
    tf_data_bottleneck_analysis   latency of each input pipeline call
        (analysis/tf_data/bottlenecks.py): input-bound when a host pipeline's slowest root
        call took more than 50 µs.

A prefetching pipeline can take milliseconds per call on a background thread while the step
never waits for it (tf.data says input-bound, the overview does not); a step can wait on a
pipeline whose calls were not captured (the reverse). So each document carries
`verdict_basis`, one short text saying what its verdict measures with this run's figures and
what the other view says, and `verdict_other_view` naming the other view and whether the two
verdicts agree (docs/api.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tb_profile_plugin.analysis.hosts.host_analysis import HostAnalysis
from tb_profile_plugin.analysis.steps.breakdown import (
    HIGHLY_INPUT_BOUND_PERCENT,
    MODERATELY_INPUT_BOUND_PERCENT,
    Verdict,
    verdict,
)
from tb_profile_plugin.analysis.steps.execution_steps import RULE as EXECUTION_RULE
from tb_profile_plugin.analysis.tf_data.bottlenecks import (
    analyze_tf_data,
    is_input_bound,
    slowest_host_pipeline,
)
from tb_profile_plugin.xspace.model import Profile

OVERVIEW = "overview_page"
TF_DATA = "tf_data_bottleneck_analysis"
_INPUT_BOUND_LEVELS = ("highly", "moderately")


@dataclass(frozen=True)
class TfDataVerdict:
    """The tf.data view's verdict on a host pipeline: its slowest root call and stage."""

    is_input_bound: bool
    host: str
    input_pipeline: str
    max_latency_us: float
    iterator_name: str


def tf_data_verdict(host: str, profile: Profile) -> TfDataVerdict | None:
    """The tf.data view's verdict on one host (analysis/tf_data/bottlenecks.py, memoised per
    profile); None when no host pipeline call was captured."""
    slowest = slowest_host_pipeline(analyze_tf_data(profile))
    if slowest is None or slowest.bottleneck is None:
        return None
    return TfDataVerdict(is_input_bound(slowest), host, slowest.pipeline.name,
                         slowest.max_latency_ps / 1e6, slowest.bottleneck.name)


def without_input_pipeline(v: Verdict, has_tf_data: bool, root_rule: str) -> Verdict:
    """A run whose profile shows no input pipeline is never called input-bound: where the
    level is "potentially" (little input time, much 'All others' time that "may hide input
    work"), no tf.data iterator event was recorded and no step time waits for input (no
    IteratorGetNext, infeed or host-to-device copy), the pages state "not" (`stated`) and say
    why. On steps the profile marks the level stays the reference's (xprof 2.24.2 calls
    custom_loop, two_hosts and jax_cpu_steps POTENTIALLY input-bound;
    tests/integration/test_reference_figures.py), only the pages' words change; on steps
    inferred from a jitted function's executions (`root_rule` "executions"), where the
    reference finds no steps and gives no verdict, the level itself becomes "not". Other
    levels, and runs with an input pipeline, as they are."""
    if v.input_bound != "potentially" or has_tf_data or v.input_percent > 0:
        return v
    statement = (
        "The program is NOT input-bound: the profile shows no input pipeline in its steps (no "
        "tf.data iterator events, and no step time waits for input or copies to the device). "
        f"{v.all_others_percent:.1f} % of the step time is 'All others' (outside any recorded "
        "op): see the advice for what it is.")
    if root_rule == EXECUTION_RULE:
        return replace(v, input_bound="not", statement=statement)
    return replace(v, stated="not", statement=statement)


def steps_verdict(analysis: HostAnalysis) -> Verdict:
    """The one verdict on `analysis`'s steps that every page shows (the overview and the input
    pipeline analyzer read it here, so they never say two things): the breakdown's verdict
    (analysis/steps/breakdown.py), with `without_input_pipeline` applied."""
    return without_input_pipeline(verdict(analysis.steps), analysis.has_tf_data,
                                  analysis.root_rule)


def bottleneck_json(v: Verdict) -> dict[str, Any]:
    """The documents' `bottleneck` (docs/api.md): the reference's level (`input_bound`), the
    level the page states (`stated_level`: never input-bound without an input pipeline), the
    statement, and what bounds the step (`bound_by`, `bound_percent`, the banner's
    `headline`, e.g. "Bounded by device compute (93.6 %)"; "" and 0 without steps)."""
    return {"input_bound": v.input_bound, "stated_level": v.stated_level,
            "statement": v.statement, "headline": v.headline, "bound_by": v.bound_by,
            "bound_percent": v.bound_percent}


def overview_input_bound(level: str) -> bool | None:
    """The overview's verdict as yes/no: highly and moderately are input-bound; potentially
    (little input time, much unexplained time) and not are not; unknown (no steps) is None."""
    if level == "unknown":
        return None
    return level in _INPUT_BOUND_LEVELS


def _steps(num_steps: int) -> str:
    return f"{num_steps} step" if num_steps == 1 else f"{num_steps} steps"


def _tf_data_measure(t: TfDataVerdict) -> str:
    return (f"the slowest call of {t.input_pipeline} on {t.host} took {t.max_latency_us:.1f} "
            f"µs (over 50 µs is slow); its slowest stage is {t.iterator_name}")


def _agrees(a: bool | None, b: bool | None) -> bool | None:
    return None if a is None or b is None else a == b


_OVERVIEW_MEASURE = ("the share of step time spent waiting for input (host-side "
                     "IteratorGetNext, host-to-device copies, the device waiting for the host)")
#: The same measure in PyTorch's terms (analysis/pytorch/: the DataLoader's `__next__`).
_PYTORCH_OVERVIEW_MEASURE = ("the share of step time spent waiting for input (the DataLoader's "
                             "__next__ in each step, host-to-device copies)")
_TF_DATA_MEASURE = "the latency of each input pipeline call"


def overview_basis(v: Verdict, num_steps: int, has_tf_data: bool,
                   tf_data: TfDataVerdict | None,
                   pytorch: bool = False) -> tuple[str, dict[str, Any] | None]:
    """`verdict_basis` and `verdict_other_view` of the overview. `tf_data` is the tf.data
    view's verdict where it was computed (one host with a host pipeline call), else None;
    without tf.data events there is no other view (None). `pytorch`: the measure is named in
    PyTorch's terms."""
    ours = overview_input_bound(v.input_bound)
    measure = _PYTORCH_OVERVIEW_MEASURE if pytorch else _OVERVIEW_MEASURE
    if ours is None:
        text = f"Measured as {measure}, but no steps were found, so none was measured."
    else:
        text = (f"Measured as {measure}: {v.input_percent:.1f} % over "
                f"{_steps(num_steps)}; {MODERATELY_INPUT_BOUND_PERCENT:g} % or more is "
                f"input-bound, {HIGHLY_INPUT_BOUND_PERCENT:g} % or more highly.")
    if not has_tf_data:
        return text, None
    theirs = None if tf_data is None else tf_data.is_input_bound
    agrees = _agrees(ours, theirs)
    text += f" The tf.data bottleneck analysis measures {_TF_DATA_MEASURE} instead"
    if tf_data is None:
        text += " (over 50 µs is slow); see it for this run's pipelines."
    else:
        says = ("agrees" if agrees else "calls the run input-bound" if theirs
                else "does not call the run input-bound")
        text += f" and {says}: {_tf_data_measure(tf_data)}."
    return text, {"view": TF_DATA, "input_bound": theirs, "agrees": agrees}


def tf_data_basis(t: TfDataVerdict | None, overview: Verdict, num_steps: int
                  ) -> tuple[str, dict[str, Any]]:
    """`verdict_basis` and `verdict_other_view` of the tf.data view; `overview` is the
    overview's verdict on the same hosts, over its `num_steps` steps."""
    theirs = overview_input_bound(overview.input_bound)
    if t is None:
        text = (f"Measured as {_TF_DATA_MEASURE}, but no host pipeline call was captured, so "
                "this view gives no verdict.")
    else:
        ours = "Input-bound" if t.is_input_bound else "Not input-bound"
        text = (f"Measured as {_TF_DATA_MEASURE}: {_tf_data_measure(t)}. {ours} by this "
                "measure.")
    text += f" The overview measures {_OVERVIEW_MEASURE} instead"
    if theirs is None:
        text += ", but found no steps."
    else:
        level = "input-bound" if theirs else "not input-bound"
        text += (f": {overview.input_percent:.1f} % over {_steps(num_steps)}, so it calls "
                 f"the run {level} ({MODERATELY_INPUT_BOUND_PERCENT:g} % or more is "
                 "input-bound).")
    agrees = _agrees(None if t is None else t.is_input_bound, theirs)
    return text, {"view": OVERVIEW, "input_bound": theirs, "agrees": agrees}
