"""Generated protobuf code: fresh, and usable in one process with TensorFlow's own copies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_committed_code_matches_a_fresh_generation() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protos"), "--check"],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr + result.stdout


def test_wire_compatible_and_coexists_with_tensorflow() -> None:
    pytest.importorskip("tensorflow")
    code = """
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2 as tf_xplane
from tensorflow.tsl.profiler.protobuf import profiler_options_pb2 as tf_options
from tb_profile_plugin.xspace.pb import xplane_pb2, profiler_options_pb2, profiler_service_pb2
theirs = tf_xplane.XSpace()
plane = theirs.planes.add(name="/host:CPU", id=3)
line = plane.lines.add(id=1, name="t", timestamp_ns=7, display_id=2, display_name="d",
                       duration_ps=9)
event = line.events.add(metadata_id=4, offset_ps=5, duration_ps=6)
event.stats.add(metadata_id=1, str_value="x")
plane.event_metadata[4].name = "op"
ours = xplane_pb2.XSpace.FromString(theirs.SerializeToString())
assert ours.SerializeToString() == theirs.SerializeToString()
opts = profiler_options_pb2.ProfileOptions(python_tracer_level=1, host_tracer_level=2,
                                           duration_ms=100, version=1)
assert tf_options.ProfileOptions.FromString(opts.SerializeToString()).python_tracer_level == 1
req = profiler_service_pb2.ProfileRequest(duration_ms=5, opts=opts)
assert req.opts.host_tracer_level == 2
print("OK")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert result.stdout.strip().endswith("OK"), result.stderr[-3000:]


def test_hlo_summary_reads_xla_hlo_protos_as_xla_does() -> None:
    """protos/hlo_summary.proto declares a few of XLA's HloProto fields with XLA's numbers:
    on every module of a real JAX capture it reads what TensorFlow's own copy of XLA's schema
    reads (names, opcodes, element types, op names, operands, fusion computations)."""
    pytest.importorskip("tensorflow")
    code = """
import glob
from tensorflow.compiler.xla.service import hlo_pb2 as xla_hlo
from tb_profile_plugin.xspace.pb import hlo_summary_pb2, xplane_pb2
path = glob.glob("tests/data/jax_nvidia_train/plugins/profile/*/*.xplane.pb")[0]
space = xplane_pb2.XSpace.FromString(open(path, "rb").read())
meta = next(p for p in space.planes if p.name == "/host:metadata")
count = 0
for entry in meta.event_metadata.values():
    data = entry.stats[0].bytes_value
    theirs = xla_hlo.HloProto.FromString(data).hlo_module
    ours = hlo_summary_pb2.HloProto.FromString(data).hlo_module
    assert (ours.name, ours.id) == (theirs.name, theirs.id)
    for c_ours, c_theirs in zip(ours.computations, theirs.computations, strict=True):
        assert c_ours.is_fusion_computation == c_theirs.is_fusion_computation
        for a, b in zip(c_ours.instructions, c_theirs.instructions, strict=True):
            assert (a.name, a.opcode, a.id, list(a.operand_ids), a.metadata.op_name) == (
                b.name, b.opcode, b.id, list(b.operand_ids), b.metadata.op_name)
            assert a.shape.element_type == b.shape.element_type
            assert [t.element_type for t in a.shape.tuple_shapes] == [
                t.element_type for t in b.shape.tuple_shapes]
            count += 1
assert count > 1000, count
print("OK", count)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert "OK" in result.stdout, result.stderr[-3000:]
