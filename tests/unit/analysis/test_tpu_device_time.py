"""TPU device time: ops placed by `device_offset_ps`, and lines that are no ops.

Rules under test (analysis/ops/op_metrics.py `_device_self_and_idle_ps`, producers/kinds.py):
an XLA op with `device_offset_ps` and `device_duration_ps` ran over its device span, not its
trace span; ops nest by device spans; a TPU plane's IDLE is its extent (trace and device
spans) minus the sum of its ops' self times. The figures were checked against xprof 2.24.2
run on the same XSpace (with `symbol_id` metadata stats, which the reference keys ops by).
A TPU plane's `_counters_` samples and "Tensor Core" markers are no ops and no busy time.
"""

from __future__ import annotations

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.producers import LineKind, line_kind
from tests.xspace_builder import Uint, XSpaceBuilder

US = 1_000_000

# name, tf_op, trace start, trace duration, device offset, device duration (us)
_OPS = [
    ("copy-done.4", "jit(f)/copy4", 0, 120, 0, 300),
    ("fusion.1", "jit(f)/add", 20, 50, 310, 50),
    ("copy-done.5", "jit(f)/copy5", 100, 10, 370, 200),
    ("dot.2", "jit(f)/dot_general", 150, 100, 580, 100),
    ("copy-done.2", "jit(f)/copy2", 400, 250, 700, 250),
]


def _tpu_space(counters: bool = False) -> bytes:
    b = XSpaceBuilder()
    b.plane("/host:CPU", plane_id=0).line("python", line_id=1).event("main", 0, 1000 * US)
    tpu = b.plane("/device:TPU:0", plane_id=1)
    tpu.plane_stat("device_type_string", "TPU v6 Lite")
    tpu.line("XLA Modules", line_id=2).event("jit_f(1219)", 0, 1000 * US, run_id=1)
    xla = tpu.line("XLA Ops", line_id=3)
    for symbol, (name, tf_op, start, dur, dev_offset, dev_dur) in enumerate(_OPS, 100):
        text = f"%{name} = f32[5,1024]{{1,0}} {name.split('.')[0]}(f32[5,1024]{{1,0}} %p0)"
        tpu.metadata_stats(text, name, hlo_category="data formatting", tf_op=tf_op,
                           program_id=Uint(42), symbol_id=Uint(symbol))
        xla.event(text, start * US, dur * US, display_name=name,
                  device_offset_ps=dev_offset * US, device_duration_ps=dev_dur * US)
    if counters:
        samples = tpu.line("_counters_", line_id=9)
        for k in range(100):
            samples.event("Scalar ALU", k * 10 * US, 10 * US, value=2.0)
            samples.event("Vector Load", k * 10 * US, 5 * US, value=1.0)
        markers = tpu.line("Tensor Core", line_id=10)
        for k in range(10):
            markers.event("Tensor Core", k * 100 * US, 0)
    return b.serialize()


def _self_us(analysis: object) -> dict[str, float]:
    ops = analysis.ops.device_tf_ops  # type: ignore[attr-defined]
    return {name: int(ops.self_ps[k]) / US for k, name in enumerate(ops.name)}


def test_ops_placed_by_device_offset_take_their_full_device_time() -> None:
    analysis = analyze(decode_xspace(_tpu_space()))
    # Reference (xprof 2.24.2, framework_op_stats on this file): the same self times.
    assert _self_us(analysis) == {
        "jit(f)/copy4": 300.0, "jit(f)/copy2": 250.0, "jit(f)/copy5": 200.0,
        "jit(f)/dot_general": 100.0, "jit(f)/add": 50.0}
    # Extent [0, 950) us (device ends) minus 900 us of ops; reference IDLE 50 us.
    assert analysis.ops.device.idle_ps == 50 * US
    ops = analysis.ops.device_tf_ops
    assert ops.name[int(ops.self_ps.argmax())] == "jit(f)/copy4"  # the top op, as the reference


def test_counters_and_markers_are_no_ops() -> None:
    assert line_kind("/device:TPU:0", 9, "_counters_") == LineKind.COUNTERS
    assert line_kind("/device:TPU:0", 10, "Tensor Core") == LineKind.MARKERS
    assert not LineKind.COUNTERS.holds_events and not LineKind.MARKERS.holds_events
    # a GPU stream of the same name stays a stream
    assert line_kind("/device:GPU:0", 9, "_counters_") == LineKind.STREAM
    analysis = analyze(decode_xspace(_tpu_space(counters=True)))
    names = set(analysis.ops.device_tf_ops.name)
    assert "Scalar ALU" not in names and "Vector Load" not in names
    assert "Tensor Core" not in names
    assert analysis.ops.device.idle_ps == 50 * US  # the samples add no busy time
