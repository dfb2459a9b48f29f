"""tools/compare.py: host matching, op changes and the conclusion, on small exact inputs."""

from __future__ import annotations

import pytest

from tb_profile_plugin.errors import NotFound
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.tools.compare import (
    Side,
    conclusion,
    jitted_changes,
    op_changes,
    pair_hosts,
)


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
