"""Trace viewer benchmark (`scripts/bench.py --trace PATH`): window queries on a big capture.

Figures, each from fresh processes where it says cold:
  first_window_cold_s   decode (disk cache off) + index + the first window's JSON, new process
  first_window_warm_s   the same request again in that process
  pan_zoom_ms           several zooms and pans at resolution 1600 (index warm), each with JSON
  every_1ms_window      every 1 ms window at a 1 ps pixel: returned == brute-force count from
                        protobuf's parse, filtered 0 (the check too slow for CI)
  reference_*_s         xprof's `trace_viewer@` on a copy of the same file (cold, then again)
  synthetic_10m         a 10M-event synthetic profile served by a real TensorBoard process:
                        first window time and the server's resident memory (VmRSS / VmHWM)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_COLD_CHILD = r"""
import inspect, json, sys, time
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.store import ProfileStore
view = registry.VIEWS["trace_viewer"]
try:  # what the server sends (orjson; the columns are numpy arrays); an older tree: the stdlib's
    from tb_profile_plugin.json_text import json_bytes as serialise
except ImportError:
    serialise = lambda doc: json.dumps(doc, separators=(",", ":")).encode()
t = time.perf_counter()
if "stats_later" in inspect.signature(ProfileStore.open).parameters:  # as the server opens
    profile = ProfileStore().open(sys.argv[2], stats_later=view.events_first)  # the trace
else:  # a tree from before `events_first`
    profile = ProfileStore().open(sys.argv[2])
t_decode = time.perf_counter() - t
out = {"import_s": t - t0, "decode_s": t_decode}
for label in ("cold", "warm"):
    t = time.perf_counter()
    doc = view.build(registry.ViewRequest("bench", "host", {"host": profile}, {}))
    text = serialise(doc)
    out[f"first_window_{label}_s"] = time.perf_counter() - t + (t_decode if label == "cold" else 0)
