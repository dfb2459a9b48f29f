"""The nine step-time categories users see, their statistics, and the input-bound verdict.

Categories from EventTypes (xprof_reference.md §3.5, overview table):

    device_compute      DEVICE_COMPUTE_16 + DEVICE_COMPUTE_32
    device_to_device    DEVICE_TO_DEVICE + DEVICE_WAIT_DEVICE
    device_collectives  DEVICE_COLLECTIVES
    host_compute        HOST_COMPUTE
    kernel_launch       HOST_PREPARE
    input               HOST_WAIT_INPUT + HOST_TO_DEVICE + DEVICE_WAIT_HOST
    output              DEVICE_TO_HOST
    compilation         HOST_COMPILE
    all_others          UNKNOWN_TIME + HOST_TO_HOST (so the nine always sum to the step time)

Verdict, on totals over all steps (input % = input / step time): >= 20 % "highly" input-bound,
>= 5 % "moderately", else all-others >= 3 % "potentially", else "not"; no step time: "unknown".
Below "moderately", the statement says what bounds the step instead: transfers where
device-to-device time (XLA's copies between memories, host offload, send/recv and the waits
for them: analysis/steps/step_db.py) is `TRANSFER_BOUND_PERCENT` or more of the step time
(`transfer_bound_percent`), else the host where it computes `HOST_BOUND_PERCENT` or more with
the device idle, else the computation.

Every verdict with steps also names what bounds the step (`Verdict.bound_by`, `bound_percent`
and the page's headline, "Bounded by device compute (93.6 %)"): input where the program is
highly input-bound, transfers and the host by the rules above, else the category that takes
the most of the step time: the computation (device compute; host compute on a CPU-only host),
kernel launch, 'All others', output, collectives, compilation (`BOUNDS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.steps.step_db import EventType as T
from tb_profile_plugin.analysis.steps.step_db import StepDb

CATEGORIES: dict[str, tuple[T, ...]] = {
    "device_compute": (T.DEVICE_COMPUTE_16, T.DEVICE_COMPUTE_32),
    "device_to_device": (T.DEVICE_TO_DEVICE, T.DEVICE_WAIT_DEVICE),
    "device_collectives": (T.DEVICE_COLLECTIVES,),
    "host_compute": (T.HOST_COMPUTE,),
    "kernel_launch": (T.HOST_PREPARE,),
    "input": (T.HOST_WAIT_INPUT, T.HOST_TO_DEVICE, T.DEVICE_WAIT_HOST),
    "output": (T.DEVICE_TO_HOST,),
    "compilation": (T.HOST_COMPILE,),
    "all_others": (T.UNKNOWN_TIME, T.HOST_TO_HOST),
}
CATEGORY_LABELS = {
    "device_compute": "Device compute", "device_to_device": "Device to device",
    "device_collectives": "Device collectives", "host_compute": "Host compute",
    "kernel_launch": "Kernel launch", "input": "Input", "output": "Output",
    "compilation": "Compilation", "all_others": "All others",
}
#: A device host whose host computes this share of the step or more (the device idle meanwhile:
#: device time wins every overlap) waits on its host: `host_bound_percent`.
HOST_BOUND_PERCENT = 50.0
#: A device host whose device-to-device transfers (copies between memories and the waits for
#: them) take this share of the step or more is bounded by transfers: `transfer_bound_percent`.
TRANSFER_BOUND_PERCENT = 50.0
#: What can bound a step (`Verdict.bound_by`), in the headline's words; the category each is.
BOUNDS = {
    "input": "input", "transfers": "device-to-device transfers",
    "host": "host compute with the device idle", "computation": "device compute",
    "kernel_launch": "kernel launch", "all_others": "'All others' time",
    "output": "output (device to host)", "collectives": "device collectives",
    "compilation": "compilation",
}
_BOUND_OF_CATEGORY = {
    "input": "input", "device_to_device": "transfers", "device_compute": "computation",
    "kernel_launch": "kernel_launch", "all_others": "all_others", "output": "output",
    "device_collectives": "collectives", "compilation": "compilation",
}
HIGHLY_INPUT_BOUND_PERCENT = 20.0
MODERATELY_INPUT_BOUND_PERCENT = 5.0
ALL_OTHERS_POTENTIAL_PERCENT = 3.0
_PS_PER_MS = 1e9


def category_ps(steps: StepDb) -> dict[str, np.ndarray]:
    """Per category, the time of each step in ps."""
    return {name: steps.type_ps[:, list(types)].sum(axis=1) for name, types in CATEGORIES.items()}


@dataclass(frozen=True)
class Stats:
    avg: float
    stddev: float  # sample standard deviation (n - 1); 0 with fewer than two steps
    min: float
    max: float

    @staticmethod
    def of(values: np.ndarray) -> Stats:
        if len(values) == 0:
            return Stats(0.0, 0.0, 0.0, 0.0)
        stddev = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        return Stats(float(values.mean()), stddev, float(values.min()), float(values.max()))

    def to_json(self) -> dict[str, float]:
        return {"avg": self.avg, "stddev": self.stddev, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class Verdict:
    input_bound: str  # highly | moderately | potentially | not | unknown
    input_percent: float
    all_others_percent: float
    statement: str
    #: Device-to-device share of the step time (%): transfers and the waits for them.
    transfer_percent: float = 0.0
    #: What bounds the step (`BOUNDS`): "input" where the program is highly input-bound,
    #: "transfers", "host", "computation", "kernel_launch", "all_others", ...; "" without steps.
    bound_by: str = ""
    #: The share of the step time (%) of what bounds it.
    bound_percent: float = 0.0
    #: On a CPU-only host the computation is host compute (the headline's words).
    cpu_only: bool = False
    #: The level the pages state where it is not `input_bound` (analysis/advice/
    #: verdict_basis.py `without_input_pipeline`: a run whose profile shows no input pipeline
    #: is never called input-bound); "" where it is.
    stated: str = ""

    @property
    def stated_level(self) -> str:
        """The level the pages state: `input_bound`, unless `stated` says otherwise."""
        return self.stated or self.input_bound

    @property
    def headline(self) -> str:
        """The banner's headline, e.g. "Bounded by device compute (93.6 %)"; "" without
        steps."""
        if not self.bound_by:
            return ""
        words = ("host compute" if self.bound_by == "computation" and self.cpu_only
                 else "collectives" if self.bound_by == "collectives" and self.cpu_only
                 else BOUNDS.get(self.bound_by, self.bound_by))
        return f"Bounded by {words} ({self.bound_percent:.1f} %)"


def host_bound_percent(steps: StepDb) -> float | None:
    """The host-compute share of the step time (%) of a device host whose device waits on its
    host (at least `HOST_BOUND_PERCENT`); None otherwise."""
    total = float(steps.duration_ps.sum())
    if not steps.has_device or total <= 0:
        return None
    host = 100.0 * float(category_ps(steps)["host_compute"].sum()) / total
    return host if host >= HOST_BOUND_PERCENT else None


def transfer_bound_percent(steps: StepDb) -> float | None:
    """The device-to-device share of the step time (%) of a device host bounded by transfers
    (at least `TRANSFER_BOUND_PERCENT`); None otherwise."""
    total = float(steps.duration_ps.sum())
    if not steps.has_device or total <= 0:
        return None
    transfers = 100.0 * float(category_ps(steps)["device_to_device"].sum()) / total
    return transfers if transfers >= TRANSFER_BOUND_PERCENT else None


def _largest(steps: StepDb) -> tuple[str, float]:
    """(bound_by, share %) of the category that takes the most of the step time (ties: the
    first in `CATEGORIES`); host compute is the computation on a CPU-only host, the host on
    a device host."""
    total = float(steps.duration_ps.sum())
    shares = {k: 100.0 * float(v.sum()) / total for k, v in category_ps(steps).items()}
    name = max(shares, key=lambda k: shares[k])
    if name == "host_compute":
        return ("host" if steps.has_device else "computation"), shares[name]
    return _BOUND_OF_CATEGORY[name], shares[name]


def _bound(steps: StepDb) -> tuple[str, str, float]:
    """(bound_by, the sentence that says so, its share %) of a step not bounded by input."""
    transfers = transfer_bound_percent(steps)
    if transfers is not None:
        compute = 100.0 * float(category_ps(steps)["device_compute"].sum()) / float(
            steps.duration_ps.sum())
        return "transfers", (
            f"The step is bounded by transfers: {transfers:.1f} % of the step time is device "
            "to device (copies between memories, e.g. host offload or async copies, and the "
            f"device waiting for them), against {compute:.1f} % device compute. Focus on the "
            "transfers."), transfers
    host = host_bound_percent(steps)
    if host is not None:
        return "host", (
            f"But the device waits on the host: {host:.1f} % of the step time is host "
            "compute, with the device idle. Focus on the host's work in the step."), host
    bound_by, percent = _largest(steps)
    if bound_by == "computation":
        return bound_by, "Focus on the computation.", percent
    words = BOUNDS[bound_by]
    return bound_by, (f"{words[0].upper()}{words[1:]} takes the most of the step time "
                      f"({percent:.1f} %): focus there."), percent


def verdict(steps: StepDb) -> Verdict:
    total = float(steps.duration_ps.sum())
    if total <= 0:
        return Verdict("unknown", 0.0, 0.0,
                       "No step time was measured, so whether the program is input-bound is "
                       "unknown; see the diagnostics for how to mark steps.")
    cats = category_ps(steps)
    input_percent = 100.0 * float(cats["input"].sum()) / total
    others = 100.0 * float(cats["all_others"].sum()) / total
    transfers = 100.0 * float(cats["device_to_device"].sum()) / total
    if input_percent >= HIGHLY_INPUT_BOUND_PERCENT:
        bound_by, bound_percent = "input", input_percent
        level, text = "highly", (
            f"The program is HIGHLY input-bound: {input_percent:.1f} % of the step time is spent "
            "waiting for input. Reduce the input time first.")
    elif input_percent >= MODERATELY_INPUT_BOUND_PERCENT:
        bound_by, _, bound_percent = _bound(steps)
        level, text = "moderately", (
            f"The program is MODERATELY input-bound: {input_percent:.1f} % of the step time is "
            "spent waiting for input. Look at both the input pipeline and the computation.")
    elif others >= ALL_OTHERS_POTENTIAL_PERCENT:
        bound_by, focus, bound_percent = _bound(steps)
        level, text = "potentially", (
            f"The program is POTENTIALLY input-bound: only {input_percent:.1f} % of the step "
            f"time waits for input, but {others:.1f} % is 'All others' time (outside any "
            "recorded op, e.g. Python between ops), which may hide input work.")
        if bound_by == "transfers":
            text += " " + focus
    else:
        bound_by, focus, bound_percent = _bound(steps)
        level, text = "not", (
            f"The program is NOT input-bound: {input_percent:.1f} % of the step time waits for "
            f"input. {focus}")
    return Verdict(level, input_percent, others, text, transfers, bound_by, bound_percent,
                   not steps.has_device)


def steps_json(steps: StepDb) -> list[dict[str, object]]:
    """One row per step. Columns are converted whole (the same float64 divisions as one value
    at a time), rows only zipped: 200k steps no longer take seconds of numpy scalars."""
    cats = category_ps(steps)
    names = list(cats)
    # A category no step has (every device category of a CPU host) is one shared 0.0 per row,
    # not a float object each (24 bytes per row and category: 30 MB at 200k steps).
    columns = [(values.astype(np.float64) / _PS_PER_MS).tolist() if values.any()
               else [0.0] * len(values) for values in cats.values()]
    times_ms = (steps.duration_ps.astype(np.float64) / _PS_PER_MS).tolist()
    rows = zip(steps.step_num.tolist(), times_ms, zip(*columns, strict=True), strict=True)
    return [{"step_num": num, "step_time_ms": time_ms,
             "breakdown_ms": dict(zip(names, row, strict=True))} for num, time_ms, row in rows]


def category_stats_ms(steps: StepDb) -> dict[str, Stats]:
    return {name: Stats.of(values / _PS_PER_MS) for name, values in category_ps(steps).items()}
