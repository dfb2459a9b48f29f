"""Which steps of several hosts are the same training step: the step intersection.

Hosts number their steps independently (a worker that started earlier is at a higher step
number), so steps are matched by time, as the reference does (xprof_reference.md §3.4):

1. Hosts without a device are coordinators and are left out when any host has a device;
   hosts without steps are left out too (both are reported).
2. The chief is the host whose steps span the shortest time (first begin to last end).
3. Every other host is shifted by the index offset k (its step i + k is the chief's step i)
   that maximises the summed time overlap of paired steps. Only pairs that overlap in time
   can contribute, so the pairs are found with two binary searches per chief step and the
   overlap is summed per offset with one `bincount`:

       chief  |--0--|--1--|--2--|--3--|
       other        |-5-|-6-|--7--|--8--|--9--|      k = 5 pairs 0-5, 1-6, 2-7, 3-8

   If no step of a host overlaps the chief's in time (clocks far apart), the host is aligned
   by equal step numbers when it shares some (and the alignment says so); otherwise nothing
   tells which of its steps are which, and the intersection is empty.
4. The common steps are the chief's indices every host can pair: [max begin, min end). None in
   common while every host has steps is an empty intersection.

Times are compared on one clock: each host's step begins are put on an absolute time base
(`HostAnalysis.time_base_ns`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from tb_profile_plugin.analysis.steps.step_db import StepDb


@dataclass(frozen=True)
class HostSteps:
    """What the alignment needs from one host: its steps and where its time starts."""

    steps: StepDb
    time_base_ns: int
    has_device: bool


@dataclass(frozen=True)
class Alignment:
    """The common steps: `indices[host][i]` is the row of common step i in that host's StepDb."""

    chief: str | None
    hosts: tuple[str, ...]  # aligned hosts, chief first
    coordinators: tuple[str, ...]  # hosts without a device in a run with devices
    without_steps: tuple[str, ...]
    offsets: dict[str, int]  # host -> k: its step i + k is the chief's step i
    by_time: dict[str, bool]  # False: no step overlapped the chief's in time (see module doc)
    indices: dict[str, np.ndarray] = field(default_factory=dict)
    empty_intersect: bool = False

    @property
    def num_steps(self) -> int:
        return len(self.indices[self.chief]) if self.chief is not None else 0

    def dropped(self, host: str, total: int) -> int:
        """Steps of `host` outside the intersection."""
        return total - (len(self.indices[host]) if host in self.indices else 0)


def _best_offset(chief: tuple[np.ndarray, np.ndarray], other: tuple[np.ndarray, np.ndarray]
                 ) -> tuple[int, float]:
    """(k, summed overlap in ps) maximising the overlap of chief step i with other step i + k."""
    c_begin, c_end = chief
    o_begin, o_end = other
    n_c, n_o = len(c_begin), len(o_begin)
    reach = np.maximum.accumulate(o_end)  # sorted even if steps overlap one another
    lo = np.searchsorted(reach, c_begin, side="right")
    hi = np.searchsorted(o_begin, c_end, side="left")
    counts = np.maximum(hi - lo, 0)
    if counts.sum() == 0:
        return 0, 0.0
    i = np.repeat(np.arange(n_c), counts)
    within = np.arange(len(i)) - np.repeat(np.cumsum(counts) - counts, counts)
    j = np.repeat(lo, counts) + within
    overlap = np.minimum(c_end[i], o_end[j]) - np.maximum(c_begin[i], o_begin[j])
    overlap = np.maximum(overlap, 0).astype(np.float64)
    per_offset = np.bincount(j - i + n_c - 1, weights=overlap, minlength=n_c + n_o - 1)
    best = int(np.argmax(per_offset))
    return best - (n_c - 1), float(per_offset[best])


def _offset_by_step_number(chief: np.ndarray, other: np.ndarray) -> int | None:
    common, c_at, o_at = np.intersect1d(chief, other, return_indices=True)
    return int(o_at[0] - c_at[0]) if len(common) else None


def align_steps(hosts: Mapping[str, HostSteps]) -> Alignment:
    """The step intersection of `hosts` (in their order; the order breaks ties)."""
    any_device = any(h.has_device for h in hosts.values())
    coordinators = tuple(n for n, h in hosts.items() if any_device and not h.has_device)
    without_steps = tuple(n for n, h in hosts.items()
                          if n not in coordinators and len(h.steps) == 0)
    members = [n for n in hosts if n not in coordinators and n not in without_steps]
    if not members:
        return Alignment(None, (), coordinators, without_steps, {}, {}, {},
                         empty_intersect=False)
    base_ns = min(hosts[n].time_base_ns for n in members)
    spans: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for n in members:
        s = hosts[n].steps
        begin = s.begin_ps + (hosts[n].time_base_ns - base_ns) * 1000
        spans[n] = (begin, begin + s.duration_ps)
    chief = min(members, key=lambda n: int(spans[n][1].max() - spans[n][0].min()))
    offsets = {chief: 0}
    by_time = {chief: True}
    unmatched = False
    for n in members:
        if n == chief:
            continue
        k, overlap = _best_offset(spans[chief], spans[n])
        by_time[n] = overlap > 0
        by_number = None if overlap > 0 else _offset_by_step_number(
            hosts[chief].steps.step_num, hosts[n].steps.step_num)
        unmatched |= overlap <= 0 and by_number is None
        offsets[n] = k if overlap > 0 else (by_number or 0)
    n_chief = len(hosts[chief].steps)
    lo = max([0] + [-k for k in offsets.values()])
    hi = min([n_chief] + [len(hosts[n].steps) - offsets[n] for n in members])
    if unmatched:
        hi = lo
    common = np.arange(lo, max(lo, hi), dtype=np.int64)
    indices = {n: common + offsets[n] for n in (chief, *[m for m in members if m != chief])}
    return Alignment(
        chief, tuple(indices), coordinators, without_steps, offsets, by_time, indices,
        empty_intersect=len(common) == 0,
    )
