"""Derived op bars never bridge idle time their op's work does not justify (issue 28).

A real TF 2.4 capture of 8 NVIDIA GPUs drew on GPU:1 one 13.4 ms "MakeTensorFromProto" bar in
the derived TensorFlow Ops track over only 33.8 us of host-to-device copies: consecutive device
events of one op (same execution and step) were joined whatever the idle time between them.
Rule under test (trace/derived.py, "Idle within an op bar"): an op bar bridges the idle stretch
between two consecutive events of its op only when it is at most 4x the bar's busy time (its
events' summed durations), cutting again inside each piece until no bar holds a longer one;
back-to-back kernels of one op stay one bar, and Steps / XLA Modules are not cut.

The layout copies what TF 2.4 writes (shared/reference/producers.md, "TensorFlow on GPU"): a
`/device:GPU:N` plane with `Stream #N(MemcpyH2D)` and `Stream #M(Kernel)` lines, events with
`correlation_id` and `group_id`, the op in the `level 0` stat as `name:Type`; GPU:0 carries the
producer's own derived lines (sign-extended ids), GPU:1 none, so GPU:1's are derived.
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.trace.derived import STEPS, TF_OPS, XLA_OPS, DerivedTrack, derive_tracks
from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.xspace_builder import XSpaceBuilder, tf24_derived_lines

US = 1_000_000  # ps
NS = 1_000  # ps

MAKE_TENSOR = "MakeTensorFromProto:MakeTensorFromProto"
MATMUL = "dense/MatMul:MatMul"
CONV = "conv2d/Conv2D:Conv2D"
RELU = "dense/Relu:Relu"
RELU_1 = "dense_1/Relu:Relu"

#: GPU:1's MakeTensorFromProto copies: (start, duration) in ns; 33.8 us in all over 13.4 ms.
COPIES_NS = [(0, 4_200), (1_900_000, 4_300), (3_800_000, 4_100), (5_700_000, 4_200),
             (7_600_000, 4_300), (9_500_000, 4_200), (11_400_000, 4_300),
             (13_395_800, 4_200)]


def _op(op: str, **stats: object) -> dict[str, object]:
    """The stats TF 2.4 puts on a device event of `op` in step 0."""
    return {"group_id": 0, "level 0": op, **stats}


def _tf24_two_gpus() -> Profile:
    """GPU:0 with the producer's own lines, GPU:1 without; GPU:1 holds (times in us):

    * MakeTensorFromProto copies (MemcpyH2D stream) at 0, 1900, …, 13395.8: 33.8 us of work
      over 13.4 ms, with the device idle between them except an unlabelled 1.5 ms kernel (no
      `level 0`: an event of no op) at 4000;
    * after them, MatMul as three back-to-back kernels at 13500, 13530.5, 13561 (30 us each,
      0.5 us launch gaps): one bar;
    * Conv2D as a 0.8 us kernel, 38 us idle while the host prepares the next launch, then a
      28 us kernel (as a cuDNN conv's memset and kernel): 38 <= 4 x 28.8, one bar;
    * dense/Relu as two 10 us kernels with 80 us idle between at 14000 (80 = 4 x 20: bridged),
      then dense_1/Relu as two more with 81 us idle between at 14200 (81 > 4 x 20: cut)."""
    b = XSpaceBuilder(hostnames=["tf24-8gpu"])
    gpu0 = b.gpu_plane(0, model="Tesla V100-SXM2-16GB")
    stream0 = gpu0.line("Stream #14(Kernel)", line_id=14)
    stream0.kernel("volta_sgemm", 10 * US, 100 * US, correlation_id=1, **_op(MATMUL))
    steps0, ops0, _scopes0 = tf24_derived_lines(gpu0)
    steps0.event("0", 10 * US, 100 * US, group_id=0, step_name="0")
    ops0.event(MATMUL, 10 * US, 100 * US)

    gpu1 = b.gpu_plane(1, model="Tesla V100-SXM2-16GB")
    copies = gpu1.line("Stream #13(MemcpyH2D)", line_id=13)
    kernels = gpu1.line("Stream #14(Kernel)", line_id=14)
    corr = 100
    for start_ns, dur_ns in COPIES_NS:
        corr += 1
        copies.memcpy("HtoD", start_ns * NS, dur_ns * NS, corr, num_bytes=4096,
                      **_op(MAKE_TENSOR, annotation=f"{MAKE_TENSOR}#shape=(1024)#"))
    kernels.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 4_000 * US, 1_500 * US,
                   correlation_id=200, group_id=0)
    for k, start_ns in enumerate((13_500_000, 13_530_500, 13_561_000)):
        kernels.kernel("volta_sgemm_128x64_nn", start_ns * NS, 30 * US, 300 + k, **_op(MATMUL))
    kernels.kernel("cudnn::gemm::computeOffsetsKernel", 13_700 * US, 800 * NS, 400,
                   **_op(CONV))
    kernels.kernel("volta_scudnn_128x64_relu", 13_738_800 * NS, 28 * US, 401, **_op(CONV))
    for k, (start_us, op) in enumerate(((14_000, RELU), (14_090, RELU), (14_200, RELU_1),
                                        (14_291, RELU_1))):
        kernels.kernel("Eigen_relu", start_us * US, 10 * US, 500 + k, **_op(op))
    return decode_xspace(b.serialize())


def _plane(profile: Profile, name: str) -> int:
    return next(i for i, p in enumerate(profile.planes) if p.name == name)


def _track(tracks: list[DerivedTrack], name: str) -> list[tuple[str, int, int]]:
    """(name, start ns, end ns) of one derived track's events, by start."""
    track = next(t for t in tracks if t.name == name)
    order = np.argsort(track.start_ps, kind="stable")
    return [(track.texts[int(track.text_id[i])], int(track.start_ps[i]) // NS,
             int(track.end_ps[i]) // NS) for i in order]


def test_make_tensor_bars_cover_only_the_copies() -> None:
    profile = _tf24_two_gpus()
    tracks = derive_tracks(profile, _plane(profile, "/device:GPU:1"))
    bars = [(s, e) for name, s, e in _track(tracks, TF_OPS) if name == MAKE_TENSOR]
    # One bar per copy: no 13.4 ms bar, not even across the unlabelled 1.5 ms kernel.
    assert bars == [(s, s + d) for s, d in COPIES_NS]
    assert sum(e - s for s, e in bars) == 33_800  # ns: 33.8 us, the copies' own time
    assert max(e - s for s, e in bars) == 4_300


def test_back_to_back_and_justified_idle_stay_one_bar() -> None:
    profile = _tf24_two_gpus()
    tracks = derive_tracks(profile, _plane(profile, "/device:GPU:1"))
    others = [bar for bar in _track(tracks, TF_OPS) if bar[0] != MAKE_TENSOR]
    assert others == [
        (MATMUL, 13_500_000, 13_591_000),  # three back-to-back kernels
        (CONV, 13_700_000, 13_766_800),  # 0.8 us + 38 us idle + 28 us: one execution
        (RELU, 14_000_000, 14_100_000),  # 80 us idle = 4 x 20 us busy: bridged
        (RELU_1, 14_200_000, 14_210_000),  # 81 us idle > 4 x 20 us busy: cut
        (RELU_1, 14_291_000, 14_301_000),
    ]


def test_steps_still_span_the_whole_step() -> None:
    """The rule is for op bars: the step's bar spans all of its device events, idle included."""
    profile = _tf24_two_gpus()
    tracks = derive_tracks(profile, _plane(profile, "/device:GPU:1"))
    assert _track(tracks, STEPS) == [("0", 0, 14_301_000)]


def test_cut_pieces_are_checked_again_against_their_own_work() -> None:
    """Events of one op (us): A 10 at 0, B 1 at 70, C 200 at 971, D 1 at 4171. On the whole
    run (212 us busy) only the 900 and 3000 us stretches are too long; then piece A..B has
    11 us of work for 60 us of idle (> 44): cut too. Without the second round A..B would be
    one bar mostly idle."""
    b = XSpaceBuilder()
    gpu = b.gpu_plane(0)
    stream = gpu.line("Stream #14(Kernel)", line_id=14)
    for k, (start, dur) in enumerate(((0, 10), (70, 1), (971, 200), (4_171, 1))):
        stream.kernel("k", start * US, dur * US, correlation_id=k + 1, **_op(CONV))
    profile = decode_xspace(b.serialize())
    bars = _track(derive_tracks(profile, 0), TF_OPS)
    assert [(s // 1000, e // 1000) for _, s, e in bars] == [
        (0, 10), (70, 71), (971, 1_171), (4_171, 4_172)]


def test_xla_ops_bars_follow_the_same_rule() -> None:
    """An HLO op's kernels 2 ms apart with 20 us of work: two XLA Ops bars, one module bar."""
    b = XSpaceBuilder()
    gpu = b.gpu_plane(0)
    stream = gpu.line("Stream #14(Kernel)", line_id=14)
    xla = {"hlo_op": "copy.1", "hlo_module": "cluster_0", "group_id": 0}
    stream.kernel("copy_kernel", 0, 10 * US, correlation_id=1, **xla)
    stream.kernel("copy_kernel", 2_010 * US, 10 * US, correlation_id=2, **xla)
    profile = decode_xspace(b.serialize())
    tracks = derive_tracks(profile, 0)
    assert _track(tracks, XLA_OPS) == [("copy.1", 0, 10_000), ("copy.1", 2_010_000, 2_020_000)]
    assert [(s, e) for _, s, e in _track(tracks, "XLA Modules")] == [(0, 2_020_000)]


def test_trace_index_shows_gpu1_derived_make_tensor_bars() -> None:
    """Through the index: GPU:1's TensorFlow Ops track is derived and holds the 8 copy bars;
    GPU:0 keeps the producer's own line."""
    index = build_index(_tf24_two_gpus())
    gpu1 = next(p for p in index.processes if p.name == "/device:GPU:1")
    thread = next(t for t in gpu1.threads if t.name == TF_OPS)
    assert thread.derived
    lo, hi = index.track_bounds[thread.track], index.track_bounds[thread.track + 1]
    names = [index.names[int(index.name_id[i])] for i in range(lo, hi)]
    spans = (index.end_ps[lo:hi] - index.start_ps[lo:hi])[np.array(names) == MAKE_TENSOR]
    assert len(spans) == len(COPIES_NS)
    assert int(spans.sum()) == 33_800 * NS
    gpu0 = next(p for p in index.processes if p.name == "/device:GPU:0")
    assert not next(t for t in gpu0.threads if t.name == TF_OPS).derived
