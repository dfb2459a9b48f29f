"""`tb-profile view` on real captures, and its exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures import DATA_DIR


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tb_profile_plugin.cli", *args],
                          capture_output=True, text=True, timeout=120)


def test_view_of_a_logdir_a_run_dir_and_a_file() -> None:
    xplane = next(DATA_DIR.glob("custom_loop/**/*.xplane.pb"))
    for path in (DATA_DIR / "custom_loop", xplane.parent, xplane):
        result = _cli("view", str(path), "profile_info")
        assert result.returncode == 0, result.stderr
        doc = json.loads(result.stdout)
        assert doc["tool"] == "profile_info" and doc["total_events"] > 0


def test_exit_codes(tmp_path: Path) -> None:
    assert _cli("view", str(tmp_path), "profile_info").returncode == 3
    bad = tmp_path / "h.xplane.pb"
    bad.write_bytes(b"\xff" * 64)
    result = _cli("view", str(bad), "profile_info")
    assert result.returncode == 4 and "h.xplane.pb" in result.stderr
    assert _cli("view", str(bad), "no_such_view").returncode == 2
    assert _cli("bogus").returncode == 2


def test_view_overview_of_a_fixture() -> None:
    result = _cli("view", str(DATA_DIR / "tfdata_slow"), "overview_page")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["bottleneck"]["input_bound"] == "highly" and len(doc["steps"]) == 6


def test_summary_lists_the_jitted_functions_of_a_jax_capture() -> None:
    result = _cli("summary", str(DATA_DIR / "jax_cpu_plain"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(_cli("view", str(DATA_DIR / "jax_cpu_plain"), "overview_page").stdout)
    section = result.stdout.split("Jitted functions (XLA modules)\n", 1)[1].split("\n\n", 1)[0]
    lines = section.splitlines()[1:]
    assert len(lines) == len(doc["jitted_functions"]) == 2
    for line, row in zip(lines, doc["jitted_functions"], strict=True):
        calls, mean_ms = line.split()[:2]
        assert (int(calls), mean_ms) == (row["calls"], f"{row['mean_ms']:.3f}")
    assert lines[0].endswith("jit_train_step (steps)") and lines[1].endswith("jit_eval_step")


def test_special_files_exit_4_with_one_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.xplane.pb")
    (tmp_path / "zero.xplane.pb").symlink_to("/dev/zero")
    (tmp_path / "loop.xplane.pb").symlink_to("loop.xplane.pb")
    (tmp_path / "dir.xplane.pb").mkdir()
    for name in ("fifo", "zero", "loop", "dir"):
        result = _cli("summary", str(tmp_path / f"{name}.xplane.pb"))
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 4, result.stderr
        assert len(lines) == 1 and lines[0].startswith(f"tb-profile: {name}.xplane.pb")
    result = _cli("summary", str(tmp_path))  # the directory holding all four
    assert result.returncode == 4 and "Traceback" not in result.stderr
