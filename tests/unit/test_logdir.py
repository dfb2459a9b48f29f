"""Run discovery at any depth, and parameter checks that keep every open inside the logdir."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tb_profile_plugin import logdir as logdir_module
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


def test_links_leading_outside_the_logdir_are_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TB_PROFILE_FOLLOW_LINKS", raising=False)
    root = tmp_path / "logdir"
    _session(tmp_path, "outside", "s", ["h"])  # a real run outside the logdir
    outside_session = tmp_path / "outside" / "plugins" / "profile" / "s"
    _session(root, "run", "s", ["a"])
    session = root / "run" / "plugins" / "profile" / "s"
    (session / "out.xplane.pb").symlink_to(outside_session / "h.xplane.pb")
    (session / "in.xplane.pb").symlink_to(session / "a.xplane.pb")
    (root / "run" / "plugins" / "profile" / "linked").symlink_to(outside_session)
    (root / "linked_run").symlink_to(tmp_path / "outside")
    _session(root, "only_links", "s", [])
    (root / "only_links" / "plugins" / "profile" / "s" / "x.xplane.pb").symlink_to(
        outside_session / "h.xplane.pb")
    logdir = LogDir(str(root))
    assert [r.name for r in logdir.runs()] == ["run/s"]
    assert logdir.run("run/s").hosts == ("a", "in")
    for name in ("run/linked", "linked_run/s"):
        with pytest.raises(NotFound):
            logdir.run(name)
    with pytest.raises(NotFound, match="1 link.*outside the logdir.*TB_PROFILE_FOLLOW_LINKS"):
        logdir.run("only_links/s")

    monkeypatch.setenv("TB_PROFILE_FOLLOW_LINKS", "1")
    followed = LogDir(str(root))
    assert {r.name for r in followed.runs()} == {
        "run/s", "run/linked", "linked_run/s", "only_links/s"}
    assert followed.run("run/s").hosts == ("a", "in", "out")


def test_a_host_file_that_became_an_outside_link_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "logdir"
    _session(root, "run", "s", ["a"])
    logdir = LogDir(str(root))
    run = logdir.run("run/s")
    host_file = root / "run" / "plugins" / "profile" / "s" / "a.xplane.pb"
    assert logdir.host_path(run, "a") == str(host_file)
    host_file.unlink()
    host_file.symlink_to("/dev/zero")
    with pytest.raises(NotFound, match="outside the logdir"):
        logdir.host_path(run, "a")


def test_capture_never_writes_through_a_link_out_of_the_logdir(tmp_path: Path) -> None:
    root = tmp_path / "logdir"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "linked").symlink_to(tmp_path / "elsewhere")
    (root / "inner").symlink_to(root)
    logdir = LogDir(str(root))
    for run in ("", "new", "new/deeper", "inner/x"):
        logdir.check_writable(run)
    for run in ("linked", "linked/new"):
        with pytest.raises(BadRequest, match="outside the logdir"):
            logdir.check_writable(run)
    with pytest.raises(BadRequest):
        logdir.check_writable("../x")


def test_unknown_run_names_rescan_at_a_limited_rate(tmp_path: Path) -> None:
    _session(tmp_path, "train", "s1", ["h"])
    logdir = LogDir(str(tmp_path))
    assert logdir.run("train/s1").hosts == ("h",)
    assert logdir.scan_count == 1
    for k in range(20):
        with pytest.raises(NotFound):
            logdir.run(f"unknown/{k}")
    assert logdir.scan_count <= 1 + logdir_module.FORCED_RESCANS
    assert logdir.run("train/s1").hosts == ("h",)


def test_a_known_run_is_answered_while_another_thread_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(tmp_path, "train", "s1", ["h"])
    logdir = LogDir(str(tmp_path))
    assert logdir.run("train/s1").hosts == ("h",)
    walking, release = threading.Event(), threading.Event()
    real_find_runs = logdir_module._find_runs

    def slow_find_runs(root: str) -> list[logdir_module.Run]:
        walking.set()
        assert release.wait(10)
        return real_find_runs(root)

    monkeypatch.setattr(logdir_module, "_find_runs", slow_find_runs)
    walker = threading.Thread(target=lambda: pytest.raises(NotFound, logdir.run, "new/s"))
    walker.start()
    try:
        assert walking.wait(10)
        began = time.monotonic()
        assert logdir.run("train/s1").hosts == ("h",)  # the last walk answers, no waiting
        with pytest.raises(NotFound):
            logdir.run("other/s")  # no second walk while one is under way
        assert time.monotonic() - began < 1.0
    finally:
        release.set()
        walker.join(10)
    assert logdir.scan_count == 2
