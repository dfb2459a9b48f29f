"""The memory peak of an allocator within the profile, and what made it up.

Peak (xprof_reference.md §3.5): the snapshot with the most memory in use, stack plus heap;
of equal ones the last in the file's order (planes, lines, events), which is the one the
reference keeps (it updates its peak on `>=` while walking the file): with several threads
that need not be the last in time. The allocator's own
`peak_bytes_in_use` counts over its whole lifetime: the lifetime peak is that count on the
last snapshot in file order, as the reference takes it, which may lie before the profile
began. It is the allocator's figure alone, never stack + heap: an allocator whose
`bytes_reserved` (the stack) is large, as on TPU, reports a heap peak below the stack +
heap the snapshots show. Capacity is stack + heap + free at the peak.

Breakdown: replay every snapshot up to the peak, keyed by address:

    t ──A(x)──A(y)──D(x)──A(z)──────D(w)──PEAK
           active at the peak: y, z         (x was freed; w was allocated before the profile)

An allocation is active when it is the last snapshot at its address at the peak. The rows
are the active allocations, merged when op, sizes, region, data type and shape are equal,
plus two rows where they apply: "stack" (the stack reserved at the peak) and
"allocated before the profile": the heap in use that no recorded allocation accounts for
(tensors that were allocated before the capture began, such as weights; the reference calls
this row "unused preallocated device memory" and counts only the peak's step, see
docs/analysis.md). So the rows always sum to the peak's stack + heap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.memory.snapshots import AllocatorSnapshots, data_type_name

STACK_ROW = "stack"
UNATTRIBUTED_ROW = "allocated before the profile"


@dataclass(frozen=True)
class MemoryPeak:
    """The peak snapshot (`index` into the allocator's snapshots) and the summary figures."""

    index: int
    time_ps: int
    stack_bytes: int
    heap_bytes: int
    free_bytes: int
    fragmentation: float  # 0-1, NaN when the event did not say
    step_id: int
    capacity_bytes: int
    lifetime_peak_bytes: int

    @property
    def in_use_bytes(self) -> int:
        return self.stack_bytes + self.heap_bytes


@dataclass(frozen=True)
class BreakdownRow:
    op_name: str
    allocation_bytes: int
    requested_bytes: int
    occurrences: int
    region_type: str
    data_type: str
    shape: str
    kind: str  # "tensor", "stack" or "unattributed"


def find_peak(snapshots: AllocatorSnapshots) -> MemoryPeak:
    """The snapshot with the most stack + heap (of equals, the last in file order)."""
    in_use = snapshots.in_use_bytes
    tied = np.flatnonzero(in_use == in_use.max())
    index = int(tied[np.argmax(snapshots.file_order[tied])])
    s = snapshots
    return MemoryPeak(
        index=index,
        time_ps=int(s.time_ps[index]),
        stack_bytes=int(s.stack_bytes[index]),
        heap_bytes=int(s.heap_bytes[index]),
        free_bytes=int(s.free_bytes[index]),
        fragmentation=float(s.fragmentation[index]),
        step_id=int(s.step_id[index]),
        capacity_bytes=int(s.stack_bytes[index] + s.heap_bytes[index] + s.free_bytes[index]),
        lifetime_peak_bytes=int(s.peak_in_use_bytes[int(np.argmax(s.file_order))]),
    )


def active_allocations(snapshots: AllocatorSnapshots, until: int) -> np.ndarray:
    """Indices of the allocations among snapshots 0..`until` still active after `until`."""
    n = until + 1
    address = snapshots.address[:n]
    by_address = np.lexsort((np.arange(n), address))
    last = np.ones(n, bool)
    last[:-1] = address[by_address[1:]] != address[by_address[:-1]]
    candidates = by_address[last]
    return np.sort(candidates[snapshots.is_allocation[candidates]])


def breakdown(snapshots: AllocatorSnapshots, peak: MemoryPeak) -> tuple[list[BreakdownRow], int]:
    """The rows of what is in use at the peak, largest first; and the unattributed bytes.

    Unattributed = heap at the peak minus the active allocations' bytes. It is negative only
    when the recorded events contradict the allocator's own count (then no row shows it).
    """
    s = snapshots
    active = active_allocations(s, peak.index)
    keys = np.stack([
        -s.allocation_bytes[active], -s.requested_bytes[active], s.op[active],
        s.region_type[active], s.data_type[active], s.shape[active],
    ], axis=1)
    rows: list[BreakdownRow] = []
    if len(active):
        unique, counts = np.unique(keys, axis=0, return_counts=True)
        for key, count in zip(unique.tolist(), counts.tolist(), strict=True):
            rows.append(BreakdownRow(
                op_name=s.text(key[2]), allocation_bytes=-key[0], requested_bytes=-key[1],
                occurrences=count, region_type=s.text(key[3]),
                data_type=data_type_name(key[4]), shape=s.text(key[5]), kind="tensor",
            ))
    unattributed = peak.heap_bytes - int(s.allocation_bytes[active].sum())
    if unattributed > 0:
        rows.append(_special(UNATTRIBUTED_ROW, unattributed, "unattributed"))
    if peak.stack_bytes > 0:
        rows.append(_special(STACK_ROW, peak.stack_bytes, "stack"))
    rows.sort(key=lambda r: (-r.allocation_bytes, -r.requested_bytes, r.op_name, r.region_type,
                             r.data_type, r.shape))
    return rows, unattributed


def _special(name: str, num_bytes: int, kind: str) -> BreakdownRow:
    return BreakdownRow(name, num_bytes, num_bytes, 1, "", "", "", kind)
