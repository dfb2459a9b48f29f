"""Advice for an input-bound program, each piece checked against the profile's input pipeline.

Given only when the overview's verdict is input-bound (highly or moderately: the input share
of step time, analysis/steps/breakdown.py), and then piece by piece, each quoting its evidence:

    key                     given when the profile shows          withheld when
    jax_device_prefetch     a JAX program                         -
    tf_data_trace           no tf.data iterator events            there are iterator events
                            (TensorFlow, Keras, unknown)
    tf_data_prefetch        a pipeline whose last transformation  every pipeline ends in
                            is not a Prefetch                     Prefetch, or no events
    tf_data_parallel_map    a sequential Map or Interleave        maps run in parallel,
                                                                  none, or no events
    tf_data_parallel_reads  a file reader not below a parallel    none, or no events
                            interleave
    tf_data_bottleneck      iterator events (the tf.data view's   no events
                            slowest stage, where computed)

Pipeline shapes come from iterator names (analysis/tf_data/shape.py), so ALL_HOSTS is checked
too; the tf.data view's own verdict (`TfDataVerdict`) is quoted where the caller has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tb_profile_plugin.analysis.evidence import AdviceSet, Evidence, duration_text
from tb_profile_plugin.analysis.tf_data.shape import pipeline_shape
from tb_profile_plugin.xspace.producers import Framework

if TYPE_CHECKING:
    from tb_profile_plugin.analysis.advice.verdict_basis import TfDataVerdict

INPUT_BOUND_LEVELS = ("highly", "moderately")
NO_EVENTS = "no tf.data iterator events (Iterator::*) were recorded"


def _listed(names: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def input_share(percent: float) -> Evidence:
    return Evidence("input share of step time", f"{percent:.1f} %")


def input_advice(level: str, percent: float, framework: Framework, names: Sequence[str],
                 tf_data: TfDataVerdict | None = None) -> AdviceSet:
    """The input advice for a verdict `level` (the level the pages state: `Verdict.
    stated_level`, so the withheld reason says what the banner says) with `percent` of the
    step time waiting for input, in `framework`'s words; `names` are the profile's tf.data
    iterator names."""
    out = AdviceSet()
    if level == "potentially":  # the verdict's words: input work may hide in 'All others'
        out.withhold("input", f"input takes {percent:.1f} % of the step time, under the 5 % "
                              "that calls for input advice; the 'All others' time may hide "
                              "more (potentially input-bound: see the verdict)")
        return out
    if level not in INPUT_BOUND_LEVELS:
        if level != "unknown":
            out.withhold("input", f"input takes {percent:.1f} % of the step time: not "
                                  "input-bound (5 % or more is), so no input advice")
        return out
    share = input_share(percent)
    if framework == Framework.JAX:
        out.give("jax_device_prefetch", (
            f"Input takes {percent:.1f} % of the step time: the device waits for its next "
            "batch. Prefetch batches to the device ahead of the step: jax.device_put the next "
            "batch while the current step runs (e.g. flax.jax_utils.prefetch_to_device("
            "iterator, 2)), and let the loader prepare batches ahead on the host (grain: worker "
            "processes and a prefetch buffer; a Python generator: a background thread with a "
            "queue)."), share)
    if not names:
        for key in ("tf_data_prefetch", "tf_data_parallel_map", "tf_data_parallel_reads"):
            out.withhold(key, f"{NO_EVENTS}, so the pipeline's transformations cannot be "
                              "checked")
        if framework != Framework.JAX:
            out.give("tf_data_trace", (
                f"Input takes {percent:.1f} % of the step time, but {NO_EVENTS}, so what the "
                "input pipeline does cannot be checked. If it is a tf.data pipeline, capture "
                "with host_tracer_level=2 (the default) to record its iterators; the tf.data "
                "bottleneck analysis then names its slowest stage."),
                share, Evidence("tf.data iterator events", "none"))
        return out
    _pipeline_advice(out, percent, share, names)
    _bottleneck_pointer(out, percent, share, names, tf_data)
    return out


def _pipeline_advice(out: AdviceSet, percent: float, share: Evidence,
                     names: Sequence[str]) -> None:
    shape = pipeline_shape(names)
    lacking = shape.without_prefetch
    _checked(out, "tf_data_prefetch", share, (
        lacking, "last transformation of the pipeline",
        f"Input takes {percent:.1f} % of the step time and the tf.data pipeline ends in "
        f"{_listed(lacking)}, not in a prefetch: add .prefetch(tf.data.AUTOTUNE) as its last "
        "transformation so the next batch is prepared while the step runs."), (
        shape.last_transformations, "every tf.data pipeline already ends in prefetch"),
        "no pipeline's last transformation was recorded (only root iterator events)")
    _checked(out, "tf_data_parallel_map", share, (
        shape.sequential_maps, "sequential map",
        f"Input takes {percent:.1f} % of the step time and {_listed(shape.sequential_maps)} "
        "runs one element at a time: pass num_parallel_calls=tf.data.AUTOTUNE to that map (or "
        "interleave) so elements are prepared in parallel."), (
        shape.parallel_maps, "the pipeline's maps already run in parallel"),
        "the pipeline has no map or interleave")
    _checked(out, "tf_data_parallel_reads", share, (
        shape.serial_readers, "file reader",
        f"Input takes {percent:.1f} % of the step time and {_listed(shape.serial_readers)} "
        "reads files one at a time: read several at once with interleave(<reader>, "
        "num_parallel_calls=tf.data.AUTOTUNE) over a dataset of file names."), (
        shape.parallel_readers, "files are already read in parallel"),
        "the pipeline reads no files (no TFRecord, TextLine, ... iterator)")


def _checked(out: AdviceSet, key: str, share: Evidence,
             needed: tuple[Sequence[str], str, str], present: tuple[Sequence[str], str],
             absent: str) -> None:
    """Give `key` when the pipeline shows the names that call for it (`needed`: names, what
    they are, the text); else withhold it, quoting the names that show the fix is already
    there (`present`: names, the reason) or saying that nothing calls for it (`absent`)."""
    names, what, text = needed
    done, reason = present
    if names:
        out.give(key, text, share, Evidence(what, _listed(names)))
    elif done:
        out.withhold(key, f"{reason} ({_listed(done)})")
    else:
        out.withhold(key, absent)


def _bottleneck_pointer(out: AdviceSet, percent: float, share: Evidence, names: Sequence[str],
                        tf_data: TfDataVerdict | None) -> None:
    if tf_data is None:
        out.give("tf_data_bottleneck", (
            f"Input takes {percent:.1f} % of the step time: the tf.data bottleneck analysis "
            "names each pipeline's slowest stage and what to change there."),
            share, Evidence("tf.data iterators", f"{len(names)} recorded"))
        return
    out.give("tf_data_bottleneck", (
        f"Input takes {percent:.1f} % of the step time: the tf.data bottleneck analysis finds "
        f"{tf_data.iterator_name} the slowest stage of {tf_data.input_pipeline} (its slowest "
        f"call took {duration_text(tf_data.max_latency_us)}); see it for what to change there."),
        share, Evidence("slowest tf.data stage", f"{tf_data.iterator_name} in "
                                                 f"{tf_data.input_pipeline}"),
        Evidence("slowest pipeline call", duration_text(tf_data.max_latency_us)))
