"""PyTorch runs in a logdir (logdir.py, docs/pytorch.md): directories of `*.pt.trace.json[.gz]`,
hosts named by worker, several captures of a worker split into runs, links leading outside
left out; the store decodes them by name and the disk cache serves them again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_profile_plugin.commands.profiles import locate
from tb_profile_plugin.errors import BadRequest, NotFound
from tb_profile_plugin.logdir import LogDir
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.producers import kineto_worker
from tb_profile_plugin.xspace.store import ProfileStore
from tests.kineto_builder import gpu_training_step_trace


def _trace(path: Path) -> Path:
    return gpu_training_step_trace("2.x").write(path)


def test_worker_names() -> None:
    assert kineto_worker("rank0.1795886940737484679.pt.trace.json") == (
        "rank0", 1795886940737484679)
    assert kineto_worker("host_12.3.pt.trace.json.gz") == ("host_12", 3)
    assert kineto_worker("my.trace.pt.trace.json") == ("my.trace", -1)


def test_runs_hosts_and_captures(tmp_path: Path) -> None:
    _trace(tmp_path / "resnet" / "rank0.1700000000001.pt.trace.json")
    _trace(tmp_path / "resnet" / "rank1.1700000000002.pt.trace.json.gz")
    _trace(tmp_path / "exp" / "a" / "w.10.pt.trace.json")
    _trace(tmp_path / "exp" / "a" / "w.20.pt.trace.json")
    _trace(tmp_path / "exp" / "a" / "v.15.pt.trace.json")
    (tmp_path / "exp" / "a" / "notes.json").write_text("{}")
    _trace(tmp_path / "top.5.pt.trace.json")
    logdir = LogDir(str(tmp_path))
    runs = {run.name: run for run in logdir.runs()}
    assert set(runs) == {"resnet", "exp/a/capture1", "exp/a/capture2", tmp_path.name}
    assert runs["resnet"].hosts == ("rank0", "rank1")
    assert runs["exp/a/capture1"].hosts == ("v", "w")
    assert runs["exp/a/capture2"].hosts == ("w",)
    assert Path(logdir.host_path(runs["exp/a/capture2"], "w")).name == "w.20.pt.trace.json"
    assert Path(logdir.host_path(runs["resnet"], "rank1")).name == (
        "rank1.1700000000002.pt.trace.json.gz")
    with pytest.raises(NotFound, match="no host"):
        logdir.host_path(runs["resnet"], "rank2")
    with pytest.raises(BadRequest):
        logdir.run("../resnet")


def test_outside_links_are_left_out(tmp_path: Path) -> None:
    outside = _trace(tmp_path / "elsewhere" / "x.1.pt.trace.json")
    root = tmp_path / "logdir"
    _trace(root / "run" / "a.1.pt.trace.json")
    os.symlink(outside, root / "run" / "b.1.pt.trace.json")
    logdir = LogDir(str(root))
    assert [(r.name, r.hosts) for r in logdir.runs()] == [("run", ("a",))]
    assert logdir.links_left_out() == 1


def test_cli_locates_files_directories_and_logdirs(tmp_path: Path) -> None:
    file = _trace(tmp_path / "run" / "rank0.1700.pt.trace.json")
    assert locate(str(file)).files == {"rank0": str(file)}
    assert locate(str(tmp_path / "run")).hosts == ["rank0"]
    assert locate(str(tmp_path)).run == "run"


def test_store_decodes_by_name_and_the_disk_cache_serves_it(tmp_path: Path) -> None:
    path = str(_trace(tmp_path / "run" / "w.1.pt.trace.json.gz"))
    first = ProfileStore(disk_cache_dir=tmp_path / "cache")
    profile = first.open(path)
    assert profile.decoder == "kineto" and first.decode_count == 1
    cache.flush()
    second = ProfileStore(disk_cache_dir=tmp_path / "cache")
    again = second.open(path)
    assert second.decode_count == 0
    assert again.num_events == profile.num_events
    assert [p.name for p in again.planes] == [p.name for p in profile.planes]
