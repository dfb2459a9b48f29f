"""Host op metrics: self time, occurrences, IDLE, eager share, and what is not an op."""

from __future__ import annotations

from tb_profile_plugin.analysis.events.op_names import OpCategory, parse_op
from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.xspace_builder import XSpaceBuilder


def test_parse_op_names() -> None:
    assert parse_op("dense/MatMul:MatMul") .category == OpCategory.TENSORFLOW
    assert parse_op("dense/MatMul:MatMul").name == "dense/MatMul"
    assert parse_op("Iterator::Root::Map").type == "Dataset"
    assert parse_op("MemcpyHtoD").category == OpCategory.MEMCPY_H2D
    assert parse_op("jit_fn/dot:dot_general").category == OpCategory.JAX
    assert not parse_op("ThreadpoolListener::Record").is_op
    assert not parse_op("train").is_op


def test_self_time_occurrences_idle_and_eager() -> None:
    b = XSpaceBuilder()
    line = b.plane("/host:CPU").line("python", line_id=1)
    line.event("train", 0, 1000, step_num=1, _r=1)
    line.event("outer:While", 100, 400)  # children 150 + 50 -> self 200
    line.event("a:MatMul", 120, 150)
    line.event("b:AddV2", 300, 50)
    line.event("EagerKernelExecute", 600, 100)
    line.event("a:MatMul", 610, 50)  # eager
    line.event("not an op", 800, 100)
    ops = analyze(decode_xspace(b.serialize())).ops.host
    rows = {ops.name[i]: i for i in range(len(ops))}
    assert set(rows) == {"outer", "a", "b", "IDLE"}
    assert ops.self_ps[rows["outer"]] == 200
    assert ops.occurrences[rows["a"]] == 2 and ops.total_ps[rows["a"]] == 200
    assert ops.eager_self_ps[rows["a"]] == 50
    # ops span [100, 660]: 560 ps, of which 200 + 200 + 50 = 450 is op self time.
    assert ops.name[-1] == "IDLE" and ops.self_ps[-1] == 110
