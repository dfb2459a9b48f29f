"""Scratch columns of the event table (stat and canonical columns) are dropped after each
outermost per-profile build: the profile keeps its results, not the columns they read, and a
later build that needs them again gets the same answers (real capture, every analysis view)."""

from __future__ import annotations

import json
from pathlib import Path

from tb_profile_plugin.analysis.events.profile_cache import profile_nested
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace

DATA = Path(__file__).resolve().parents[2] / "data"
VIEWS = ("overview_page", "input_pipeline_analyzer", "tensorflow_stats", "kernel_stats",
         "tf_data_bottleneck_analysis")


def _docs(profile) -> list[str]:  # type: ignore[no-untyped-def]
    return [json.dumps(registry.VIEWS[v].build(registry.ViewRequest("r", "h", {"h": profile},
                                                                     {}))) for v in VIEWS]


def test_scratch_columns_go_after_the_overview_and_answers_stay() -> None:
    path = next((DATA / "tfdata_slow").glob("**/*.xplane.pb"))
    profile = decode_xspace(path.read_bytes())
    first = _docs(profile)
    table = profile_nested(profile).table
    assert table._stat_cache == {}
    assert table._canonical is None
    released = profile.derived.measure()
    assert len(table.int_stat("step_num")) == len(table)  # built again on demand
    canon = table.canonical
    assert len(canon.op_name) == len(table)
    # what the release spared: one int64 stat column and the canonical ones. On this TF host
    # no line writes an op, HLO op, module, kernel, figure or flag (each is one shared
    # read-only value, no column): the stat and the device time, 16 bytes per event
    columns = [table.int_stat("step_num"), canon.op_name, canon.op_type, canon.hlo_op,
               canon.module, canon.kernel, canon.device_duration_ps, canon.flops,
               canon.bytes_accessed, canon.framework_typed, canon.low_precision]
    spared = sum(column.nbytes for column in columns if column.strides != (0,))
    assert spared == 16 * len(table)
    assert profile.derived.measure() - released >= spared
    table.release_scratch()
    assert profile.derived.measure() == released
    assert _docs(profile) == first  # cached results, answers unchanged
    fresh = decode_xspace(path.read_bytes())
    assert _docs(fresh) == first  # and equal to a fresh profile's
