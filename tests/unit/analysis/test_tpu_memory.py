"""Memory peak figures where the allocator's stack is large (TPU) and devices share a name.

Rules under test (analysis/memory/peak.py `find_peak`, snapshots.py `_memory_ids`): the
lifetime peak is the allocator's own `peak_bytes_in_use` on its last snapshot in file order,
never stack + heap; an event's allocator is whichever of `allocator_name`, `device_ordinal`,
`index_on_host` it writes last. Every figure was checked against xprof 2.24.2's memory_profile
run on the same XSpace (profileSummary: peakBytesUsageLifetime, peakStats, peakStatsTimePs,
memoryCapacity).
"""

from __future__ import annotations

import pytest

from tb_profile_plugin.analysis.memory.peak import breakdown, find_peak
from tb_profile_plugin.analysis.memory.snapshots import build_memory_snapshots
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import LineBuilder, XSpaceBuilder

US = 1_000_000
# (t us, allocation?, addr, bytes, stack = bytes_reserved, heap, free, peak_bytes_in_use)
_DEVICE_0 = [(10, True, 0x10, 1000, 6000, 1000, 9000, 5200),
             (20, True, 0x20, 2000, 6000, 3000, 7000, 5200),
             (30, False, 0x10, 1000, 6000, 2000, 8000, 5200),
             (40, True, 0x30, 500, 5000, 2500, 8500, 5100)]
_DEVICE_1 = [(15, True, 0x10, 4000, 1000, 4000, 11000, 4500),
             (25, False, 0x10, 4000, 1000, 0, 15000, 4500)]


def _events(line: LineBuilder, events: list[tuple], device: int, naming: str) -> None:
    for t, allocation, addr, size, stack, heap, free, peak in events:
        stats: dict[str, object] = {}
        if naming == "name_then_ordinal":
            stats.update(allocator_name="tpu_hbm", device_ordinal=device)
        elif naming == "ordinal_then_name":
            stats.update(device_ordinal=device, allocator_name="tpu_hbm")
        else:
            stats.update(allocator_name=f"TPU_{device}_hbm")
        stats.update(bytes_reserved=stack, bytes_allocated=heap, bytes_available=free,
                     peak_bytes_in_use=peak, requested_bytes=size, allocation_bytes=size,
                     addr=addr, region_type="temp", data_type=1, shape="[8]")
        line.event("MemoryAllocation" if allocation else "MemoryDeallocation", t * US, 0,
                   **stats)


def _space(naming: str) -> bytes:
    b = XSpaceBuilder(hostnames=["tpu"])
    cpu = b.plane("/host:CPU")
    python = cpu.line("python", line_id=1)
    python.event("train", 0, 100 * US, step_num=1, _r=1)
    _events(python, _DEVICE_0, 0, naming)
    _events(cpu.line("tpu_runtime/1", line_id=2), _DEVICE_1, 1, naming)
    return b.serialize()


def _summaries(naming: str) -> dict[str, tuple[int, ...]]:
    snapshots = build_memory_snapshots(decode_xspace(_space(naming)))
    out = {}
    for memory_id, allocator in snapshots.allocators.items():
        peak = find_peak(allocator)
        out[memory_id] = (peak.lifetime_peak_bytes, peak.stack_bytes, peak.heap_bytes,
                          peak.free_bytes, peak.time_ps // US, peak.capacity_bytes)
    return out


# Reference (lifetime, peak stack, heap, free, time us, capacity) per memory id.
_REFERENCE = {
    "named": {"TPU_0_hbm": (5100, 6000, 3000, 7000, 20, 16000),
              "TPU_1_hbm": (4500, 1000, 4000, 11000, 15, 16000)},
    "name_then_ordinal": {"0": (5100, 6000, 3000, 7000, 20, 16000),
                          "1": (4500, 1000, 4000, 11000, 15, 16000)},
    "ordinal_then_name": {"tpu_hbm": (4500, 6000, 3000, 7000, 20, 16000)},
}


@pytest.mark.parametrize("naming", sorted(_REFERENCE))
def test_peak_figures_match_the_reference(naming: str) -> None:
    assert _summaries(naming) == _REFERENCE[naming]


def test_lifetime_peak_is_the_allocators_count_not_stack_plus_heap() -> None:
    snapshots = build_memory_snapshots(decode_xspace(_space("named")))
    allocator = snapshots.allocators["TPU_0_hbm"]
    peak = find_peak(allocator)
    # stack + heap at the peak is 9000; the allocator's own count, last written, is 5100
    # (its largest, 5200, came earlier): the lifetime figure is the allocator's.
    assert peak.in_use_bytes == 9000
    assert peak.lifetime_peak_bytes == 5100
    rows, unattributed = breakdown(allocator, peak)
    assert [(r.op_name, r.allocation_bytes) for r in rows] == [
        ("stack", 6000), ("", 2000), ("", 1000)]
    assert unattributed == 0


def test_devices_sharing_an_allocator_name_are_not_one_allocator() -> None:
    # Each device's ordinal written after the shared name: device 1's 4000-byte buffer
    # (same address as device 0's first) is not among device 0's rows at its peak.
    snapshots = build_memory_snapshots(decode_xspace(_space("name_then_ordinal")))
    allocator = snapshots.allocators["0"]
    rows, _ = breakdown(allocator, find_peak(allocator))
    assert sum(r.allocation_bytes for r in rows) == 9000  # the peak's stack + heap
