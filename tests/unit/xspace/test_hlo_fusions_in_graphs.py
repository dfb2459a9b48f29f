"""Fusion kernels that XLA replays inside a CUDA graph take the fusion at their place in the
module's schedule, not the fusion their name names (xspace/hlo_modules.py,
`HloInstructions.instructions_in_graph`; xspace/producers/columns.py).

XLA compiles one kernel for identical fusions and names it after the first: resolved by name,
every run of `loop_transpose_fusion_1` counted for `loop_transpose_fusion.1`, also the runs it
made for `loop_transpose_fusion`. Wherever a replay pairs exactly with the schedule (every
replay of the committed H200 captures), each kernel now takes its own slot's instruction;
each fusion kernel's `cuda_graph_node_id` confirms the slot.

Before / after on the committed H200 captures (device time unchanged; per op, in µs):

| capture                 | fusion kernel events whose HLO op changes | events whose op changes |
|-------------------------|-------------------------------------------|-------------------------|
| jax_nvidia_device_bound | 1278 of 1608                              | 162 (833.090 µs)        |
| jax_nvidia_train        | 6 of 258                                  | 6 (21.150 µs)           |

On jax_nvidia_device_bound, `jit(train_step)/transpose(jvp(vmap(BTNH,BSNH->BNTS)))/
convert_element_type` 676.929 (102 events) -> 424.835 µs (60), `jit_train_step/
wrapped_concatenate.11` 407.358 (36) -> 68.672 µs (6), the time going to the fusions it
ran for that XLA made without a framework op (five concatenations, seven
`loop_transpose_fusion.N`, five `input_transpose_fusion.N`, ten `loop_convert_fusion.N`:
op rows 23 -> 50); the eight top ops keep their times.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tb_profile_plugin.xspace.hlo_modules import HloInstructions, hlo_instructions
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.pb import hlo_summary_pb2
from tb_profile_plugin.xspace.producers import canonical_columns
from tb_profile_plugin.xspace.schema import METADATA_PLANE_NAME
from tests.unit.xspace.test_hlo_cublas_in_graphs import _profile, _replays

MODULE = "jit_train_step"
PS_PER_US = 1_000_000


@pytest.mark.parametrize(("fixture", "fusions", "renamed"), [
    ("jax_nvidia_device_bound", 268, 213),
    ("jax_nvidia_train", 43, 1),
])
def test_each_fusion_kernel_takes_the_fusion_at_its_graph_node(
        fixture: str, fusions: int, renamed: int) -> None:
    profile = _profile(fixture)
    hlo = HloInstructions.of(profile)
    replays = _replays(profile)
    assert len(replays) == 6
    for (program, _), ran in replays.items():
        module = hlo.module(program)
        assert module is not None
        names = [name for name, _ in ran]
        found = hlo.instructions_in_graph(program, names)
        library = hlo.library_calls_in_graph(program, names)
        assert all((ins is None) == name.startswith("Memset")
                   for name, ins in zip(names, found, strict=True))
        # cuBLAS kernels take the same custom-calls as before.
        assert [lib for lib in library if lib] == [
            ins for ins, lib in zip(found, library, strict=True) if lib]
        fusion = [(name, node, ins) for (name, node), ins, lib
                  in zip(ran, found, library, strict=True) if ins is not None and lib is None]
        assert len(fusion) == fusions
        base = min(node for _, node in ran)
        # The graph's node ids, independent of the order the kernels ran in, say the same.
        assert all(module.launches[node - base].instruction == ins for _, node, ins in fusion)
        # Every launching instruction once per replay.
        assert len({ins.name for ins in found if ins}) == len(module.launches)
        other = [(name, ins.name) for name, _, ins in fusion
                 if name != ins.name.replace(".", "_")]
        assert len(other) == renamed
        fused = module.fused or {}
        assert all(fused[name] == fused[ins.replace(".", "_")] for name, ins in other)
        if fixture == "jax_nvidia_train":
            assert other == [("loop_transpose_fusion_1", "loop_transpose_fusion")]


def test_a_replay_that_does_not_pair_takes_no_slot() -> None:
    profile = _profile("jax_nvidia_device_bound")
    hlo = HloInstructions.of(profile)
    program, ran = next((p, r) for (p, _), r in _replays(profile).items())
    names = [name for name, _ in ran]
    first = next(k for k, name in enumerate(names) if not name.startswith("Memset"))
    for kernels in (names[:first] + names[first + 1:], names + ["fusion_368"],
                    [names[first + 1] if k == first else n for k, n in enumerate(names)]):
        assert hlo.instructions_in_graph(program, kernels) == [None] * len(kernels)
    assert hlo.instructions_in_graph("no_such_module", names) == [None] * len(names)


def _columns(profile: Profile) -> tuple[dict[str, np.ndarray], np.ndarray]:
    lines = [(plane, line) for plane in profile.planes if plane.name.startswith("/device:GPU")
             for line in plane.lines]
    columns = canonical_columns(lines, hlo_instructions(profile))
    texts = columns.texts
    text = {key: np.array([texts[k] if k >= 0 else "" for k in getattr(columns, key).tolist()])
            for key in ("kernel", "hlo_op", "op_name", "module")}
    return text, columns.device_duration_ps


def _library_or_memset(kernel: np.ndarray) -> np.ndarray:
    return np.char.startswith(kernel, "nvjet_") | np.char.startswith(kernel, "Memset")


def _by_name(profile: Profile, text: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The HLO op and op the fusion kernels in the graph took before, from their names
    (`HloInstructions.resolve`): the reference for what changed."""
    hlo = hlo_instructions(profile)
    kernel, columns_hlo = text["kernel"], text["hlo_op"]
    before_hlo, before_op = columns_hlo.copy(), text["op_name"].copy()
    in_graph = ((text["module"] == MODULE) & (columns_hlo != "")
                & ~_library_or_memset(kernel))
    for name in np.unique(kernel[in_graph]).tolist():  # distinct kernels, not events
        _, ins = hlo.resolve(MODULE, "command_buffer_1", name)
        assert ins is not None
        rows = in_graph & (kernel == name)
        before_hlo[rows] = ins.name
        before_op[rows] = ins.op_name or f"{MODULE}/{ins.name}"
    return before_hlo, before_op