out["first_window_kb"] = len(text) // 1024
out["returned_events"] = doc["returned_events"]
out["total_events"] = doc["total_events"]
span = doc["full_timespan_ms"][1]
queries = []
for frac, pos in [(0.99, 0.005), (0.5, 0.25), (0.1, 0.45), (0.1, 0.5), (0.01, 0.3), (0.01, 0.31),
                  (0.001, 0.7), (0.0001, 0.2), (0.3, 0.0), (0.3, 0.1), (0.05, 0.9)]:
    a = span * pos; b = min(span, a + span * frac)
    t = time.perf_counter()
    doc = view.build(registry.ViewRequest("bench", "host", {"host": profile},
        {"start_time_ms": str(a), "end_time_ms": str(b), "resolution": "1600"}))
    text = serialise(doc)
    queries.append({"window_ms": [round(a, 3), round(b, 3)],
                    "ms": round((time.perf_counter() - t) * 1000, 1),
                    "returned": doc["returned_events"], "filtered": doc["filtered_events"],
                    "kb": len(text) // 1024})
out["pan_zoom"] = queries
print(json.dumps(out))
"""

_REFERENCE_CHILD = r"""
import json, os, shutil, sys, tempfile, time
from xprof.convert import raw_to_tool_data
path = sys.argv[1]
out = {}
with tempfile.TemporaryDirectory() as tmp:  # xprof writes cache files beside its input
    session = os.path.join(tmp, "plugins", "profile", "s")
    os.makedirs(session)
    copy = os.path.join(session, os.path.basename(path))
    shutil.copyfile(path, copy)
    host = os.path.basename(path)[: -len(".xplane.pb")]
    for label in ("cold", "again"):
        t = time.perf_counter()
        data, _ = raw_to_tool_data.xspace_to_tool_data([copy], "trace_viewer@", {
            "use_saved_result": True, "hosts": [host],
            "trace_viewer_options": {"resolution": "1600"}})
        out[f"reference_trace_viewer_{label}_s"] = time.perf_counter() - t
    out["reference_bytes"] = len(data or b"")
print(json.dumps(out))
"""


def _last_json(stdout: str) -> dict[str, object]:
    return json.loads(stdout.strip().splitlines()[-1])


def every_1ms_window(path: Path) -> dict[str, object]:
    """Every 1 ms window at a 1 ps pixel against protobuf's parse (in this process)."""
    from tb_profile_plugin.tools import registry
    from tb_profile_plugin.xspace.pb import xplane_pb2
    from tb_profile_plugin.xspace.store import ProfileStore

    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    starts, ends = [], []
    for plane in space.planes:
        for line in plane.lines:
            base = line.timestamp_ns * 1000
            offsets = np.fromiter((e.offset_ps for e in line.events), np.int64, len(line.events))
            durations = np.fromiter((e.duration_ps for e in line.events), np.int64,
                                    len(line.events))
            starts.append(base + offsets)
            ends.append(base + offsets + durations)
    start = np.concatenate(starts)
    end = np.concatenate(ends)
    origin = start.min()
    start, end = np.sort(start - origin), end - origin
    end_sorted = np.sort(end)
    profile = ProfileStore().open(str(path))
    view = registry.VIEWS["trace_viewer"]
    whole = view.build(registry.ViewRequest("b", "h", {"h": profile}, {}))
    windows = int(end.max() // 10**9) + 1
    mismatches = 0
    slowest_ms = 0.0
    for k in range(windows):
        a, b = k * 10**9, (k + 1) * 10**9
        t = time.perf_counter()
        doc = view.build(registry.ViewRequest("b", "h", {"h": profile}, {
            "start_time_ms": str(k), "end_time_ms": str(k + 1), "resolution": str(10**9)}))
        slowest_ms = max(slowest_ms, (time.perf_counter() - t) * 1000)
        # overlap count = started by b, minus ended before a
        expected = int(np.searchsorted(start, b, "right") - np.searchsorted(end_sorted, a, "left"))
        if doc["returned_events"] != expected or doc["filtered_events"] != 0:
            mismatches += 1
    return {"xspace_events": len(start), "total_events": whole["total_events"],
            "windows": windows, "mismatched_windows": mismatches,
            "slowest_window_ms": round(slowest_ms, 1)}


def write_synthetic(path: Path, num_events: int, num_lines: int = 16) -> None:
    """A host plane of `num_lines` threads of nested events (3 levels), 10M events in ~1 min."""
    from tb_profile_plugin.trace.wire import LEN, key, len_field, repeated_messages, varint
    from tb_profile_plugin.xspace.pb import xplane_pb2

    rng = np.random.default_rng(0)
    plane = xplane_pb2.XPlane(id=0, name="/host:CPU")
    for i in range(1, 201):
        plane.event_metadata[i].id = i
        plane.event_metadata[i].name = f"op_{i}"
    head = plane.SerializeToString()
    parts = [head]
    per_line = num_events // num_lines
    for line_id in range(num_lines):
        # groups of 4: a parent of 8 µs and three children of 2 µs inside it
        groups = per_line // 4
        base = np.arange(groups, dtype=np.int64) * 10_000_000 + rng.integers(0, 1_000_000,
                                                                            groups)
        offsets = np.stack([base, base + 500_000, base + 3_000_000, base + 5_500_000], 1)
        durations = np.tile(np.array([8_000_000, 2_000_000, 2_000_000, 2_000_000]), (groups, 1))
        metadata = rng.integers(1, 201, (groups, 4))
        line = xplane_pb2.XLine(id=line_id + 1, display_id=line_id + 1,
                                name=f"tf_Compute/{line_id + 1}", timestamp_ns=1_000)
        body = line.SerializeToString() + repeated_messages(
            4, [(1, metadata.ravel()), (2, offsets.ravel()), (3, durations.ravel())])
        parts.append(len_field(3, body))
    plane_bytes = b"".join(parts)
    with open(path, "wb") as out:
        out.write(key(1, LEN) + varint(len(plane_bytes)))  # not copied into one buffer
        out.write(plane_bytes)
        out.write(len_field(2, b"synthetic"))


def _rss_kb(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def synthetic_server(num_events: int) -> dict[str, object]:
    from tests.integration.conftest import start_tensorboard, stop

    with tempfile.TemporaryDirectory() as tmp_text:
        tmp = Path(tmp_text)
        session = tmp / "logdir" / "big" / "plugins" / "profile" / "2026_01_01_00_00_00"
        session.mkdir(parents=True)
        t = time.perf_counter()
        write_synthetic(session / "synthetic.xplane.pb", num_events)
        write_s = time.perf_counter() - t
        server = start_tensorboard(tmp / "logdir", tmp)
        try:
            base = server.base_url + "/data/plugin/profile/data?run=big/2026_01_01_00_00_00"
            idle = _rss_kb(server.process.pid)
            timings = []
            for query in ("", "&start_time_ms=100&end_time_ms=200",
                          "&start_time_ms=1000&end_time_ms=1001"):
                t = time.perf_counter()
                with urllib.request.urlopen(base + "&tag=trace_viewer&host=synthetic" + query,
                                            timeout=600) as response:
                    doc = json.loads(response.read())
                timings.append(round(time.perf_counter() - t, 3))
            memory = _rss_kb(server.process.pid)
        finally:
            stop(server)
        return {"events": doc["total_events"], "file_mb": round(
            (session / "synthetic.xplane.pb").stat().st_size / 2**20, 1),
            "write_s": round(write_s, 1), "request_s": timings,
            "server_rss_idle_mb": idle["VmRSS"] // 1024,
            "server_rss_mb": memory["VmRSS"] // 1024,
            "server_peak_rss_mb": memory["VmHWM"] // 1024}


def run(path: Path, reference_python: str | None, synthetic_events: int) -> dict[str, object]:
    env = dict(os.environ, TB_PROFILE_CACHE_DIR="off")
    report: dict[str, object] = {"file": str(path), "cpus": os.cpu_count()}
    result = subprocess.run([sys.executable, "-c", _COLD_CHILD, str(ROOT), str(path)],
                            env=env, check=True, capture_output=True, text=True)
    report.update(_last_json(result.stdout))
    pan = report["pan_zoom"]
    assert isinstance(pan, list)
    report["pan_zoom_max_ms"] = max(q["ms"] for q in pan)
    if reference_python:
        result = subprocess.run([reference_python, "-c", _REFERENCE_CHILD, str(path)],
                                check=True, capture_output=True, text=True)
        report.update(_last_json(result.stdout))
    report["every_1ms_window"] = every_1ms_window(path)
    if synthetic_events:
        report["synthetic"] = synthetic_server(synthetic_events)
    return report


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]), None, 0), indent=2))
