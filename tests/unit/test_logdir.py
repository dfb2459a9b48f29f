"""Run discovery at any depth, and parameter checks that keep every open inside the logdir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_profile_plugin.errors import BadRequest, NotFound
from tb_profile_plugin.logdir import LogDir, check_name


def _session(root: Path, tb_run: str, session: str, hosts: list[str]) -> None:
    directory = root / tb_run / "plugins" / "profile" / session
    directory.mkdir(parents=True)
    for host in hosts:
        (directory / f"{host}.xplane.pb").write_bytes(b"x")


def test_runs_at_any_depth(tmp_path: Path) -> None:
    _session(tmp_path, ".", "2024_01_01_00_00_00", ["a"])
    _session(tmp_path, "train", "2024_01_02_00_00_00", ["a", "b"])
    _session(tmp_path, "exp/1/validation", "2024_01_03_00_00_00", ["c"])
    _session(tmp_path, "empty", "2024_01_04_00_00_00", [])
    logdir = LogDir(str(tmp_path))
    assert [r.name for r in logdir.runs()] == [
        "exp/1/validation/2024_01_03_00_00_00", "train/2024_01_02_00_00_00",
        "2024_01_01_00_00_00",
    ]
    run = logdir.run("train/2024_01_02_00_00_00")
    assert run.hosts == ("a", "b")
    assert logdir.host_path(run, "b").endswith(
        os.path.join("train", "plugins", "profile", "2024_01_02_00_00_00", "b.xplane.pb"))
    with pytest.raises(NotFound, match="no <host>.xplane.pb"):
        logdir.run("empty/2024_01_04_00_00_00")
    with pytest.raises(NotFound, match="no host"):
        logdir.host_path(run, "zz")


def test_new_session_is_found_without_restart(tmp_path: Path) -> None:
    logdir = LogDir(str(tmp_path))
    assert logdir.runs() == []
    _session(tmp_path, "train", "2024_05_05_00_00_00", ["h"])
    assert logdir.run("train/2024_05_05_00_00_00").hosts == ("h",)


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    _session(tmp_path, "train", "s1", ["h"])
    (tmp_path / "train" / "loop").symlink_to(tmp_path)
    names = [r.name for r in LogDir(str(tmp_path)).runs()]
    assert "train/s1" in names


def test_missing_logdir_has_no_runs(tmp_path: Path) -> None:
    assert LogDir(str(tmp_path / "absent")).runs() == []


@pytest.mark.parametrize(
    "name", ["../../etc", "/etc/passwd", "a/../b", "a//b", "./a", "C:/x", "a\\b", "x\x00y",
             "gs://bucket/x", ""],
)
def test_unsafe_run_names_are_bad_requests(name: str) -> None:
    with pytest.raises(BadRequest):
        check_name(name, "run")


def test_run_outside_logdir_is_never_found(tmp_path: Path) -> None:
    inside = tmp_path / "logdir"
    _session(tmp_path, "outside", "s", ["h"])
    inside.mkdir()
    with pytest.raises(NotFound):
        LogDir(str(inside)).run("outside/s")
