"""The tf.functions table (analysis/ops/tf_functions.py): real TF captures, counted against the
files' own events; exact numbers and retracing on a TF-layout synthetic host."""

from __future__ import annotations

import re

import pytest

from tb_profile_plugin.analysis.events.table import build_event_table
from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.analysis.ops.tf_functions import merge_tf_functions, tf_functions
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import session_dir
from tests.xspace_builder import XSpaceBuilder

CALL = re.compile(r"^EagerLocalExecute: __inference_(.+)_\d+$")


def _calls_in_file(data: bytes) -> dict[str, list[int]]:
    """Durations (ps) of every tf.function call event, read with protobuf directly."""
    space = xplane_pb2.XSpace.FromString(data)
    calls: dict[str, list[int]] = {}
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        names = {k: m.name for k, m in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                match = CALL.match(names.get(event.metadata_id, ""))
                if match:
                    calls.setdefault(match.group(1), []).append(event.duration_ps)
    return calls


@pytest.mark.parametrize("run", ["custom_loop", "keras_fit/train", "tfdata_slow", "two_hosts"])
def test_real_captures_list_every_call_the_file_holds(run: str) -> None:
    for path in sorted(session_dir(run).glob("*.xplane.pb")):
        data = path.read_bytes()
        expected = _calls_in_file(data)
        assert expected, f"{path}: the capture calls no tf.function"
        rows = analyze(decode_xspace(data)).tf_functions
        assert {r.function: r.calls for r in rows} == {k: len(v) for k, v in expected.items()}
        for row in rows:
            durations = expected[row.function]
            assert row.total_ps == sum(durations)
            assert row.min_ps == min(durations) and row.max_ps == max(durations)
            assert row.mean_ps == pytest.approx(sum(durations) / len(durations))
            assert row.concrete == 1
        assert sum(r.fraction for r in rows) == pytest.approx(1.0)


def test_jax_capture_has_no_tf_functions() -> None:
    data = next(session_dir("jax_cpu_plain").glob("*.xplane.pb")).read_bytes()
    assert analyze(decode_xspace(data)).tf_functions == ()


def _retraced_host() -> bytes:
    space = XSpaceBuilder()
    thread = space.plane("/host:CPU").line("python", line_id=1)
    for k, (name, duration_us) in enumerate([
            ("EagerLocalExecute: __inference_train_step_191", 900),  # trace 1 (and compile)
            ("EagerLocalExecute: __inference_train_step_191", 100),
            ("EagerLocalExecute: __inference_train_step_240", 700),  # new shape: traced again
            ("EagerLocalExecute: __inference_train_step_240", 100),
            ("EagerLocalExecute: __inference_eval_step_77", 50)]):
        thread.event(name, offset_ps=k * 10**9, duration_ps=duration_us * 10**6)
        thread.event("FunctionRun", offset_ps=k * 10**9 + 1000,
                     duration_ps=duration_us * 10**6 - 2000)
    return space.serialize()


def test_retracing_counts_concrete_functions_with_exact_times() -> None:
    rows = tf_functions(build_event_table(decode_xspace(_retraced_host())))
    train, evaluate = rows
    assert (train.function, train.calls, train.concrete) == ("train_step", 4, 2)
    assert (train.total_ps, train.min_ps, train.max_ps) == (1800 * 10**6, 100 * 10**6,
                                                           900 * 10**6)
    assert train.mean_ps == 450 * 10**6
    assert train.fraction == pytest.approx(1800 / 1850)
    assert (evaluate.function, evaluate.calls, evaluate.concrete) == ("eval_step", 1, 1)


def test_hosts_merge_by_function() -> None:
    one = tf_functions(build_event_table(decode_xspace(_retraced_host())))
    merged = merge_tf_functions([one, one])
    train = merged[0]
    assert (train.calls, train.concrete, train.total_ps) == (8, 2, 3600 * 10**6)
    assert train.mean_ps == 450 * 10**6
    assert sum(r.fraction for r in merged) == pytest.approx(1.0)
