"""A big synthetic profile for the trace viewer: about two million events, built in seconds.

`big_trace_profile()` returns the bytes of an .xplane.pb with one host plane of
`THREADS` threads; each thread repeats `BLOCKS` blocks of 25 nested events (a 100 µs step,
four 20 µs ops inside it, five 3 µs kernels inside each op), so every thread has depths
0, 1 and 2 and the run holds THREADS * BLOCKS * 25 events over about 1.2 s. Names vary
per block (100 distinct names), so colours vary too.

Building two million events through the protobuf API would take tens of seconds, so the
events are encoded with numpy straight into protobuf wire format (tb_profile_plugin/trace/
wire.py): the plane, its metadata and each line's header are serialised by the generated
classes, and each line's `events` (field 4 of XLine, every XEvent = metadata_id (1),
offset_ps (2), duration_ps (3) as varints) are appended as bytes. Repeated fields may follow
the rest of a message in any order, so the result is a valid XSpace.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tb_profile_plugin.trace.wire import len_field, repeated_messages
from tb_profile_plugin.xspace.pb import xplane_pb2

SESSION = "2026_01_01_00_00_00"
BIG_RUN = f"big_trace/{SESSION}"
BIG_HOST = "bighost"
THREADS = 8
BLOCKS = 10_000
EVENTS_PER_BLOCK = 25
BIG_EVENTS = THREADS * BLOCKS * EVENTS_PER_BLOCK
US = 1_000_000  # ps
BLOCK_PERIOD_PS = 120 * US
NAME_VARIANTS = 4


def _template() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offset_ps, duration_ps, slot) of the 25 events of a block, in start order."""
    offsets, durations = [0], [100 * US]
    for op in range(4):
        op_start = 2 * US + op * 24 * US
        offsets.append(op_start)
        durations.append(20 * US)
        for kernel in range(5):
            offsets.append(op_start + US // 2 + kernel * 3_800_000)
            durations.append(3 * US)
    return (
        np.array(offsets, dtype=np.uint64),
        np.array(durations, dtype=np.uint64),
        np.arange(EVENTS_PER_BLOCK, dtype=np.uint64),
    )


def _names() -> list[str]:
    """Name of metadata id k + 1: slot k % 25, variant k // 25."""
    names = []
    for variant in range(NAME_VARIANTS):
        names.append(f"Step_v{variant}")
        for op in range(4):
            names.append(f"Op{op}_v{variant}")
            names.extend(f"Kernel{op}_{k}_v{variant}" for k in range(5))
    return names


def big_trace_profile(threads: int = THREADS, blocks: int = BLOCKS) -> bytes:
    """The XSpace bytes of the big profile (threads * blocks * 25 events)."""
    plane = xplane_pb2.XPlane(id=0, name="/host:CPU")
    for k, name in enumerate(_names()):
        plane.event_metadata[k + 1].id = k + 1
        plane.event_metadata[k + 1].name = name
    offsets, durations, slots = _template()
    block = np.arange(blocks, dtype=np.uint64)
    variant = block % np.uint64(NAME_VARIANTS)
    lines = []
    for thread in range(threads):
        starts = block * np.uint64(BLOCK_PERIOD_PS) + np.uint64(thread * 7 * US)
        offset_ps = (starts[:, None] + offsets[None, :]).ravel()
        duration_ps = np.broadcast_to(durations, (blocks, EVENTS_PER_BLOCK)).ravel()
        metadata_id = (variant[:, None] * np.uint64(EVENTS_PER_BLOCK) + slots[None, :] + 1).ravel()
        header = xplane_pb2.XLine(
            id=thread + 1, display_id=thread + 1, name=f"worker_{thread}", timestamp_ns=1_000
        ).SerializeToString()
        lines.append(header + repeated_messages(
            4, [(1, metadata_id), (2, offset_ps), (3, duration_ps)]))
    plane_bytes = plane.SerializeToString() + b"".join(len_field(3, line) for line in lines)
    space = xplane_pb2.XSpace(hostnames=[BIG_HOST]).SerializeToString()
    return len_field(1, plane_bytes) + space


def write_host_file(logdir: Path, run_session: str, host: str, data: bytes) -> None:
    """Writes `data` as host `host` of run `<run>/<session>` (`run_session`) under `logdir`."""
    run, session = run_session.split("/")
    session_dir = logdir / run / "plugins" / "profile" / session
    session_dir.mkdir(parents=True, exist_ok=True)
    (session_dir / f"{host}.xplane.pb").write_bytes(data)


def write_big_trace(logdir: Path) -> None:
    """Writes the big profile as run `big_trace/<session>`, host `bighost`."""
    write_host_file(logdir, BIG_RUN, BIG_HOST, big_trace_profile())
