"""Everything the analysis views need from one host's profile, computed once and kept.

`analyze(profile)` builds the step database, op metrics and kernel statistics from the
profile's event forest (shared with the other analyses: analysis/events/profile_cache.py), and reads
the run environment and the program's framework (TensorFlow, Keras, JAX: xspace/producers/
`detect_framework`) from the planes. The result is memoised per decoded
profile (the store keeps decoded profiles, so a second request for any view of the same file is
served from memory).

`analyze_file(path)` is the same as a pure function of a file: it decodes the file (through the
disk cache), analyses it and returns only the `HostAnalysis`, a few small arrays and tables that
pickle cheaply, so a process pool can run it for every host of a run (analysis/hosts/host_pool.py)
while each worker holds one decoded host at a time.

On GPU hosts `core_steps` holds one step database per GPU plane (the host's events with only
that GPU's device events), for the pod viewer's per-core columns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin import column_threads, memory_release
from tb_profile_plugin.analysis.events.forest import Forest
from tb_profile_plugin.analysis.events.profile_cache import (
    per_profile,
    profile_forest,
    profile_nested,
    within_build,
)
from tb_profile_plugin.analysis.hosts.device_names import device_type_name
from tb_profile_plugin.analysis.ops.host_hotspots import HostHotspot, host_hotspots
from tb_profile_plugin.analysis.ops.jitted_functions import JittedFunction, jitted_functions
from tb_profile_plugin.analysis.ops.kernel_stats import KernelStats
from tb_profile_plugin.analysis.ops.op_analysis import profile_ops
from tb_profile_plugin.analysis.ops.op_metrics import OpMetrics, compute_precision_ps
from tb_profile_plugin.analysis.ops.tf_functions import (
    TfFunction,
    graph_execution,
    tf_functions,
)
from tb_profile_plugin.analysis.pytorch.facts import PytorchFacts, is_pytorch, pytorch_facts
from tb_profile_plugin.analysis.pytorch.op_shapes import host_op_table
from tb_profile_plugin.analysis.steps.breakdown import host_bound_percent
from tb_profile_plugin.analysis.steps.execution_steps import RULE as EXECUTION_RULE
from tb_profile_plugin.analysis.steps.profile_steps import profile_steps
from tb_profile_plugin.analysis.steps.step_db import StepDb
from tb_profile_plugin.analysis.steps.xla_executions import profile_executions
from tb_profile_plugin.analysis.tf_data.shape import tf_data_names
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import (
    Framework,
    PlaneKind,
    detect_framework,
    is_accelerator_plane,
    plane_kind,
)

#: Line timestamps below this (ns) are relative to the capture start, not since the epoch.
_RELATIVE_TIMESTAMP_NS = 10**17


@dataclass(frozen=True)
class RunEnvironment:
    hostnames: list[str]
    device_type: str  # "CPU", or the device's name (analysis/hosts/device_names.py)
    device_core_count: int  # accelerator planes (GPU, TPU, other; not CUSTOM); 0 on CPU only


@dataclass(frozen=True)
class HostAnalysis:
    steps: StepDb
    ops: OpMetrics
    environment: RunEnvironment
    # How steps were found: producer, marker, keras, loop, legacy, executions or none.
    root_rule: str
    num_groups: int
    has_device: bool
    has_tf_data: bool
    num_device_kernels: int
    kernels: KernelStats
    #: Absolute time (ns since the epoch, when the profile says) of the steps' 0 ps: lets steps
    #: of different hosts be compared in time.
    time_base_ns: int = 0
    #: GPU hosts: (GPU plane name, its step database), one per GPU plane.
    core_steps: tuple[tuple[str, StepDb], ...] = ()
    #: The program's framework (xspace/producers/ `detect_framework`) and, in words, what
    #: showed it.
    framework: Framework = Framework.UNKNOWN
    framework_evidence: str = ""
    #: Per XLA module: calls, execution times, device share, host dispatch.
    jitted: tuple[JittedFunction, ...] = ()
    #: root_rule "executions": the jitted function whose executions are the steps.
    step_module: str = ""
    #: No steps although a jitted function repeats: why its executions are no loop
    #: (analysis/steps/execution_steps.py `not_a_loop`); "" otherwise.
    not_a_loop: str = ""
    #: Evidence that TensorFlow ran ops as a graph (analysis/ops/tf_functions.py
    #: `graph_execution`): (what, count) pairs; () when none.
    graph_execution: tuple[tuple[str, int], ...] = ()
    #: Per tf.function: calls, call times, concrete functions (retracing).
    tf_functions: tuple[TfFunction, ...] = ()
    #: The tf.data iterator names (`Iterator::...`), sorted: the pipelines' shape for the
    #: overview's input advice (analysis/tf_data/shape.py).
    tf_data_names: tuple[str, ...] = ()
    #: Device hosts whose device waits on the host (breakdown.py `host_bound_percent`): the
    #: host events with the most self time per step (analysis/ops/host_hotspots.py).
    host_hotspots: tuple[HostHotspot, ...] = ()
    #: PyTorch profiles: the figures in PyTorch's terms (analysis/pytorch/facts.py); None
    #: for other frameworks.
    pytorch: PytorchFacts | None = None


@per_profile
def analyze(profile: Profile) -> HostAnalysis:
    """The analysis of a decoded profile, from its shared event forest.

    The stages free hundreds of MB of temporaries that glibc keeps in its heap, where the
    document built next (Python objects, from their own arenas) cannot reuse them: they are
    given back here, before the document, not after the request (80 MB of a 10M-event
    overview's peak; memory_release.py)."""
    table = profile_nested(profile).table
    # The canonical columns (the steps' and op tables' first need) are built on a second
    # thread while this one builds the forest: both are numpy and compiled passes over
    # every event, independent of each other (8-GPU 2M-event capture: overview 1.6-1.8 ->
    # 1.5-1.7 s); up to `column_threads.BESIDE_MAX_WORK` events.
    with column_threads.beside(lambda: table.canonical, len(table)):
        forest = profile_forest(profile)
    # Likewise the op tables and kernel statistics (which need no steps) beside the steps.
    with column_threads.beside(lambda: within_build(lambda: profile_ops(profile)),
                               len(table)):
        profile_steps(profile)
    analysis = _analyze(profile, forest)
    memory_release.release_now()
    return analysis


def analyze_file(path: str) -> HostAnalysis:
    """The analysis of one host file, keeping nothing else (a pure function for the pool).

    It goes through the same memoised stages as `analyze` (one event table and nesting shared
    by the forest and the op tables: building the forest apart made a second table and nesting
    for the op tables, 820 instead of ~600 MB on a 2.4M-event host), then breaks the
    profile's cycles so the process gives the memory back before its next host."""
    from tb_profile_plugin.xspace.store import ProfileStore

    profile = ProfileStore(max_bytes=0).open(path)
    try:
        return analyze(profile)
    finally:
        profile.derived.clear()


def time_base_ns(profile: Profile) -> int:
    """Absolute ns of the profile's 0 ps.

    Profiles captured over gRPC store line timestamps relative to the capture start; the
    `Task Environment` plane's `profile_start_time` stat then gives the absolute start.
    """
    if profile.origin_ns >= _RELATIVE_TIMESTAMP_NS:
        return profile.origin_ns
    for plane in profile.planes:
        start = plane.stat_values().get("profile_start_time") if not plane.lines else None
        if isinstance(start, int) and start > 0:
            return start + profile.origin_ns
    return profile.origin_ns


#: Which accelerator names the host when it has several kinds (GPUs first).
_KIND_ORDER = (PlaneKind.GPU, PlaneKind.TPU, PlaneKind.OTHER_DEVICE)


def _environment(profile: Profile) -> RunEnvironment:
    """Hosts, device type and device count: the accelerator planes (producers/), never a
    `/device:CUSTOM:*` trace. The type is the first plane's of the first kind present in
    `_KIND_ORDER`, named by `device_type_name`; "CPU" without accelerators."""
    devices = [p for p in profile.planes if is_accelerator_plane(p.name)]
    device_type = "CPU"
    for kind in _KIND_ORDER:
        first = next((p for p in devices if plane_kind(p.name) == kind), None)
        if first is not None:
            device_type = device_type_name(first.name, first.stat_values())
            break
    return RunEnvironment(profile.hostnames or ["localhost"], device_type, len(devices))


def _analyze(profile: Profile, forest: Forest) -> HostAnalysis:
    table = forest.table
    found = profile_steps(profile)
    steps, root_rule, every_type = found.steps, found.root_rule, found.every_type
    framework = detect_framework(profile)
    pytorch = None
    if is_pytorch(framework.framework):
        # PyTorch: the steps' breakdown is torch-tb-profiler's, by time on every thread
        # (analysis/pytorch/facts.py), in the nine categories.
        pytorch = pytorch_facts(table, steps, forest.nesting)
        steps = dataclasses.replace(steps, type_ps=pytorch.type_ps)
    executions = profile_executions(profile)
    op_analysis = profile_ops(profile)
    if root_rule == EXECUTION_RULE:  # steps without groups: every kernel is the program's
        compute16, compute32 = compute_precision_ps(table, every_type)
    else:
        compute16, compute32 = compute_precision_ps(
            table, np.where(forest.group_id >= 0, every_type, -1))
    ops = dataclasses.replace(op_analysis.ops, compute_16bit_ps=compute16,
                              compute_32bit_ps=compute32)
    if pytorch is not None:  # PyTorch's operators, not TensorFlow's `name:Type` parse
        ops = dataclasses.replace(ops, host=host_op_table(pytorch.ops))
    iterator_names = tf_data_names(table.names)
    has_tf_data = bool(iterator_names)
    has_device, on_device = found.has_device, table.on_device
    hotspots = host_hotspots(forest, steps) if host_bound_percent(steps) is not None else ()
    return HostAnalysis(
        steps=steps, ops=ops, environment=_environment(profile), root_rule=root_rule,
        num_groups=forest.num_groups, has_device=has_device, has_tf_data=has_tf_data,
        num_device_kernels=int(on_device.sum()), kernels=op_analysis.kernels,
        time_base_ns=time_base_ns(profile), core_steps=found.core_steps,
        framework=framework.framework, framework_evidence=framework.evidence,
        jitted=jitted_functions(forest, executions), step_module=found.step_module,
        not_a_loop=found.not_a_loop, graph_execution=graph_execution(forest),
        tf_functions=tf_functions(table), tf_data_names=iterator_names,
        host_hotspots=hotspots,
        pytorch=pytorch,
    )
