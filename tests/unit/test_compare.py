"""tools/compare.py: host matching, op changes and the conclusion, on small exact inputs, and
per-step op times on two real captures of different step counts."""

from __future__ import annotations

import pytest

from tb_profile_plugin.commands.profiles import locate
from tb_profile_plugin.errors import NotFound
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.tools import registry
from tb_profile_plugin.tools.compare import (
    Side,
    compare,
    conclusion,
    jitted_changes,
    op_basis,
    op_changes,
    pair_hosts,
    step_count_warning,
)
from tb_profile_plugin.xspace.store import ProfileStore
from tests.fixtures import DATA_DIR


def side(*hosts: str, host: str | None = None) -> Side:
    return Side("run", {h: f"/x/{h}.xplane.pb" for h in hosts}, host)


def test_hosts_are_matched_by_name() -> None:
    assert pair_hosts(side("vm"), side("other")) == ("vm", "other")
    assert pair_hosts(side("h1", "h2"), side("h2", "h3")) == (ALL_HOSTS, ALL_HOSTS)
    assert pair_hosts(side("h2"), side("h1", "h2")) == ("h2", "h2")
    assert pair_hosts(side("h1", "h2"), side("h1")) == ("h1", "h1")
    assert pair_hosts(side("vm"), side("h1", "h2")) == ("vm", ALL_HOSTS)
    assert pair_hosts(side("h1", "h2", host="h2"), side("h1", "h2")) == ("h2", "h2")
    assert pair_hosts(side("h1", "h2"), side("h1", "h2", host="h1")) == ("h1", "h1")
    assert pair_hosts(side("h1", "h2", host="h1"), side("vm")) == ("h1", "vm")
    assert pair_hosts(side("a", host="a"), side("b", "c", host="c")) == ("a", "c")
    with pytest.raises(NotFound, match="no host 'zz'"):
        pair_hosts(side("h1", host="zz"), side("h1"))


def _row(name: str, self_us: float, side: str = "Host", count: int = 1) -> dict[str, object]:
    return {"host_or_device": side, "op_name": name, "op_type": "T",
            "total_self_time_us": self_us, "occurrences": count}


def test_op_changes_rank_by_absolute_change_and_mark_new_and_vanished() -> None:
    a = [_row("same", 1000), _row("grew", 2000), _row("gone", 500), _row("k", 100, "Device")]
    b = [_row("same", 1000), _row("grew", 5000), _row("new", 700), _row("k", 50, "Device")]
    changes = op_changes(a, b)
    by_name = {c["op_name"]: c for c in changes}
    assert [c["op_name"] for c in changes][:3] == ["grew", "new", "gone"]
    assert by_name["grew"]["delta_ms"] == pytest.approx(3.0)
    assert by_name["grew"]["ratio"] == pytest.approx(2.5)
    assert by_name["new"]["change"] == "new" and by_name["new"]["ratio"] is None
    assert by_name["gone"]["change"] == "vanished" and by_name["gone"]["b_self_time_ms"] == 0
    assert by_name["same"]["delta_ms"] == 0 and by_name["same"]["change"] == "changed"
    assert by_name["k"]["host_or_device"] == "Device"


def _summary(avg_ms: float, steps: int = 3) -> dict[str, object]:
    return {"run": "r", "num_steps": steps, "step_time_ms": {"avg": avg_ms}}


def _category(key: str, a_ms: float, b_ms: float) -> dict[str, object]:
    return {"category": key, "a_ms": a_ms, "b_ms": b_ms, "delta_ms": b_ms - a_ms}


def test_conclusion_names_the_category_that_moved_most() -> None:
    categories = [_category("input", 24.1, 2.0), _category("host_compute", 10.0, 12.0)]
    text = conclusion(_summary(58.0), _summary(36.0), categories)
    assert text == "step time \u221238 %: input wait fell from 24.1 ms to 2.0 ms per step"
    rose = conclusion(_summary(10.0), _summary(12.0),
                      [_category("host_compute", 5.0, 7.0), _category("input", 1.0, 1.0)])
    assert rose == "step time +20 %: host compute rose from 5.0 ms to 7.0 ms per step"
    flat = conclusion(_summary(10.0), _summary(10.0), [_category("input", 1.0, 1.0)])
    assert flat.startswith("step time \u00b10 %") and "no category changed" in flat
    none = conclusion(_summary(10.0), _summary(0.0, steps=0), categories)
    assert none.startswith("no step time to compare: run B")


def _jitted(module: str, calls: int, mean_ms: float) -> dict[str, object]:
    return {"module": module, "calls": calls, "mean_ms": mean_ms}


