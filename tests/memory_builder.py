"""A synthetic profile with allocator events whose peak and breakdown are computed by hand.

Shared by tests/unit/analysis/test_memory.py (exact numbers) and the browser tests
(tests/browser/synthetic.py writes it as the run `memory/<session>`).

Allocator GPU_0_bfc (capacity 10,000 bytes; 2,000 bytes in use before the profile began;
stack 100), on the `python` line inside two steps, times in µs:

    #  t    event  addr    alloc  req   op           heap   free   frag
    0  10   A      0x1000  1024   1000  dense/MatMul 3024   6876   0.10
    1  20   A      0x2000  4096   4000  conv/Conv2D  7120   2780   0.25
    2  30   D      0x1000  1024   1000  (inherits dense/MatMul)   6096  3804  0.50
    3  40   D      0x9000   512    512  (allocated before the profile) 5584 4316 (none)
    -- step 2 --
    4  110  A      0x1000   512    512  relu/Relu    6096   3804   0.20
    5  120  A      0x3000   512    512  relu/Relu    6608   3292   0.30
    6  130  A      0x4000  2048   2000  softmax      8656   1244   0.40   <- peak (8756)
    7  140  D      0x1000   512    512  (inherits relu/Relu)     8144  1756  0.35
    8  150  D      0x2000  4096   4000  (inherits conv/Conv2D)   4048  5852  0.20
    -- after the last step --
    9  250  D      0x4000  2048   2000  (inherits softmax; step 1 + 1 = 2)  2000  7900  0.0

Active at the peak: conv 4096, softmax 2048, relu 512 x2 (0x1000 reused, 0x3000);
unattributed = 8656 - 7168 = 1488 (= 2000 before the profile - the 512 freed at #3);
plus the stack, 100: the rows sum to 8756. A second allocator `cpu` on another line, with no
step, checks memory ids and the step fill-in.
"""

from __future__ import annotations

from typing import Any

from tests.xspace_builder import LineBuilder, XSpaceBuilder

US = 1_000_000
CAPACITY = 10_000
STACK = 100
FLOAT, HALF = 1, 19

# (t_us, allocation?, addr, allocation_bytes, requested_bytes, op, region, dtype, shape, heap, frag)
EVENTS: list[tuple[Any, ...]] = [
    (10, True, 0x1000, 1024, 1000, "dense/MatMul", "output", FLOAT, "[16,16]", 3024, 0.10),
    (20, True, 0x2000, 4096, 4000, "conv/Conv2D", "temp", HALF, "[8,8,32]", 7120, 0.25),
    (30, False, 0x1000, 1024, 1000, None, None, 0, None, 6096, 0.50),
    (40, False, 0x9000, 512, 512, None, None, 0, None, 5584, None),
    (110, True, 0x1000, 512, 512, "relu/Relu", "output", FLOAT, "[128]", 6096, 0.20),
    (120, True, 0x3000, 512, 512, "relu/Relu", "output", FLOAT, "[128]", 6608, 0.30),
    (130, True, 0x4000, 2048, 2000, "softmax", "temp", FLOAT, "[512]", 8656, 0.40),
    (140, False, 0x1000, 512, 512, None, None, 0, None, 8144, 0.35),
    (150, False, 0x2000, 4096, 4000, None, None, 0, None, 4048, 0.20),
    (250, False, 0x4000, 2048, 2000, None, None, 0, None, 2000, 0.0),
]


def memory_profile_bytes(with_memory: bool = True) -> bytes:
    b = XSpaceBuilder(hostnames=["mem"])
    cpu = b.plane("/host:CPU")
    py = cpu.line("python", line_id=1)
    py.event("train", 0, 100 * US, step_num=1, _r=1)
    if with_memory:
        for t, is_alloc, addr, alloc, req, op, region, dtype, shape, heap, frag in EVENTS[:4]:
            _alloc_event(py, t, is_alloc, addr, alloc, req, op, region, dtype, shape, heap, frag)
    py.event("train", 100 * US, 100 * US, step_num=2, _r=1)
    if with_memory:
        for t, is_alloc, addr, alloc, req, op, region, dtype, shape, heap, frag in EVENTS[4:]:
            _alloc_event(py, t, is_alloc, addr, alloc, req, op, region, dtype, shape, heap, frag)
        other = cpu.line("tf_Compute/1", line_id=2)
        other.event("MemoryAllocation", 50 * US, allocator_name="cpu", bytes_reserved=0,
                    bytes_allocated=64, bytes_available=936, peak_bytes_in_use=64,
                    requested_bytes=64, allocation_bytes=64, addr=0x77, tf_op="Const",
                    region_type="persist", data_type=3, shape="[16]")
    else:
        py.event("dense/MatMul", 10 * US, 5 * US)
    return b.serialize()


def _alloc_event(line: LineBuilder, t: int, is_alloc: bool, addr: int, alloc: int, req: int,
                 op: str | None, region: str | None, dtype: int, shape: str | None, heap: int,
                 frag: float | None) -> None:
    stats: dict[str, Any] = {
        "allocator_name": "GPU_0_bfc", "bytes_reserved": STACK, "bytes_allocated": heap,
        "bytes_available": CAPACITY - STACK - heap, "peak_bytes_in_use": 9000,
        "requested_bytes": req, "allocation_bytes": alloc, "addr": addr, "data_type": dtype,
    }
    if frag is not None:
        stats["fragmentation"] = frag
    for key, value in (("tf_op", op), ("region_type", region), ("shape", shape)):
        if value is not None:
            stats[key] = value
    line.event("MemoryAllocation" if is_alloc else "MemoryDeallocation", t * US, 0, **stats)
