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