def test_jitted_changes_rank_by_mean_time_change() -> None:
    a = [_jitted("jit_train", 10, 2.0), _jitted("jit_eval", 3, 0.5)]
    b = [_jitted("jit_train", 20, 1.25), _jitted("jit_new", 1, 0.25)]
    changes = jitted_changes(a, b)
    assert [c["module"] for c in changes] == ["jit_train", "jit_eval", "jit_new"]
    train, evaluate, new = changes
    assert (train["a_calls"], train["b_calls"], train["delta_ms"]) == (10, 20, -0.75)
    assert train["delta_percent"] == -37.5 and train["change"] == "changed"
    assert (evaluate["change"], evaluate["b_calls"], evaluate["delta_percent"]) == (
        "vanished", 0, None)
    assert (new["change"], new["a_mean_ms"], new["b_mean_ms"]) == ("new", 0.0, 0.25)


def test_op_changes_per_step_divide_each_side_by_its_own_step_count() -> None:
    a = [_row("op", 6000), _row("gone", 600)]  # 6 steps: 1 ms and 0.1 ms per step
    b = [_row("op", 127000), _row("new", 1270)]  # 127 steps: 1 ms and 0.01 ms per step
    by_name = {c["op_name"]: c for c in op_changes(a, b, 6, 127)}
    op = by_name["op"]
    assert (op["a_ms"], op["b_ms"], op["delta_ms"], op["ratio"]) == (1.0, 1.0, 0.0, 1.0)
    assert (op["a_self_time_ms"], op["b_self_time_ms"]) == (6.0, 127.0)  # whole capture
    assert by_name["gone"]["a_ms"] == pytest.approx(0.1)
    assert by_name["new"]["b_ms"] == pytest.approx(0.01)
    # Without steps on a side there is no per-step time: the whole capture is compared.
    whole = {c["op_name"]: c for c in op_changes(a, b, 0, 127)}
    assert (whole["op"]["a_ms"], whole["op"]["b_ms"]) == (6.0, 127.0)
    assert (op_basis(6, 127), op_basis(0, 127), op_basis(6, 0)) == (
        "per_step", "whole_capture", "whole_capture")


def test_step_count_warning_above_twofold() -> None:
    assert step_count_warning(6, 12) is None  # exactly twice: comparable
    assert step_count_warning(12, 6) is None
    assert step_count_warning(0, 127) is None  # no steps: the conclusion says so instead
    text = step_count_warning(6, 127)
    assert text is not None and text.startswith(
        "A has 6 steps and B 127 (21.2\u00d7 as many): ops are compared per step")
    assert step_count_warning(127, 6) == (
        "A has 127 steps and B 6 (21.2\u00d7 as many): ops are compared per step (each run's "
        "self time divided by its own step count), but captures this different may not do the "
        "same work per step (warm-up, evaluation, checkpoints); capture similar step counts to "
        "compare like with like")


def _fixture_side(fixture: str) -> Side:
    located = locate(str(DATA_DIR / fixture))
    return Side(located.run, located.files)


@pytest.mark.parametrize(("fixture_a", "fixture_b", "warned"), [
    ("tfdata_slow", "tfdata_batch_map", True),  # 6 and 18 steps
    ("keras_fit", "tfdata_slow", False),  # 4 and 6 steps
])
def test_real_captures_of_different_step_counts_compare_per_step(
    fixture_a: str, fixture_b: str, warned: bool
) -> None:
    store = ProfileStore()
    a, b = _fixture_side(fixture_a), _fixture_side(fixture_b)
    doc = compare(a, b, store.open)
    steps_a, steps_b = doc["a"]["num_steps"], doc["b"]["num_steps"]
    assert steps_a > 0 and steps_b > 0 and steps_a != steps_b
    assert doc["op_basis"] == "per_step"
    assert (doc["step_count_warning"] is not None) == warned
    if warned:
        assert doc["step_count_warning"].startswith(f"A has {steps_a} steps and B {steps_b}")
    # Each side's op table (the tensorflow_stats view without IDLE), divided by its steps.
    totals = []
    for side in (a, b):
        (host,) = side.files
        stats = registry.VIEWS["tensorflow_stats"].build(registry.ViewRequest(
            side.run, host, {host: store.open(side.files[host])}, {"include_idle": "false"},
            paths=dict(side.files)))
        totals.append({(r["host_or_device"], r["op_name"]): r["total_self_time_us"] / 1e3
                       for r in stats["rows"]})
    assert doc["ops"]
    for op in doc["ops"]:
        key = (op["host_or_device"], op["op_name"])
        assert op["a_self_time_ms"] == totals[0].get(key, 0.0)
        assert op["b_self_time_ms"] == totals[1].get(key, 0.0)
        assert op["a_ms"] == pytest.approx(totals[0].get(key, 0.0) / steps_a, rel=1e-12)
        assert op["b_ms"] == pytest.approx(totals[1].get(key, 0.0) / steps_b, rel=1e-12)
        assert op["delta_ms"] == pytest.approx(op["b_ms"] - op["a_ms"], abs=1e-12)
    deltas = [abs(op["delta_ms"]) for op in doc["ops"]]
    assert deltas == sorted(deltas, reverse=True)
