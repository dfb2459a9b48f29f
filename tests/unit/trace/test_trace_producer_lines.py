"""Trace tracks on the layouts real producers write: their derived lines once, XLA tracks."""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.tools.profile_info import _line_row
from tb_profile_plugin.trace.index import TraceIndex, build_index
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR
from tests.unit.analysis.test_device_ops_producers import _tf24_gpu_space
from tests.xspace_builder import Ref, XSpaceBuilder


def _tracks(index: TraceIndex, plane: str) -> dict[str, list[str]]:
    """Track name -> names of its events, for one plane's process."""
    process = next(p for p in index.processes if p.name.startswith(plane))
    out = {}
    for thread in process.threads:
        lo, hi = index.track_bounds[thread.track], index.track_bounds[thread.track + 1]
        order = np.argsort(index.start_ps[lo:hi], kind="stable")
        out.setdefault(thread.name, []).extend(index.names[i] for i in index.name_id[lo:hi][order])
    return out


def test_tf24_producer_lines_shown_once_and_marked_derived() -> None:
    profile = decode_xspace(_tf24_gpu_space())
    index = build_index(profile)
    process = next(p for p in index.processes if p.name.startswith("/device:GPU:0"))
    names = [t.name for t in process.threads]
    assert names.count("Steps") == 1 and names.count("TensorFlow Ops") == 1
    assert names.count("TensorFlow Name Scope") == 1
    assert names.index("Steps") < names.index("Stream #14(Kernel)")
    # The producer's lines are the file's own, not derived by the index.
    assert not any(t.derived for t in process.threads if t.name in ("Steps", "TensorFlow Ops"))
    gpu = profile.planes[1]
    rows = {row["line"]: row for row in (_line_row(gpu, line) for line in gpu.lines)}
    assert rows["Steps"]["derived"] and rows["Steps"]["kind"] == "steps"
    assert rows["TensorFlow Ops"]["derived"] and rows["TensorFlow Name Scope"]["derived"]
    assert not rows["Stream #14(Kernel)"]["derived"]


def test_jax_gpu_tracks_name_jax_ops_and_module_executions() -> None:
    b = XSpaceBuilder()
    s = b.gpu_plane(0).line("Stream #1(Kernel)", line_id=1)
    common = {"tf_op": "XlaModule:", "hlo_module": "jit_f"}
    for base in (0, 100_000):  # two executions of jit_f, idle in between
        s.kernel("gemm", base, 10_000, correlation_id=base + 1, hlo_op="dot.1",
                 **{"name": Ref("jit(f)/dot_general")}, **common, run_id=base + 7)
        s.kernel("add_k", base + 12_000, 3_000, correlation_id=base + 2, hlo_op="add.2",
                 **{"name": Ref("jit(f)/add")}, **common, run_id=base + 7)
    tracks = _tracks(build_index(decode_xspace(b.serialize())), "/device:GPU:0")
    assert tracks["XLA Modules"] == ["jit_f", "jit_f"]
    assert tracks["Framework Ops"] == ["jit(f)/dot_general", "jit(f)/add"] * 2
    assert tracks["XLA Ops"] == ["dot.1", "add.2"] * 2
    assert "TensorFlow Ops" not in tracks
    assert not any("XlaModule" in n for names in tracks.values() for n in names)


def test_real_jax_gpu_capture_has_module_tracks_per_gpu() -> None:
    path = next((DATA_DIR / "jax_gpu_conv").glob("plugins/profile/*/*.xplane.pb"))
    index = build_index(decode_xspace(path.read_bytes()))
    gpus = [p for p in index.processes if p.name.startswith("/device:GPU:")]
    assert len(gpus) == 8
    for process in gpus:
        names = [t.name for t in process.threads]
        assert names.count("XLA Modules") == 1 and names.count("Steps") <= 1
        assert "TensorFlow Ops" not in names
