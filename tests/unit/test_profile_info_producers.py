"""profile_info's lines table on each producer's layout: `derived` and `kind` from
`producers.kind_of`, whatever form the line id takes (TF <= 2.4 sign-extended, TPU small ids)."""

from __future__ import annotations

from tb_profile_plugin.tools.profile_info import build, lines_table
from tb_profile_plugin.tools.registry import ViewRequest
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import (
    TF24_NAME_SCOPE_LINE_ID,
    TF24_STEPS_LINE_ID,
    TF24_TF_OPS_LINE_ID,
    XSpaceBuilder,
    tf24_derived_lines,
)


def _space() -> bytes:
    """One host thread, a TF 2.4 GPU (stream + its three derived lines), a TPU's XLA lines."""
    b = XSpaceBuilder()
    b.plane("/host:CPU").line("python", line_id=7).event("train", 0, 100, step_num=1, _r=1)
    gpu = b.gpu_plane(0)
    gpu.line("Stream #14(Kernel)", line_id=14).kernel(
        "volta_sgemm", 10, 50, correlation_id=1, group_id=0,
        **{"level 0": "dense/MatMul:MatMul"})
    steps, ops, scopes = tf24_derived_lines(gpu)
    steps.event("0", 10, 50, group_id=0)
    ops.event("dense/MatMul:MatMul", 10, 50)
    scopes.event("dense", 10, 50)
    tpu = b.plane("/device:TPU:0", plane_id=9)
    tpu.line("XLA Modules", line_id=2).event("jit_f(1)", 0, 40, run_id=3)
    tpu.line("XLA Ops", line_id=3).event("%fusion.1 = f32[] fusion()", 0, 30,
                                        display_name="fusion.1")
    tpu.line("Async XLA Ops", line_id=4).event("copy-start.1", 0, 5)
    tpu.line("XLA TraceMe", line_id=6).event("ThunkExecute", 0, 40)
    return b.serialize()


def test_lines_table_marks_producer_lines_derived_with_their_kind() -> None:
    doc = build(ViewRequest("run", "h", {"h": decode_xspace(_space())}, {}))
    header, rows = lines_table(doc)
    assert header[-1] == "kind" and header[:5] == ["host", "plane", "line_id", "line", "derived"]
    col = {name: header.index(name) for name in header}
    got = sorted((r[col["plane"]], r[col["line_id"]], r[col["line"]], r[col["derived"]],
                  r[col["kind"]], r[col["events"]]) for r in rows)
    assert got == sorted([
        ("/host:CPU", 7, "python", False, "thread", 1),
        ("/device:GPU:0", 14, "Stream #14(Kernel)", False, "stream", 1),
        ("/device:GPU:0", TF24_STEPS_LINE_ID, "Steps", True, "steps", 1),
        ("/device:GPU:0", TF24_TF_OPS_LINE_ID, "TensorFlow Ops", True, "derived", 1),
        ("/device:GPU:0", TF24_NAME_SCOPE_LINE_ID, "TensorFlow Name Scope", True, "derived", 1),
        ("/device:TPU:0", 2, "XLA Modules", True, "xla_modules", 1),
        ("/device:TPU:0", 3, "XLA Ops", False, "xla_ops", 1),
        ("/device:TPU:0", 4, "Async XLA Ops", True, "derived", 1),
        ("/device:TPU:0", 6, "XLA TraceMe", True, "derived", 1),
    ])
    assert all(r[0] == "h" for r in rows)