def _times(op: np.ndarray, time: np.ndarray) -> dict[str, tuple[float, int]]:
    names, inverse = np.unique(op, return_inverse=True)
    return {str(n): (round(float(t) / PS_PER_US, 3), int(c)) for n, t, c in zip(
        names, np.bincount(inverse, time), np.bincount(inverse), strict=True)}


def test_device_bound_ops_before_and_after() -> None:
    profile = _profile("jax_nvidia_device_bound")
    text, time = _columns(profile)
    kernel, hlo, op = text["kernel"], text["hlo_op"], text["op_name"]
    before_hlo, before_op = _by_name(profile, text)
    fusion = ((text["module"] == MODULE) & (hlo != "")
              & ~_library_or_memset(kernel))
    assert fusion.sum() == 1608
    assert (before_hlo != hlo).sum() == (before_hlo[fusion] != hlo[fusion]).sum() == 1278
    assert (before_op != op).sum() == 162
    assert time[before_op != op].sum() == 833_090_000
    ops = hlo != ""
    before, after = _times(before_op[ops], time[ops]), _times(op[ops], time[ops])
    assert len(before) == 23 and len(after) == 50
    # Device time is only moved between ops.
    assert time[ops].sum() == 31_303_582_000
    assert sum(t for t, _ in before.values()) == pytest.approx(31_303.582)
    assert sum(t for t, _ in after.values()) == pytest.approx(31_303.582)
    top = [(name, time_us) for name, (time_us, _) in
           sorted(after.items(), key=lambda kv: -kv[1][0])[:10]]
    assert top == [
        ("jit(train_step)/jvp()/dot_general", 5672.888),
        ("jit(train_step)/transpose(jvp())/dot_general", 5314.867),
        ("jit(train_step)/transpose(jvp())/transpose", 5313.629),
        ("jit(train_step)/transpose(jvp(vmap(jit(_where))))/select_n", 4107.026),
        ("jit(train_step)/transpose(jvp())/add_any", 2383.042),
        ("jit(train_step)/jvp()/mul", 1642.778),
        ("jit(train_step)/transpose(jvp(vmap(BTNH,BSNH->BNTS)))/dot_general", 1117.365),
        ("jit(train_step)/transpose(jvp(vmap(BNTS,BSNH->BTNH)))/dot_general", 840.001),
        ("jit(train_step)/jvp()/reduce_sum", 673.724),
        ("jit(train_step)/jvp(vmap(BTNH,BSNH->BNTS))/dot_general", 580.130),
    ]
    assert all(before[name][0] == t for name, t in top[:8])
    convert = "jit(train_step)/transpose(jvp(vmap(BTNH,BSNH->BNTS)))/convert_element_type"
    changed = {name: (before.get(name), after.get(name)) for name in before.keys() | after.keys()
               if before.get(name) != after.get(name)}
    assert changed[convert] == ((676.929, 102), (424.835, 60))  # 9th before, 15th after
    assert changed[f"{MODULE}/wrapped_concatenate.11"] == ((407.358, 36), (68.672, 6))
    assert changed[f"{MODULE}/input_transpose_fusion.9"] == ((211.137, 36), (34.785, 6))
    assert changed[f"{MODULE}/loop_convert_fusion.1"] == ((72.518, 66), (6.560, 6))
    assert changed[f"{MODULE}/wrapped_concatenate.8"] == (None, (68.959, 6))
    assert len(changed) == 31
    # Every launching instruction of the schedule now runs once a step (6 steps); by name,
    # 85 instructions took 6 to 96 kernel runs and 213 took none.
    module = hlo_instructions(profile).module(MODULE)
    assert module is not None
    runs = Counter(hlo[fusion | np.char.startswith(kernel, "nvjet_")].tolist())
    assert set(runs.values()) == {6} and len(runs) == len(module.launches) == 298
    runs_before = Counter(before_hlo[fusion].tolist())
    assert len(runs_before) == 55 and max(runs_before.values()) == 96


