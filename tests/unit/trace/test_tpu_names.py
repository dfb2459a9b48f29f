"""TPU event and op names: the trace shows the op, the op tables the JAX op path.

Rules under test (xspace/producers/event_names.py, producers/columns.py `split_jax_op`): XLA
on TPU names an "XLA Ops" / "Async XLA Ops" event's metadata by the whole HLO instruction and
gives the op as its `display_name`; the trace names the event by the display name and shows
the HLO text as its `long_name`. Its `tf_op` is the JAX op path with an empty type
(`jit(f)/add:`): the op tables name the op by the path and type it by the path's last
component, never a name ending in ":". Every figure was checked against xprof 2.24.2 run on
the same XSpace (trace_viewer and framework_op_stats).
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.tools.overview_page import top_ops
from tb_profile_plugin.trace.details import event_details, search
from tb_profile_plugin.trace.window import TraceSet, trace_set
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.producers.columns import split_jax_op
from tests.xspace_builder import Uint, XSpaceBuilder

US = 1_000_000

# display name, hlo_category, tf_op ("" none), trace start, trace duration, device offset,
# device duration (us)
_OPS = [
    ("copy-done.4", "data formatting", "jit(f)/copy4", 0, 120, 0, 300),
    ("fusion.1", "loop fusion", "jit(f)/add:", 20, 50, 310, 50),
    ("copy-done.5", "data formatting", "jit(f)/jvp(g)/copy5:copy_p", 100, 10, 370, 200),
    ("dot.2", "convolution", "jit(f)/dot_general", 150, 100, 580, 100),
    ("copy-done.2", "data formatting", "", 400, 250, 700, 250),
    ("broadcast.7", "data formatting", "jit(f)/broadcast_in_dim[shape=(5, 1024)]:", 660, 10,
     960, 10),
]


def _hlo_text(name: str) -> str:
    return f"%{name} = f32[5,1024]{{1,0}} {name.split('.')[0]}(f32[5,1024]{{1,0}} %p0)"


def _tpu_space() -> bytes:
    b = XSpaceBuilder()
    b.plane("/host:CPU", plane_id=0).line("python", line_id=1).event("main", 0, 1000 * US)
    tpu = b.plane("/device:TPU:0", plane_id=1)
    tpu.plane_stat("device_type_string", "TPU v6 Lite")
    tpu.line("XLA Modules", line_id=2).event("jit_f(1219)", 0, 1000 * US, run_id=1)
    xla = tpu.line("XLA Ops", line_id=3)
    for symbol, (name, category, tf_op, start, dur, offset, dev_dur) in enumerate(_OPS, 100):
        stats: dict[str, object] = {"hlo_category": category, "program_id": Uint(42),
                                    "symbol_id": Uint(symbol)}
        if tf_op:
            stats["tf_op"] = tf_op
        tpu.metadata_stats(_hlo_text(name), name, **stats)
        xla.event(_hlo_text(name), start * US, dur * US, display_name=name,
                  device_offset_ps=offset * US, device_duration_ps=dev_dur * US)
    async_ops = tpu.line("Async XLA Ops", line_id=4)
    text = "%copy-start.3 = (f32[5,1024]{1,0}, u32[]) copy-start(f32[5,1024]{1,0} %p1)"
    tpu.metadata_stats(text, "copy-start.3", hlo_category="data formatting",
                       program_id=Uint(42), tf_op="jit(f)/copy3:")
    async_ops.event(text, 5 * US, 300 * US, display_name="copy-start.3", _a=1)
    return b.serialize()


def _track_names(trace: TraceSet, track: str) -> list[str]:
    index = trace.hosts[0].index
    thread = next(t for t in index.tracks if t.name == track)
    lo, hi = int(index.track_bounds[thread.track]), int(index.track_bounds[thread.track + 1])
    order = lo + np.argsort(index.start_ps[lo:hi], kind="stable")
    return [index.names[int(index.name_id[i])] for i in order]


def _event_id(trace: TraceSet, name: str) -> int:
    index = trace.hosts[0].index
    return next(i for i in range(len(index)) if index.names[int(index.name_id[i])] == name)


def test_trace_names_tpu_ops_by_display_name_with_the_hlo_text_as_long_name() -> None:
    trace = trace_set({"h": decode_xspace(_tpu_space())})
    # Reference trace_viewer: the same names, in the same order.
    assert _track_names(trace, "XLA Ops") == [
        "copy-done.4", "fusion.1", "copy-done.5", "dot.2", "copy-done.2", "broadcast.7"]
    # The reference leaves this async op out of its trace; named here as the XLA Ops are.
    assert _track_names(trace, "Async XLA Ops") == ["copy-start.3"]
    assert _track_names(trace, "XLA Modules") == ["jit_f(1219)"]  # no display name: its name
    details = event_details(trace, _event_id(trace, "broadcast.7"))["event"]
    # Reference: args.long_name is the metadata's name, the whole HLO instruction.
    assert details["long_name"] == ("%broadcast.7 = f32[5,1024]{1,0} "
                                    "broadcast(f32[5,1024]{1,0} %p0)")
    assert details["stats"]["tf_op"] == "jit(f)/broadcast_in_dim[shape=(5, 1024)]:"
    assert details["stats"]["device_duration_ps"] == 10 * US
    async_details = event_details(trace, _event_id(trace, "copy-start.3"))["event"]
    assert async_details["long_name"].startswith("%copy-start.3 = (f32[5,1024]")
    found = search(trace, "copy-done", None, None)
    assert found["total_matches"] == 3 and found["match"]["name"] == "copy-done.4"


def test_host_events_keep_their_names_and_long_names() -> None:
    b = XSpaceBuilder()
    b.plane("/host:CPU", plane_id=0).line("python", line_id=1).event(
        "dense/MatMul:MatMul", 0, 10 * US, display_name="MatMul")
    trace = trace_set({"h": decode_xspace(b.serialize())})
    assert _track_names(trace, "python") == ["dense/MatMul:MatMul"]
    assert event_details(trace, 0)["event"]["long_name"] == "MatMul"


def test_op_tables_name_tpu_ops_by_the_jax_op_path() -> None:
    analysis = analyze(decode_xspace(_tpu_space()))
    ops = analysis.ops.device_tf_ops
    rows = {name: (ops.type[k], int(ops.self_ps[k]) / US) for k, name in enumerate(ops.name)}
    # Reference framework_op_stats on this file (operation, type, self time us): the same
    # names and self times; types where the tf_op writes a ":" (`add`, `copy_p`,
    # `broadcast_in_dim`). Where it writes none the reference says "Unknown" and the op is
    # typed here by its hlo_category.
    assert rows == {
        "jit(f)/copy4": ("data formatting", 300.0),
        "copy-done.2": ("data formatting", 250.0),
        "jit(f)/jvp(g)/copy5": ("copy_p", 200.0),
        "jit(f)/dot_general": ("convolution", 100.0),
        "jit(f)/add": ("add", 50.0),
        "jit(f)/broadcast_in_dim[shape=(5, 1024)]": ("broadcast_in_dim", 10.0),
    }
    assert analysis.ops.device.idle_ps == 60 * US  # reference IDLE 60 us
    assert not [n for n in ops.name + analysis.ops.device.name if n.endswith(":")]
    top = top_ops(ops, facts=analysis.ops.device_op_facts)
    assert [(r["name"], r["type"]) for r in top[:3]] == [
        ("jit(f)/copy4", "data formatting"), ("copy-done.2", "data formatting"),
        ("jit(f)/jvp(g)/copy5", "copy_p")]


def test_split_jax_op_reads_tf_op_as_the_reference() -> None:
    # (tf_op, reference operation, reference type; "" = "Unknown"), xprof 2.24.2
    # framework_op_stats on XLA Ops events carrying each tf_op.
    cases = [
        ("jit(f)/dot_general:", "jit(f)/dot_general", "dot_general"),
        ("jit(f)/jvp(g)/mul:", "jit(f)/jvp(g)/mul", "mul"),
        ("jit(f)/transpose[permutation=(1, 0)]:", "jit(f)/transpose[permutation=(1, 0)]",
         "transpose"),
        ("jit(f)/reduce_sum:", "jit(f)/reduce_sum", "reduce_sum"),
        ("jit(train_step)/jvp(MLP)/Dense_0/dot_general:",
         "jit(train_step)/jvp(MLP)/Dense_0/dot_general", "dot_general"),
        ("jit(f)/copy.3:", "jit(f)/copy.3", "copy.3"),
        ("jit(f)/while/body/add_any:", "jit(f)/while/body/add_any", "add_any"),
        ("jit(f):", "jit(f)", "jit(f)"),
        ("broadcast_in_dim:", "broadcast_in_dim", "broadcast_in_dim"),
        ("jit(f)/pjit[name=g]:", "jit(f)/pjit[name=g]", "pjit"),
        ("jit(f)/Mul:Mul", "jit(f)/Mul:Mul", ""),
        ("jit(f)/rng_bit_generator", "jit(f)/rng_bit_generator", ""),
        ("jit(f)/jvp(g)/copy5:copy_p", "jit(f)/jvp(g)/copy5", "copy_p"),
        ("jit(f)/add_1:", "jit(f)/add_1", "add"),
        ("jit(f)/MatMul_2:", "jit(f)/MatMul_2", "MatMul"),
    ]
    assert [split_jax_op(text) for text, _, _ in cases] == [(n, t) for _, n, t in cases]
