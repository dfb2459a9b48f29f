"""tensorflow_stats host rows against the reference's (xprof 2.24.2 framework_op_stats)."""

from __future__ import annotations

import json

import pytest

from tests.fixtures import DATA_DIR, build_view

REFERENCE = json.loads((DATA_DIR / "reference" / "xprof_2.24.2.json").read_text())["fixtures"]


def _stats(fixture: str, include_idle: str = "true") -> dict:
    path = DATA_DIR / REFERENCE[fixture]["xplane"]
    return build_view("tensorflow_stats", path, include_idle=include_idle)


@pytest.mark.parametrize("fixture", sorted(REFERENCE))
def test_top_20_host_ops_agree(fixture: str) -> None:
    ref = REFERENCE[fixture]["framework_op_stats"]
    doc = _stats(fixture, "false")
    host = [r for r in doc["rows"] if r["host_or_device"] == "Host"]
    assert len(host) == ref["num_host_rows"] - 1  # the reference counts its IDLE row
    for ours, theirs in zip(host[:20], ref["top20_host_by_self_time"], strict=True):
        assert ours["op_name"] == theirs["operation"]
        assert ours["op_type"] == theirs["type"]
        assert ours["occurrences"] == theirs["occurrences"]
        assert ours["total_self_time_us"] == pytest.approx(theirs["total_self_time"], rel=0.01)
        assert ours["total_time_us"] == pytest.approx(theirs["total_time"], rel=0.01)


@pytest.mark.parametrize("fixture", sorted(REFERENCE))
def test_idle_row_and_fractions(fixture: str) -> None:
    ref = REFERENCE[fixture]["framework_op_stats"]
    doc = _stats(fixture, "true")
    idle = next(r for r in doc["rows"] if r["op_name"] == "IDLE")
    assert idle["total_self_time_us"] == pytest.approx(ref["host_idle_self_time_us"], rel=1e-6)
    host = [r for r in doc["rows"] if r["host_or_device"] == "Host"]
    assert sum(r["self_time_fraction"] for r in host) == pytest.approx(1.0)
    assert host[-1]["cumulative_self_time_fraction"] == pytest.approx(1.0)
    assert [r["rank"] for r in host] == list(range(1, len(host) + 1))


def test_include_idle_must_be_boolean() -> None:
    from tb_profile_plugin.errors import BadRequest

    with pytest.raises(BadRequest):
        _stats("custom_loop", "maybe")
