"""What the op views need from one host's profile, without its steps.

TensorFlow stats and kernel stats list ops and kernels: they need the events' nesting (self
times, eager ops) but not the step forest, step database or tf.data analysis. `profile_ops`
builds just that, once per decoded profile (kept with it, analysis/events/profile_cache.py), and the
host analysis reuses it, so a TensorFlow stats page costs decode, table, nesting and op tables,
and opening the overview afterwards adds only the steps. The kernel statistics are a result of
their own (`profile_kernel_stats`): the kernel stats page needs no op table (on an 8-GPU 2M
event capture the device op tables' self times and IDLE were three quarters of its analysis).
"""

from __future__ import annotations

from dataclasses import dataclass

from tb_profile_plugin import column_threads
from tb_profile_plugin.analysis.events.profile_cache import (
    per_profile,
    profile_nested,
    within_build,
)
from tb_profile_plugin.analysis.ops.kernel_stats import KernelStats, build_kernel_stats
from tb_profile_plugin.analysis.ops.op_metrics import OpMetrics, build_op_tables
from tb_profile_plugin.xspace.model import Profile


@dataclass(frozen=True)
class OpAnalysis:
    ops: OpMetrics  # compute precision 0: it needs the steps (HostAnalysis.ops has it)
    kernels: KernelStats
    has_device: bool


def _build_kernel_stats(profile: Profile) -> KernelStats:
    return build_kernel_stats(profile_nested(profile).table)


#: The kernel statistics of `profile`.
profile_kernel_stats = per_profile(_build_kernel_stats)


def _build_ops(profile: Profile) -> OpAnalysis:
    nested = profile_nested(profile)
    table = nested.table
    # The kernel statistics on a second thread while this one builds the op tables (the
    # TensorFlow stats page; up to `column_threads.BESIDE_MAX_WORK` events).
    _ = table.canonical  # (read by both: built first, once)
    with column_threads.beside(lambda: within_build(lambda: profile_kernel_stats(profile)),
                               len(table)):
        tables = build_op_tables(table, nested.nesting.parent)
    return OpAnalysis(tables, profile_kernel_stats(profile), bool(table.on_device.any()))


#: The op tables and kernel statistics of `profile`.
profile_ops = per_profile(_build_ops)
