"""cuBLAS kernels that XLA replays inside a CUDA graph, resolved to their custom-call through
the module's schedule (xspace/hlo_modules.py, `HloInstructions.library_calls_in_graph`).

Pinned on the committed H200 captures (tests/data/README.md): on jax_nvidia_device_bound each
of the 6 replays of `jit_train_step`'s graph runs 298 kernels (and 18 memsets) that pair one
to one with the 298 fusions and cuBLAS custom-calls of its schedule; its 30 cuBLAS kernels
take their custom-calls, which the graph's node ids confirm. Before, those kernels were one
op, `jit_train_step/command_buffer_1`, the top device op (20.4 % of the overview's device time).
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache

import numpy as np
import pytest

from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.hlo_modules import HloInstructions, hlo_instructions
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import canonical_columns
from tests.fixtures import session_dir

GRAPH_NODE = "cuda_graph_node_id"
OP = "hlo_op"
PROGRAM = "program_id"
CORRELATION = "correlation_id"


@cache
def _profile(fixture: str) -> Profile:
    return decode_xspace((session_dir(fixture) / "vm.xplane.pb").read_bytes())


def _replays(profile: Profile) -> dict[tuple[str, int], list[tuple[str, int]]]:
    """(program id, correlation id) -> the graph's kernels in the order they ran: (name,
    graph node id); read with protobuf-free plain loops over the model, independently of the
    producers' columns."""
    replays: dict[tuple[str, int], list[tuple[int, str, int]]] = defaultdict(list)
    for plane in profile.planes:
        if not plane.name.startswith("/device:GPU"):
            continue
        meta = plane.event_metadata
        for line in plane.lines:
            stats = line.stats.sparse(len(line.events))
            values: dict[int, dict[str, object]] = defaultdict(dict)
            for k in range(len(stats)):
                name = plane.stat_metadata.name_of(int(stats.metadata_id[k]))
                values[int(stats.row[k])][str(name)] = stats.python_value(k, plane.stat_metadata)
            rows = meta.rows_of(line.events.metadata_id)
            for event, found in values.items():
                if not str(found.get(OP, "")).startswith("command_buffer"):
                    continue
                key = (str(found[PROGRAM]), int(str(found[CORRELATION])))
                replays[key].append((int(line.events.start_ps[event]),
                                     meta.names[int(rows[event])],
                                     int(str(found.get(GRAPH_NODE, -1)))))
    return {key: [(name, node) for _, name, node in sorted(kernels)]
            for key, kernels in replays.items()}


@pytest.mark.parametrize(("fixture", "replays", "kernels", "cublas"), [
    ("jax_nvidia_device_bound", 6, 316, 30),
    ("jax_nvidia_train", 6, 50, 6),
])
def test_every_replay_pairs_and_each_graph_node_keeps_one_custom_call(
        fixture: str, replays: int, kernels: int, cublas: int) -> None:
    profile = _profile(fixture)
    hlo = HloInstructions.of(profile)
    found = _replays(profile)
    assert len(found) == replays
    by_node: dict[int, set[str]] = defaultdict(set)
    for (program, _), ran in found.items():
        assert len(ran) == kernels
        calls = hlo.library_calls_in_graph(program, [name for name, _ in ran])
        resolved = [(name, node, ins) for (name, node), ins in zip(ran, calls, strict=True)
                    if ins is not None]
        assert len(resolved) == cublas
        assert all(name.startswith("nvjet_") for name, _, _ in resolved)
        assert all(ins.name.startswith("custom-call.") and ins.low_precision
                   for _, _, ins in resolved)
        for _, node, ins in resolved:
            by_node[node].add(ins.name)
        # Each custom-call once per replay.
        assert len({ins.name for _, _, ins in resolved}) == cublas
    # Every replay gives a graph node the same custom-call.
    assert len(by_node) == cublas
    assert all(len(names) == 1 for names in by_node.values())