def test_train_ops_before_and_after() -> None:
    profile = _profile("jax_nvidia_train")
    text, time = _columns(profile)
    kernel, hlo, op = text["kernel"], text["hlo_op"], text["op_name"]
    before_hlo, before_op = _by_name(profile, text)
    changed = before_hlo != hlo
    assert changed.sum() == 6 and (before_op != op).sum() == 6
    assert set(kernel[changed].tolist()) == {"loop_transpose_fusion_1"}
    assert set(zip(before_hlo[changed].tolist(), hlo[changed].tolist(), strict=True)) == {
        ("loop_transpose_fusion.1", "loop_transpose_fusion")}
    ops = hlo != ""
    before, after = _times(before_op[ops], time[ops]), _times(op[ops], time[ops])
    assert time[ops].sum() == 2_252_280_000
    assert before[f"{MODULE}/loop_transpose_fusion.1"] == (44.543, 12)
    assert after[f"{MODULE}/loop_transpose_fusion.1"] == (23.393, 6)
    assert after[f"{MODULE}/loop_transpose_fusion"] == (21.150, 6)
    assert f"{MODULE}/loop_transpose_fusion" not in before
    assert {k: v for k, v in after.items() if not k.startswith(f"{MODULE}/loop_transpose")} \
        == {k: v for k, v in before.items() if not k.startswith(f"{MODULE}/loop_transpose")}


def _entry(profile: Profile) -> dict[str, tuple[object, ...]]:
    """`jit_train_step`'s entry instructions: name -> (opcode, fused computation, operand
    names), read from the HloProto apart from hlo_modules."""
    from tb_profile_plugin.xspace.hlo_modules import _fused_shape

    plane = profile.plane(METADATA_PLANE_NAME)
    assert plane is not None
    meta = plane.event_metadata
    stat = plane.stat_metadata.id_of("Hlo Proto")
    sub = meta.stats.select(stat, len(meta.ids))
    data = next(sub.python_value(k) for k in range(len(sub))
                if meta.names[int(sub.row[k])].startswith(MODULE + "("))
    assert isinstance(data, bytes)
    proto = hlo_summary_pb2.HloProto.FromString(data).hlo_module
    computations = {c.id: c for c in proto.computations}
    entry = next(c for c in proto.computations if c.name == proto.entry_computation_name)
    names = {i.id: i.name for i in entry.instructions}
    return {i.name: (i.opcode, _fused_shape(i, computations) if i.opcode == "fusion" else (),
                     tuple(names.get(o, "") for o in i.operand_ids)) for i in entry.instructions}


def test_train_fusions_run_as_often_and_as_long_as_without_graphs() -> None:
    """`jax_nvidia_train_nograph` ran the same program without CUDA graphs, each kernel with
    its real `hlo_op`; its compilation numbers some instructions differently, so only the
    instructions of the same name, fused computation and operands' names in both modules (36 of
    49 launching instructions) are compared: each runs 6 times in both, within 0.89-1.39x
    of the other's time (small kernels, another process). By name, `loop_transpose_fusion.1`
    ran 12 times for 1.81x its time and `loop_transpose_fusion` never."""
    graph, alone = _profile("jax_nvidia_train"), _profile("jax_nvidia_train_nograph")
    graph_entry, alone_entry = _entry(graph), _entry(alone)
    same = [name for name, ins in alone_entry.items()
            if ins[0] in ("fusion", "custom-call") and graph_entry.get(name) == ins]
    assert len(same) == 36 and {"loop_transpose_fusion", "loop_transpose_fusion.1"} <= set(same)
    text, time = _columns(graph)
    after = _times(text["hlo_op"], time)
    before = _times(_by_name(graph, text)[0], time)
    text_alone, time_alone = _columns(alone)
    reference = _times(text_alone["hlo_op"], time_alone)
    assert all(after[name][1] == reference[name][1] == 6 for name in same)
    ratios = [after[name][0] / reference[name][0] for name in same]
    assert 0.89 < min(ratios) and max(ratios) < 1.39
    assert before["loop_transpose_fusion.1"][1] == 12 and "loop_transpose_fusion" not in before
    assert before["loop_transpose_fusion.1"][0] / reference["loop_transpose_fusion.1"][0] \
        == pytest.approx(1.815, abs=1e-3)
    assert after["loop_transpose_fusion"][0] / reference["loop_transpose_fusion"][0] \
        == pytest.approx(0.936, abs=1e-3)


def test_columns_keep_the_kernel_names_instruction_where_no_replay_pairs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    profile = _profile("jax_nvidia_train")
    text, _ = _columns(profile)
    monkeypatch.setattr(HloInstructions, "instructions_in_graph",
                        lambda self, module, kernels: [None] * len(kernels))
    unpaired, _ = _columns(profile)
    before_hlo, before_op = _by_name(profile, text)
    nvjet = np.char.startswith(text["kernel"], "nvjet_")
    assert (unpaired["hlo_op"][~nvjet] == before_hlo[~nvjet]).all()
    assert (unpaired["op_name"][~nvjet] == before_op[~nvjet]).all()
    assert (unpaired["hlo_op"][nvjet] == "command_buffer_1").all()
