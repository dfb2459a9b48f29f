"""GPU utilization, estimated SM efficiency and achieved occupancy, as torch-tb-profiler
defined them, per GPU, over the steps (or the whole capture where it has no step).

- GPU utilization: the time some kernel runs on the GPU, over the window's time.
- Est. SM efficiency: each kernel's time weighted by min(blocks / SMs, 1) (a kernel of fewer
  blocks than the GPU has SMs leaves SMs idle), summed, over the window's time. Unknown
  (None) without the GPU's SM count or the kernels' grids.
- Achieved occupancy: the mean of the kernels' `est. achieved occupancy %` weighted by their
  time; unknown where no kernel has one.

Kernel time counts only inside the window (the steps: a kernel running past its step's end
counts up to it). Collectives, copies and memsets are no kernels here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.pytorch.coverage import Coverage


@dataclass(frozen=True)
class GpuMetrics:
    device: str  # the GPU plane's name (`/device:GPU:0`)
    kernels: int  # kernels inside the window
    window_ps: int
    busy_ps: int  # union of kernel time inside the window
    utilization_percent: float
    sm_efficiency_percent: float | None
    achieved_occupancy_percent: float | None
    num_sms: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "device": self.device, "kernels": self.kernels,
            "window_ms": self.window_ps / 1e9, "busy_ms": self.busy_ps / 1e9,
            "gpu_utilization_percent": self.utilization_percent,
            "est_sm_efficiency_percent": self.sm_efficiency_percent,
            "est_achieved_occupancy_percent": self.achieved_occupancy_percent,
            "num_sms": self.num_sms,
        }


def gpu_metrics(device: str, starts: np.ndarray, ends: np.ndarray, blocks: np.ndarray,
                occupancy: np.ndarray, num_sms: int | None, window_begin: np.ndarray,
                window_end: np.ndarray) -> GpuMetrics:
    """One GPU's figures. Per kernel: `starts`, `ends` (ps), `blocks` (grid size, 0 where
    unknown), `occupancy` (%, NaN where unknown); the window: disjoint [begin, end) spans."""
    window_begin = np.asarray(window_begin, np.int64)
    window_end = np.asarray(window_end, np.int64)
    window_ps = int(np.sum(window_end - window_begin))
    # Each kernel's time inside the window (the windows are disjoint: their coverage).
    inside = Coverage(window_begin, window_end).within(starts, ends)
    counted = inside > 0
    busy = int(Coverage(starts, ends).within(window_begin, window_end).sum())
    utilization = 100.0 * busy / window_ps if window_ps else 0.0
    sm_eff: float | None = None
    known = counted & (blocks > 0)
    if num_sms and window_ps and known.any() and known.sum() == counted.sum():
        weight = np.minimum(blocks[known].astype(np.float64) / num_sms, 1.0)
        sm_eff = 100.0 * float(np.sum(weight * inside[known])) / window_ps
    occ: float | None = None
    has_occ = counted & ~np.isnan(occupancy)
    if has_occ.any():
        time = inside[has_occ].astype(np.float64)
        occ = float(np.sum(occupancy[has_occ] * time) / np.sum(time))
    return GpuMetrics(device, int(counted.sum()), window_ps, busy, utilization, sm_eff, occ,
                      num_sms)
