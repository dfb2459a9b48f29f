"""`tb-profile diff BEFORE AFTER --fail-if-slower PCT`, the CI gate, run as the installed script.

Real captures: tfdata_slow (6 steps, 64.1 ms) and tfdata_parallel (6 steps, 25.8 ms), the
same pipeline with a parallel map and a prefetch; each capture against itself; and
custom_loop with its `train` step markers removed at the protobuf level (no steps).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tb_profile_plugin.commands.gate import EXIT_NO_STEPS, EXIT_SLOWER
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.fixtures import DATA_DIR
from tests.integration.test_cli_commands import tb_profile

SLOW, PARALLEL = str(DATA_DIR / "tfdata_slow"), str(DATA_DIR / "tfdata_parallel")


def _step_times(tmp: Path, before: str, after: str) -> tuple[float, float, float]:
    doc = json.loads(tb_profile(tmp, "diff", before, after, "--json").stdout)
    step = doc["step_time_ms"]
    return step["a"], step["b"], step["delta_percent"]


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_regression_beyond_the_bound_fails_with_its_reason(tmp_path: Path) -> None:
    a_ms, b_ms, change = _step_times(tmp_path, PARALLEL, SLOW)
    assert change > 100  # the sequential pipeline is more than twice as slow
    result = tb_profile(tmp_path, "diff", PARALLEL, SLOW, "--fail-if-slower", "5")
    assert result.returncode == EXIT_SLOWER == 7
    line = _one_line(result.stderr)
    assert line == (f"tb-profile: slower by more than 5 %: average step time {a_ms:.3f} ms over "
                    f"6 steps -> {b_ms:.3f} ms over 6 steps (+{change:.1f} %)")
    assert "Average per step" in result.stdout  # the diff itself is still printed
    # a bound above the change lets it pass, and says so
    loose = tb_profile(tmp_path, "diff", PARALLEL, SLOW, "--fail-if-slower",
                       f"{change + 1:.1f}")
    assert loose.returncode == 0, loose.stderr
    assert _one_line(loose.stderr).startswith(f"tb-profile: within {change + 1:.1f} %: ")


def test_improvement_and_same_capture_are_within(tmp_path: Path) -> None:
    a_ms, b_ms, change = _step_times(tmp_path, SLOW, PARALLEL)
    assert change < -50
    faster = tb_profile(tmp_path, "diff", SLOW, PARALLEL, "--fail-if-slower", "0")
    assert faster.returncode == 0, faster.stderr
    assert _one_line(faster.stderr) == (
        f"tb-profile: within 0 %: average step time {a_ms:.3f} ms over 6 steps -> "
        f"{b_ms:.3f} ms over 6 steps (-{abs(change):.1f} %)")
    for capture in ("keras_fit", "two_hosts"):  # two_hosts: ALL_HOSTS on both sides
        same = tb_profile(tmp_path, "diff", str(DATA_DIR / capture), str(DATA_DIR / capture),
                          "--fail-if-slower", "0", "--json")
        assert same.returncode == 0, same.stderr
        assert json.loads(same.stdout)["step_time_ms"]["delta"] == 0  # stdout stays JSON
        assert re.fullmatch(r"tb-profile: within 0 %: average step time ([0-9.]+) ms over "
                            r"(\d+) steps -> \1 ms over \2 steps \(±0\.0 %\)",
                            _one_line(same.stderr))


def _without_step_markers(source: Path, out_dir: Path) -> Path:
    """The real capture with its `train` step-marker events removed (nothing else changed)."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(source.read_bytes())
    removed = 0
    for plane in space.planes:
        ids = {k for k, m in plane.event_metadata.items() if m.name == "train"}
        for line in plane.lines:
            kept = [e for e in line.events if e.metadata_id not in ids]
            removed += len(line.events) - len(kept)
            del line.events[:]
            line.events.extend(kept)
    assert removed == 10  # custom_loop's 10 marked steps
    out_dir.mkdir()
    path = out_dir / "vm.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return path


def test_a_side_without_steps_is_a_clear_error(tmp_path: Path) -> None:
    real = next((DATA_DIR / "custom_loop").glob("**/*.xplane.pb"))
    no_steps = str(_without_step_markers(real, tmp_path / "no_steps"))
    for before, after, side in ((no_steps, str(real), "A"), (str(real), no_steps, "B")):
        result = tb_profile(tmp_path, "diff", before, after, "--fail-if-slower", "5")
        assert result.returncode == EXIT_NO_STEPS == 8
        line = _one_line(result.stderr)
        assert line.startswith(f"tb-profile: cannot gate on step time: {side} (")
        assert "has no steps" in line
    # without the gate, the same diff is no error
    assert tb_profile(tmp_path, "diff", no_steps, str(real)).returncode == 0


def test_bad_bounds_are_usage_errors(tmp_path: Path) -> None:
    for bad in ("-1", "fast", "nan"):
        result = tb_profile(tmp_path, "diff", SLOW, PARALLEL, "--fail-if-slower", bad)
        assert result.returncode == 2, bad
        assert "--fail-if-slower" in result.stderr
    assert "--fail-if-slower PCT" in tb_profile(tmp_path, "diff", "--help").stdout