def test_node_ids_confirm_the_pairing() -> None:
    """Independent of the order the kernels ran in: a fusion kernel's graph node is its place
    among the schedule's launching instructions, and the cuBLAS kernels' nodes, made after
    them, follow their custom-calls' order."""
    profile = _profile("jax_nvidia_device_bound")
    hlo = HloInstructions.of(profile)
    for (program, _), ran in _replays(profile).items():
        module = hlo.module(program)
        assert module is not None
        base = min(node for _, node in ran)
        kernels = [(name, node) for name, node in ran if not name.startswith("Memset")]
        assert len(kernels) == len(module.launches) == 298
        library_nodes = []
        for place, ((_, node), launch) in enumerate(zip(kernels, module.launches, strict=True)):
            if launch.library is None:
                assert node - base == place
            else:
                library_nodes.append((node, place))
        assert [place for _, place in sorted(library_nodes)] == [
            place for _, place in library_nodes]


def test_train_pairs_each_kernel_with_its_custom_call() -> None:
    profile = _profile("jax_nvidia_train")
    hlo = HloInstructions.of(profile)
    program, ran = next(((p, r) for (p, _), r in _replays(profile).items()))
    calls = hlo.library_calls_in_graph(program, [name for name, _ in ran])
    assert {name: ins.name for (name, _), ins in zip(ran, calls, strict=True) if ins} == {
        "nvjet_sm90_tst_64x256_64x5_2x1_v_bz_NNN": "custom-call.1",
        "nvjet_sm90_tss_64x256_64x5_2x1_v_bz_NTN": "custom-call.2",
        "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT": "custom-call.3",
        "nvjet_sm90_tss_128x128_64x6_1x2_h_bz_NTT": "custom-call.4",
        "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT": "custom-call.0",
        "nvjet_sm90_tss_192x64_64x6_1x2_h_bz_NTT": "custom-call.5",
    }


def test_a_replay_that_does_not_pair_resolves_nothing() -> None:
    profile = _profile("jax_nvidia_train")
    hlo = HloInstructions.of(profile)
    program, ran = next(((p, r) for (p, _), r in _replays(profile).items()))
    names = [name for name, _ in ran]
    cublas = next(k for k, name in enumerate(names) if name.startswith("nvjet_"))
    dropped = names[:cublas - 1] + names[cublas:]  # a fusion kernel missing
    swapped = list(names)  # a cuBLAS kernel run one place early
    swapped[cublas - 1], swapped[cublas] = swapped[cublas], swapped[cublas - 1]
    fused = list(names)  # a kernel XLA made where cuBLAS ran
    fused[cublas] = names[0]
    for kernels in (dropped, swapped, fused, names + ["nvjet_extra"], names[:-1]):
        assert hlo.library_calls_in_graph(program, kernels) == [None] * len(kernels)
    assert hlo.library_calls_in_graph("no_such_module", names) == [None] * len(names)


def test_device_bound_cublas_kernels_leave_the_command_buffer_op() -> None:
    """The canonical columns name each cuBLAS kernel in the graph by its custom-call's JAX op;
    what stays `command_buffer_1` is the graph's memsets, 0.3 % of kernel time."""
    profile = _profile("jax_nvidia_device_bound")
    lines = [(plane, line) for plane in profile.planes if plane.name.startswith("/device:GPU")
             for line in plane.lines]
    columns = canonical_columns(lines, hlo_instructions(profile))
    texts = columns.texts
    kernel = np.array([texts[k] if k >= 0 else "" for k in columns.kernel.tolist()])
    hlo = np.array([texts[k] if k >= 0 else "" for k in columns.hlo_op.tolist()])
    op = np.array([texts[k] if k >= 0 else "" for k in columns.op_name.tolist()])
    time = columns.device_duration_ps
    cublas = np.char.startswith(kernel, "nvjet_")
    assert cublas.sum() == 180
    assert np.char.startswith(hlo[cublas], "custom-call.").all()
    assert set(op[cublas].tolist()) == {
        "jit(train_step)/jvp()/dot_general", "jit(train_step)/transpose(jvp())/dot_general",
        "jit(train_step)/transpose(jvp())/transpose"}
    assert columns.low_precision[cublas].all()
    left = op == "jit_train_step/command_buffer_1"
    assert np.char.startswith(kernel[left], "Memset").all() and left.sum() == 108
    assert time[left].sum() / time[hlo != ""].sum() < 0.005
