"""Synthetic multi-host runs with known steps, for the pod viewer and ALL_HOSTS tests and bench.

Every host runs the same global steps g = 0, 1, 2, ... at g * STEP_SPACING_US on one clock
(plus the host's clock skew). A host captures the global steps [first_global, last_global) and
numbers them from `first_step_num`. A step is a `train` marker (step_num, _r=1) holding host
compute (`ops_per_step` MatMul ops over HOST_COMPUTE_US); in a slowed step the host also waits
SLOW_INPUT_US for input (`IteratorGetNext`), so its step is that much longer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.xspace_builder import Uint, XSpaceBuilder

US = 1_000_000  # ps
STEP_SPACING_US = 2500
HOST_COMPUTE_US = 600
STEP_US = 1000
SLOW_INPUT_US = 800
BASE_NS = 1_790_000_000_000_000_000


@dataclass(frozen=True)
class HostPlan:
    name: str
    first_global: int
    last_global: int  # exclusive
    first_step_num: int
    clock_skew_us: int = 0
    slow_steps: frozenset[int] = field(default_factory=frozenset)  # global step indices
    relative_timestamps: bool = False  # line times relative to the capture start (gRPC)
    ops_per_step: int = 1

    def step_num(self, global_step: int) -> int:
        return self.first_step_num + global_step - self.first_global


def host_xspace(plan: HostPlan) -> bytes:
    b = XSpaceBuilder(hostnames=[plan.name])
    host = b.plane("/host:CPU")
    start_ns = BASE_NS + plan.clock_skew_us * 1000
    line_ns = start_ns
    if plan.relative_timestamps:
        line_ns = 10_000
        env = b.plane("Task Environment")
        env.plane_stat("profile_start_time", Uint(start_ns - line_ns))
    py = host.line("python", line_id=1, timestamp_ns=line_ns)
    slice_ps = HOST_COMPUTE_US * US // plan.ops_per_step
    for g in range(plan.first_global, plan.last_global):
        t = g * STEP_SPACING_US * US
        slow = g in plan.slow_steps
        duration = (STEP_US + (SLOW_INPUT_US if slow else 0)) * US
        py.event("train", t, duration, step_num=plan.step_num(g), _r=1)
        for k in range(plan.ops_per_step):
            py.event(f"dense_{k % 8}/MatMul:MatMul", t + 100 * US + k * slice_ps, slice_ps)
        if slow:
            py.event("IteratorGetNext", t + 700 * US, SLOW_INPUT_US * US)
    return b.serialize()


def write_run(session_dir: Path, plans: list[HostPlan]) -> dict[str, str]:
    """Writes `<name>.xplane.pb` per plan into `session_dir`; {host: path}."""
    session_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for plan in plans:
        path = session_dir / f"{plan.name}.xplane.pb"
        path.write_bytes(host_xspace(plan))
        paths[plan.name] = str(path)
    return paths


#: One host's file in two versions of the same size (other step numbers): a rewrite that
#: neither the size nor a restored modification time tells apart.
SAME_SIZE_VERSIONS = (HostPlan("worker", 0, 6, 0), HostPlan("worker", 0, 6, 1))


def one_host_logdir(tmp: Path) -> tuple[Path, Path]:
    """A logdir under `tmp` with run `run/s` of host `worker` (the first of
    SAME_SIZE_VERSIONS): (the logdir, the host's file)."""
    logdir = tmp / "logdir"
    paths = write_run(logdir / "run" / "plugins" / "profile" / "s", [SAME_SIZE_VERSIONS[0]])
    return logdir, Path(paths["worker"])


#: Four workers: different first step numbers, captures starting and stopping at different
#: steps, one clock 300 µs ahead, one with gRPC-style relative timestamps; worker_2 waits for
#: input in global steps 6 and 9.
FOUR_HOSTS = [
    HostPlan("worker_0", 0, 20, 100),
    HostPlan("worker_1", 2, 22, 5, clock_skew_us=300),
    HostPlan("worker_2", 1, 19, 300, slow_steps=frozenset({6, 9}), relative_timestamps=True),
    HostPlan("worker_3", 3, 24, 0),
]
#: Each host's first and last captured step are dropped as partial, so the common global steps
#: are [max(first + 1), min(last - 1)) = 4 ... 17.
FOUR_HOSTS_COMMON = range(4, 18)
FOUR_HOSTS_CHIEF = "worker_2"  # 16 kept steps: the shortest span
FOUR_HOSTS_SLOW = ("worker_2", (6, 9), "input")
