"""`tb-profile summary | view | diff | export` on PyTorch traces (the committed real captures
tests/data/pytorch_*), run as the installed script; `diff --fail-if-slower` gates them as it
gates XPlane runs."""

from __future__ import annotations

import json
from pathlib import Path

from tb_profile_plugin.commands.gate import EXIT_NO_STEPS, EXIT_SLOWER
from tests.fixtures import DATA_DIR
from tests.integration.test_cli_commands import tb_profile

TRAIN = DATA_DIR / "pytorch_cpu_train"
GZIP = DATA_DIR / "pytorch_cpu_gzip"
NOSTEPS = DATA_DIR / "pytorch_cpu_nosteps"
GLOO = DATA_DIR / "pytorch_gloo_2ranks"


def test_summary_of_a_logdir_a_run_directory_and_a_file(tmp_path: Path) -> None:
    file = next((GZIP / "run0").glob("*.pt.trace.json.gz"))
    for path in (GZIP, GZIP / "run0", file):
        result = tb_profile(tmp_path, "summary", str(path), "--json")
        assert result.returncode == 0, result.stderr
        doc = json.loads(result.stdout)
        assert [s["step_num"] for s in doc["steps"]] == [2, 3, 4], path


def test_summary_of_two_ranks_and_view(tmp_path: Path) -> None:
    result = tb_profile(tmp_path, "summary", str(GLOO))
    assert result.returncode == 0, result.stderr
    assert "Hosts: rank0, rank1" in result.stdout and "Framework: PyTorch" in result.stdout
    view = tb_profile(tmp_path, "view", str(GLOO), "memory_profile", "--host", "rank0")
    assert view.returncode == 0, view.stderr
    assert "cpu" in view.stdout


def test_export_writes_the_trace(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    result = tb_profile(tmp_path, "export", str(TRAIN), "-o", str(out))
    assert result.returncode == 0, result.stderr
    events = json.loads(out.read_text())["traceEvents"]
    names = {e.get("name") for e in events}
    assert {"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4", "MemoryAllocation"} <= names


def test_diff_gates_pytorch_runs(tmp_path: Path) -> None:
    slower = tb_profile(tmp_path, "diff", str(GZIP), str(TRAIN), "--fail-if-slower", "5")
    assert slower.returncode == EXIT_SLOWER, slower.stderr
    assert "slower by more than 5 %" in slower.stderr
    faster = tb_profile(tmp_path, "diff", str(TRAIN), str(GZIP), "--fail-if-slower", "5")
    assert faster.returncode == 0, faster.stderr
    none = tb_profile(tmp_path, "diff", str(TRAIN), str(NOSTEPS), "--fail-if-slower", "5")
    assert none.returncode == EXIT_NO_STEPS, none.stderr
