"""scripts/bench_device.py: the device-heavy captures it writes from the committed NVIDIA
capture are what it says (8 GPUs, repeated in time, ids that pair events distinct per copy
and still paired within one), and read as profiles."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.pb import xplane_pb2

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import bench_device  # noqa: E402


def _stat_values(plane: xplane_pb2.XPlane, name: str) -> list[int]:
    ids = {k for k, m in plane.stat_metadata.items() if m.name == name}
    return [getattr(s, s.WhichOneof("value")) for line in plane.lines for e in line.events
            for s in e.stats if s.metadata_id in ids]


def test_gpu8_capture_pairs_ids_within_each_copy(tmp_path: Path) -> None:
    source = bench_device._source_file("jax_nvidia_device_bound")
    original = xplane_pb2.XSpace.FromString(source.read_bytes())
    path = tmp_path / "gpu8.xplane.pb"
    events = bench_device.write_capture(source, path, 60_000, 8)
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    assert sum(len(ln.events) for p in space.planes for ln in p.lines) == events >= 60_000
    gpus = sorted(p.name for p in space.planes if p.name.startswith("/device:GPU:"))
    assert gpus == [f"/device:GPU:{k}" for k in range(8)]
    host = next(p for p in space.planes if p.name == "/host:CPU")
    source_host = next(p for p in original.planes if p.name == "/host:CPU")
    copies = len(_stat_values(host, "step_num")) // len(_stat_values(source_host, "step_num"))
    assert copies >= 2
    # Every kernel's correlation id is one launch's, and no two GPUs or time copies share one.
    launches = Counter(_stat_values(host, "correlation_id"))
    assert max(launches.values()) == 1
    per_gpu = [set(_stat_values(p, "correlation_id")) for p in space.planes
               if p.name.startswith("/device:GPU:")]
    original_gpu = next(p for p in original.planes if p.name == "/device:GPU:0")
    distinct = len(set(_stat_values(original_gpu, "correlation_id")))
    assert all(ids <= set(launches) for ids in per_gpu)
    assert sum(len(ids) for ids in per_gpu) == len(set().union(*per_gpu))
    assert all(len(ids) == distinct * copies for ids in per_gpu)
    # Steps continue their numbers in each copy in time; runs and flows are new per copy.
    steps = _stat_values(host, "step_num")
    assert len(steps) == len(set(steps)) == len(_stat_values(source_host, "step_num")) * copies
    runs = _stat_values(host, "run_id")
    assert len(runs) == len(set(runs))
    # The copies follow each other in time, and the file reads as a profile of 9 lines more.
    profile = decode_xspace(path.read_bytes(), pure=False)
    assert profile.num_events == events
    gpu0 = next(p for p in profile.planes if p.name == "/device:GPU:0")
    starts = gpu0.lines[0].events.start_ps
    assert (starts[1:] >= starts[:-1]).mean() > 0.99
