"""The committed PyTorch captures (tests/data/pytorch_*, torch 2.13.0+cpu) hold what
tests/data/README.md says they hold: the layouts the PyTorch tests rely on. Read with json
only (no torch)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.fixtures import DATA_DIR


def _one(fixture: str, pattern: str = "*.pt.trace.json*") -> list[Path]:
    files = sorted((DATA_DIR / fixture / "run0").glob(pattern))
    assert files, f"{fixture}: no trace file"
    return files


def _load(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        assert raw[:2] == b"\x1f\x8b", "use_gzip=True writes a gzip stream"
        raw = gzip.decompress(raw)
    return dict(json.loads(raw))


def _spans(doc: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"]
            if e.get("ph") == "X" and str(e.get("name", "")).startswith(prefix)]


def test_train_fixture_steps_dataloader_memory() -> None:
    (path,) = _one("pytorch_cpu_train")
    assert path.name.startswith("worker0.") and path.name.endswith(".pt.trace.json")
    doc = _load(path)
    assert doc["deviceProperties"] == [] and "distributedInfo" not in doc
    steps = _spans(doc, "ProfilerStep#")
    assert [s["name"] for s in steps] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    assert {s["cat"] for s in steps} == {"user_annotation"}
    loads = _spans(doc, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")
    assert len(loads) == 3
    for step, load in zip(steps, loads, strict=True):  # each load inside its step
        assert step["ts"] <= load["ts"] and load["ts"] + load["dur"] <= step["ts"] + step["dur"]
    memory = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    assert memory and all(e["cat"] == "cpu_instant_event" and e["ph"] == "i" for e in memory)
    assert all({"Total Allocated", "Total Reserved", "Bytes", "Device Type"} <= set(e["args"])
               for e in memory)
    assert any("Input Dims" in e["args"] for e in doc["traceEvents"]
               if e.get("cat") == "cpu_op")


def test_gzip_fixture() -> None:
    (path,) = _one("pytorch_cpu_gzip")
    assert path.name.endswith(".pt.trace.json.gz")
    doc = _load(path)
    assert len(_spans(doc, "ProfilerStep#")) == 3
    assert _spans(doc, "aten::conv2d")


def test_gloo_fixture_two_ranks_and_straggler() -> None:
    paths = _one("pytorch_gloo_2ranks")
    assert [p.name.split(".")[0] for p in paths] == ["rank0", "rank1"]
    docs = [_load(p) for p in paths]
    for rank, doc in enumerate(docs):
        info = doc["distributedInfo"]
        assert (info["backend"], info["rank"], info["world_size"]) == ("gloo", rank, 2)
        assert [s["name"] for s in _spans(doc, "ProfilerStep#")] == [
            "ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    reduce0, reduce1 = (sum(e["dur"] for e in _spans(d, "gloo:all_reduce")) for d in docs)
    # Rank 1 sleeps 30 ms per step in record_function("slow_data_rank1"): rank 0 waits.
    assert len(_spans(docs[1], "slow_data_rank1")) == 3 and not _spans(docs[0], "slow_data")
    assert reduce0 - reduce1 > 3 * 15_000  # µs: more than 15 ms per step


def test_nosteps_fixture_has_no_step() -> None:
    (path,) = _one("pytorch_cpu_nosteps")
    doc = _load(path)
    assert _spans(doc, "ProfilerStep") == []
    assert len(_spans(doc, "inference")) == 3
    assert _spans(doc, "aten::addmm")
