"""Trace tracks on the layouts real producers write: their derived lines once, XLA tracks.

Rules under test (trace/index.py, trace/derived.py): lines are classified by
`producers.kind_of` only, whatever their id form; the producer's lines are shown once, above
the streams, in the order Steps, XLA Modules, ops lines; a GPU plane gets a derived track only
for the names the producer did not write; derived op runs never merge across executions.
"""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.tools.profile_info import _line_row
from tb_profile_plugin.trace.details import event_details
from tb_profile_plugin.trace.index import TraceIndex, build_index
from tb_profile_plugin.trace.window import trace_set
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR
from tests.xspace_builder import (
    TF24_NAME_SCOPE_LINE_ID,
    TF24_STEPS_LINE_ID,
    TF24_TF_OPS_LINE_ID,
    Ref,
    XSpaceBuilder,
    tf24_gpu_space,
)

US = 1_000_000


def _threads(index: TraceIndex, plane: str) -> list[tuple[str, bool]]:
    """(track name, derived by the index) of one plane's process, in display order."""
    process = next(p for p in index.processes if p.name == plane)
    return [(t.name, t.derived) for t in process.threads]


def _events(index: TraceIndex, plane: str, track: str) -> list[tuple[str, int, int]]:
    """(name, start us, end us) of one track's events, by start."""
    process = next(p for p in index.processes if p.name == plane)
    thread = next(t for t in process.threads if t.name == track)
    lo, hi = index.track_bounds[thread.track], index.track_bounds[thread.track + 1]
    order = lo + np.lexsort((index.end_ps[lo:hi], index.start_ps[lo:hi]))
    return [(index.names[int(index.name_id[i])], int(index.start_ps[i]) // US,
             int(index.end_ps[i]) // US) for i in order]


# --------------------------------------------------------------------------------------------
# TensorFlow <= 2.4 on GPU: the producer's Steps / TensorFlow Ops / Name Scope lines


def test_tf24_producer_lines_shown_once_per_gpu_above_the_stream() -> None:
    index = build_index(decode_xspace(tf24_gpu_space()))
    for plane in ("/device:GPU:0", "/device:GPU:1"):
        assert _threads(index, plane) == [
            ("Steps", False), ("TensorFlow Ops", False), ("TensorFlow Name Scope", False),
            ("Stream #14(Kernel)", False)]
        assert _events(index, plane, "Steps") == [("0", 10, 250)]
        assert _events(index, plane, "TensorFlow Ops") == [
            ("dense/MatMul:MatMul", 10, 110), ("dense/MatMul:MatMul", 200, 250)]
    assert index.num_derived_events == 0


def test_tf24_plane_derives_only_the_tracks_the_producer_did_not_write() -> None:
    """Per track, not all-or-nothing: own Steps and TF Ops, derived XLA Modules and XLA Ops."""
    index = build_index(decode_xspace(tf24_gpu_space(num_gpus=1, hlo=True)))
    assert _threads(index, "/device:GPU:0") == [
        ("Steps", False), ("XLA Modules", True), ("TensorFlow Ops", False), ("XLA Ops", True),
        ("TensorFlow Name Scope", False), ("Stream #14(Kernel)", False)]
    # One module in one step: one execution; the two dot.1 kernels are adjacent in time order
    # (nothing else runs between them on the plane), so one XLA Ops run.
    assert _events(index, "/device:GPU:0", "XLA Modules") == [("cluster_0", 10, 250)]
    assert _events(index, "/device:GPU:0", "XLA Ops") == [("dot.1", 10, 250)]
    assert index.num_derived_events == 2


def test_tf24_lines_marked_derived_in_profile_info() -> None:
    profile = decode_xspace(tf24_gpu_space(num_gpus=1))
    gpu = profile.planes[0]
    rows = {row["line_id"]: (row["line"], row["derived"], row["kind"])
            for row in (_line_row(gpu, line) for line in gpu.lines)}
    assert rows == {
        14: ("Stream #14(Kernel)", False, "stream"),
        TF24_STEPS_LINE_ID: ("Steps", True, "steps"),
        TF24_TF_OPS_LINE_ID: ("TensorFlow Ops", True, "derived"),
        TF24_NAME_SCOPE_LINE_ID: ("TensorFlow Name Scope", True, "derived"),
    }


# --------------------------------------------------------------------------------------------
# JAX on GPU: tf_op = "XlaModule:" on every kernel; ops are JAX paths; two executions of jit_f


def _jax_space(run_ids: tuple[int, int] | None, second_at: int) -> bytes:
    """Two executions of jit_f (the second starting `second_at` us after the first). Per
    execution: dot_general as two kernels of dot.1, add, dot_general again (dot.1 again).
    `run_ids`: the kernels carry XLA's run_id; None (as JAX GPU captures): they don't, and an
    argument copy of no module runs between the executions."""
    b = XSpaceBuilder()
    gpu = b.gpu_plane(0)
    s = gpu.line("Stream #1(Kernel)", line_id=1)
    common = {"tf_op": "XlaModule:", "hlo_module": "jit_f", "program_id": 42}
    dot, add = {"name": Ref("jit(f)/dot_general")}, {"name": Ref("jit(f)/add")}
    for n, base in enumerate((0, second_at)):
        run = {"run_id": run_ids[n]} if run_ids else {}
        t0 = base * US
        s.kernel("gemm", t0, 10 * US, 10 * n + 1, hlo_op="dot.1", **dot, **common, **run)
        s.kernel("gemm_epilogue", t0 + 10 * US, 2 * US, 10 * n + 2, hlo_op="dot.1", **dot,
                 **common, **run)
        s.kernel("add_k", t0 + 14 * US, 3 * US, 10 * n + 3, hlo_op="add.2", **add, **common,
                 **run)
        s.kernel("gemm", t0 + 18 * US, 7 * US, 10 * n + 4, hlo_op="dot.1", **dot, **common,
                 **run)
    if run_ids is None:
        copies = gpu.line("Stream #2(MemcpyH2D)", line_id=2)
        copies.memcpy("HtoD", 60 * US, 2 * US, correlation_id=99, num_bytes=4096)
    return b.serialize()


def test_jax_gpu_tracks_without_run_id_split_at_the_argument_copy() -> None:
    index = build_index(decode_xspace(_jax_space(None, second_at=100)))
    gpu = "/device:GPU:0"
    assert _threads(index, gpu) == [
        ("Steps", True), ("Steps: device busy", True), ("XLA Modules", True),
        ("Framework Ops", True), ("XLA Ops", True),
        ("Stream #1(Kernel)", False), ("Stream #2(MemcpyH2D)", False)]
    # No step marker: jit_f's two executions are the steps, each from one call's start to the
    # next's (the overview's spans, drawn as the Steps bars); step 0's device work holds the
    # argument copy at 60-62 us.
    assert _events(index, gpu, "Steps") == [("0", 0, 100), ("1", 100, 125)]
    assert _events(index, gpu, "Steps: device busy") == [("0", 0, 62), ("1", 100, 125)]
    assert _events(index, gpu, "XLA Modules") == [("jit_f", 0, 25), ("jit_f", 100, 125)]
    runs = [("jit(f)/dot_general", 0, 12), ("jit(f)/add", 14, 17), ("jit(f)/dot_general", 18, 25)]
    # The last op of the first execution is the first of the second: still two runs.
    assert _events(index, gpu, "Framework Ops") == runs + [
        (name, start + 100, end + 100) for name, start, end in runs]
    hlo = [("dot.1", 0, 12), ("add.2", 14, 17), ("dot.1", 18, 25)]
    assert _events(index, gpu, "XLA Ops") == hlo + [
        (name, start + 100, end + 100) for name, start, end in hlo]
    assert index.num_derived_events == 2 + 2 + 2 + 6 + 6
    assert not any("XlaModule" in index.names[int(i)] for i in np.unique(index.name_id))


def test_jax_gpu_back_to_back_executions_told_apart_by_run_id() -> None:
    index = build_index(decode_xspace(_jax_space((7, 8), second_at=25)))
    gpu = "/device:GPU:0"
    assert _events(index, gpu, "XLA Modules") == [("jit_f", 0, 25), ("jit_f", 25, 50)]
    assert _events(index, gpu, "Framework Ops")[2:4] == [
        ("jit(f)/dot_general", 18, 25), ("jit(f)/dot_general", 25, 37)]
    assert _events(index, gpu, "XLA Ops")[2:4] == [("dot.1", 18, 25), ("dot.1", 25, 37)]


def test_derived_module_event_details_name_the_first_kernel() -> None:
    trace = trace_set({"h": decode_xspace(_jax_space(None, second_at=100))})
    index = trace.hosts[0].index
    thread = next(t for t in index.tracks if t.name == "XLA Modules")
    second = int(index.track_bounds[thread.track]) + 1
    details = event_details(trace, second)["event"]
    assert details["thread"] == "XLA Modules" and details["name"] == "jit_f"
    assert details["stats"]["derived_from"] == "Stream #1(Kernel)"
    assert details["stats"]["first_event"] == "gemm"
    first_kernel = details["stats"]["first_event_id"]
    assert int(index.start_ps[first_kernel]) == 100 * US


def test_real_jax_gpu_capture_modules_split_per_execution() -> None:
    """jax_gpu_conv: 5 calls of jit_forward_3d_conv per GPU, argument copies between them."""
    path = next((DATA_DIR / "jax_gpu_conv").glob("plugins/profile/*/*.xplane.pb"))
    index = build_index(decode_xspace(path.read_bytes()))
    gpus = [p for p in index.processes if p.name.startswith("/device:GPU:")]
    assert len(gpus) == 8
    for process in gpus:
        names = [t.name for t in process.threads]
        assert names[:5] == ["Steps", "Steps: device busy", "XLA Modules", "Framework Ops",
                             "XLA Ops"]
        assert "TensorFlow Ops" not in names and names.count("XLA Modules") == 1
    for process in gpus:
        modules = _events(index, process.name, "XLA Modules")
        # Five executions, each told by the host call that launched its kernels
        # (`jit_forward_3d_conv:XLA GPU module`): a copy another thread issued between two
        # kernels of one call does not cut it.
        assert len(modules) == 5 and {name for name, _, _ in modules} == {"jit_forward_3d_conv"}
        assert max(end - start for _, start, end in modules) < 2_000  # us; the capture is 95 ms
    assert [(start, end) for _, start, end in _events(index, "/device:GPU:0", "XLA Modules")] \
        == [(45319, 46151), (62309, 63348), (88473, 89788), (92625, 93378), (138207, 140045)]


@pytest.mark.parametrize("fixture", ["jax_gpu_conv", "jax_gpu_attention"])
def test_real_jax_gpu_steps_track_shows_the_overviews_execution_steps(fixture: str) -> None:
    """No step markers: the steps are the jitted step function's executions (the overview's
    rule "executions"); every GPU draws them, numbered as the overview numbers them, each bar
    from the GPU's first to its last event of that step."""
    path = next((DATA_DIR / fixture).glob("plugins/profile/*/*.xplane.pb"))
    profile = decode_xspace(path.read_bytes())
    steps = analyze(profile).steps
    assert analyze(profile).root_rule == "executions" and len(steps) == 5
    begin = steps.begin_ps.tolist()
    next_begin = [*begin[1:], begin[-1] + int(steps.duration_ps[-1])]
    index = build_index(profile)
    gpus = [p.name for p in index.processes if p.name.startswith("/device:GPU:")]
    assert gpus
    for gpu in gpus:
        assert [t.name for t in next(p for p in index.processes if p.name == gpu).threads
                ].count("Steps") == 1
        bars = _events(index, gpu, "Steps")
        assert [name for name, _, _ in bars] == [str(n) for n in steps.step_num.tolist()]
        for (_, start_us, _), lo_ps, hi_ps in zip(bars, begin, next_begin, strict=True):
            assert lo_ps // US <= start_us < hi_ps // US + 1


# --------------------------------------------------------------------------------------------
# XLA on TPU: the producer's XLA Modules (id 2) and XLA Ops (id 3) lines


def test_tpu_lines_shown_once_without_derived_duplicates() -> None:
    b = XSpaceBuilder()
    tpu = b.plane("/device:TPU:0", plane_id=1)
    ops = tpu.line("XLA Ops", line_id=3)
    modules = tpu.line("XLA Modules", line_id=2)
    trace_me = tpu.line("XLA TraceMe", line_id=6)
    modules.event("jit_f(1219)", 0, 30 * US, run_id=5)
    text = "%fusion.3 = f32[8]{0} fusion(%p0), kind=kLoop"
    tpu.metadata_stats(text, display_name="fusion.3", hlo_category="loop fusion",
                       tf_op="jit(f)/add")
    ops.event(text, 0, 10 * US, display_name="fusion.3")
    ops.event(text, 12 * US, 10 * US, display_name="fusion.3")
    trace_me.event("ThunkExecute", 0, 30 * US)
    index = build_index(decode_xspace(b.serialize()))
    assert _threads(index, "/device:TPU:0") == [
        ("XLA Modules", False), ("XLA Ops", False), ("XLA TraceMe", False)]
    assert _events(index, "/device:TPU:0", "XLA Modules") == [("jit_f(1219)", 0, 30)]
    assert [e[1:] for e in _events(index, "/device:TPU:0", "XLA Ops")] == [(0, 10), (12, 22)]
    assert index.num_derived_events == 0
