"""A big synthetic profile for the trace viewer: about two million events, built in seconds.

`big_trace_profile()` returns the bytes of an .xplane.pb with one host plane of
`THREADS` threads; each thread repeats `BLOCKS` blocks of 25 nested events (a 100 µs step,
four 20 µs ops inside it, five 3 µs kernels inside each op), so every thread has depths
0, 1 and 2 and the run holds THREADS * BLOCKS * 25 events over about 1.2 s. Names vary
per block (100 distinct names), so colours vary too.

Building two million events through the protobuf API would take tens of seconds, so the
events are encoded with numpy straight into protobuf wire format: the plane, its metadata
and each line's header are serialised by the generated classes, and each line's `events`
(field 4 of XLine, every XEvent = metadata_id (1), offset_ps (2), duration_ps (3) as
varints) are appended as bytes. Repeated fields may follow the rest of a message in any
order, so the result is a valid XSpace.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

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


def _varint_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, 10) uint8 varint bytes of `values` and the (n, 10) mask of the bytes used."""
    values = values.astype(np.uint64)
    shifts = np.arange(10, dtype=np.uint64) * np.uint64(7)
    groups = ((values[:, None] >> shifts[None, :]) & np.uint64(0x7F)).astype(np.uint8)
    used = np.ones(values.shape, dtype=np.int64)
    rest = values >> np.uint64(7)
    while rest.any():
        used += rest > 0
        rest = rest >> np.uint64(7)
    columns = np.arange(10)[None, :]
    mask = columns < used[:, None]
    groups[columns < (used[:, None] - 1)] |= 0x80
    return groups, mask


def encode_events(metadata_id: np.ndarray, offset_ps: np.ndarray, duration_ps: np.ndarray) -> bytes:
    """XLine field 4 (`events`) for each event, as concatenated wire bytes."""
    n = len(metadata_id)
    parts = [_varint_groups(v) for v in (metadata_id, offset_ps, duration_ps)]
    # Row: 0x22 LEN 0x08 v1[10] 0x10 v2[10] 0x18 v3[10]; LEN < 128 always (at most 33).
    width = 2 + 3 * 11
    rows = np.zeros((n, width), dtype=np.uint8)
    mask = np.zeros((n, width), dtype=bool)
    rows[:, 0] = 0x22
    mask[:, :2] = True
    length = np.full(n, 3, dtype=np.int64)
    for k, (tag, (groups, used)) in enumerate(zip((0x08, 0x10, 0x18), parts, strict=True)):
        at = 2 + k * 11
        rows[:, at] = tag
        mask[:, at] = True
        rows[:, at + 1 : at + 11] = groups
        mask[:, at + 1 : at + 11] = used
        length += used.sum(axis=1)
    rows[:, 1] = length.astype(np.uint8)
    return rows[mask].tobytes()


def _length_delimited(field: int, payload: bytes) -> bytes:
    out = bytearray([(field << 3) | 2])
    size = len(payload)
    while True:
        byte = size & 0x7F
        size >>= 7
        if size:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            break
    return bytes(out) + payload


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
        lines.append(header + encode_events(metadata_id, offset_ps, duration_ps))
    plane_bytes = plane.SerializeToString() + b"".join(_length_delimited(3, line) for line in lines)
    space = xplane_pb2.XSpace(hostnames=[BIG_HOST]).SerializeToString()
    return _length_delimited(1, plane_bytes) + space


def write_big_trace(logdir: Path) -> None:
    """Writes the big profile as run `big_trace/<session>`, host `bighost`."""
    run, session = BIG_RUN.split("/")
    session_dir = logdir / run / "plugins" / "profile" / session
    session_dir.mkdir(parents=True, exist_ok=True)
    (session_dir / f"{BIG_HOST}.xplane.pb").write_bytes(big_trace_profile())
