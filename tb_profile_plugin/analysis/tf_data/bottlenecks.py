"""tf.data bottleneck analysis of one host: pipelines, their slowest calls and what to fix.

`analyze_tf_data(profile)` ties the pieces together (memoised per decoded profile):
`tf_data_pipelines` finds the iterator events and their tree, `tf_data_critical_path` gives
per-execution iterator times, the critical path and the bottleneck, and `tf_data_advice`
runs the guide's checks. A pipeline's bottleneck is the bottleneck of its slowest execution
(as the reference reports it); its latency figures are over all of its root calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.profile_cache import per_profile, profile_forest
from tb_profile_plugin.analysis.evidence import AdviceSet
from tb_profile_plugin.analysis.tf_data.critical_path import (
    SLOW_CALL_PS,
    ExecutionStats,
    execution_stats,
)
from tb_profile_plugin.analysis.tf_data.guide_checks import (
    GetNextCalls,
    ends_in_prefetch,
    get_next_calls,
    pipeline_advice,
    suggestion_type,
)
from tb_profile_plugin.analysis.tf_data.pipelines import (
    IteratorInfo,
    Pipeline,
    TfDataEvents,
    find_tf_data_events,
)
from tb_profile_plugin.xspace.model import Profile


@dataclass(frozen=True)
class PipelineSummary:
    """Latency of one pipeline's root calls and the bottleneck of its slowest call."""

    pipeline: Pipeline
    min_latency_ps: int
    avg_latency_ps: float
    max_latency_ps: int
    num_calls: int
    num_slow_calls: int  # root calls slower than 50 µs
    ends_in_prefetch: bool
    bottleneck: IteratorInfo | None  # of the slowest execution
    bottleneck_self_ps: int
    bottleneck_calls: int
    suggestion_type: str
    advice: AdviceSet  # the bottleneck's, then the prefetch advice where it applies

    @property
    def suggestions(self) -> list[str]:
        return self.advice.texts()


@dataclass(frozen=True)
class HostTfData:
    events: TfDataEvents
    stats: ExecutionStats
    get_next: GetNextCalls  # per step: tf_data_advice.get_next_per_step with the host's steps
    pipelines: list[PipelineSummary]

    def iterator_of_row(self, row: int) -> IteratorInfo:
        return self.events.iterators[int(self.events.iterator_ids[self.stats.iterator[row]])]


@per_profile
def analyze_tf_data(profile: Profile) -> HostTfData:
    """The tf.data analysis of a decoded profile, from its shared event forest (iterator
    events are on host planes; the forest over every plane groups them as the steps are)."""
    forest = profile_forest(profile)
    table = forest.table
    events = find_tf_data_events(table, forest.nesting)
    stats = execution_stats(events)
    summaries = [_summary(events, stats, p) for p in events.pipelines]
    return HostTfData(events, stats, get_next_calls(table, forest), summaries)


def _summary(events: TfDataEvents, stats: ExecutionStats, pipeline: Pipeline) -> PipelineSummary:
    latency = events.duration_ps[pipeline.executions]
    root = events.iterators[pipeline.root_id]
    prefetch_ok = ends_in_prefetch(root, events.iterators)
    rows = stats.rows_of(int(pipeline.executions[0]))
    picked = rows[stats.bottleneck[rows]]
    bottleneck: IteratorInfo | None = None
    self_ps = calls = 0
    kind = "none"
    if len(picked):
        bottleneck = events.iterators[int(events.iterator_ids[stats.iterator[picked[0]]])]
        self_ps = int(stats.self_ps[picked[0]])
        calls = int(stats.num_calls[picked[0]])
        kind = suggestion_type(bottleneck)
    return PipelineSummary(
        pipeline, int(latency.min()), float(latency.mean()), int(latency.max()), len(latency),
        int((latency > SLOW_CALL_PS).sum()), prefetch_ok, bottleneck, self_ps, calls, kind,
        pipeline_advice(bottleneck, self_ps, calls, root, events.iterators))


def slowest_host_pipeline(host: HostTfData) -> PipelineSummary | None:
    """The host pipeline (not a device one) with a bottleneck whose slowest root call took
    longest: the one the view's verdict is about (input-bound when that call is slower than
    50 µs, `is_input_bound`); None when no host pipeline call was captured."""
    ranked = [s for s in host.pipelines if s.pipeline.kind == "host" and s.bottleneck is not None]
    return max(ranked, key=lambda s: s.max_latency_ps, default=None)


def is_input_bound(summary: PipelineSummary | None) -> bool:
    """The tf.data view's verdict: a host pipeline's slowest root call took more than 50 µs."""
    return summary is not None and summary.max_latency_ps > SLOW_CALL_PS


def execution_rows(host: HostTfData, execution: int) -> np.ndarray:
    """Rows of `host.stats` for one execution, in order of first start (graph node order)."""
    rows = host.stats.rows_of(execution)
    return rows[np.lexsort((host.stats.iterator[rows], host.stats.start_ps[rows]))]
