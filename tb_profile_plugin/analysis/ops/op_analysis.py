"""What the op views need from one host's profile, without its steps.

TensorFlow stats and kernel stats list ops and kernels: they need the events' nesting (self
times, eager ops) but not the step forest, step database or tf.data analysis. `profile_ops`
builds just that, once per decoded profile (kept with it, analysis/events/profile_cache.py), and the
host analysis reuses it, so a TensorFlow stats page costs decode, table, nesting and op tables,
and opening the overview afterwards adds only the steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from tb_profile_plugin.analysis.events.profile_cache import per_profile, profile_nested
from tb_profile_plugin.analysis.ops.kernel_stats import KernelStats, build_kernel_stats
from tb_profile_plugin.analysis.ops.op_metrics import OpMetrics, build_op_tables
from tb_profile_plugin.xspace.model import Profile


@dataclass(frozen=True)
class OpAnalysis:
    ops: OpMetrics  # compute precision 0: it needs the steps (HostAnalysis.ops has it)
    kernels: KernelStats
    has_device: bool


def _build_ops(profile: Profile) -> OpAnalysis:
    nested = profile_nested(profile)
    table = nested.table
    return OpAnalysis(build_op_tables(table, nested.nesting.parent), build_kernel_stats(table),
                      bool(table.on_device.any()))


#: The op tables and kernel statistics of `profile`.
profile_ops = per_profile(_build_ops)
