#!/usr/bin/env python3
"""Benchmark: decoding an .xplane.pb into columns, cold and from the disk cache.

    python scripts/make_fixtures.py --large /tmp/tbp_large     # a >= 2M-event real capture
    python scripts/bench.py /tmp/tbp_large                      # a file or a directory

Each figure comes from a fresh child process, so nothing is warm that should not be:
  parse_only_s     protobuf's own full parse of the file (the floor the reference starts from)
  cold_decode_s    bytes on disk -> columnar Profile (compiled decoder, and pure numpy)
  cache_write_s    writing the disk cache entry
  cached_open_s    a new process opening the same file again (disk cache hit)
  peak_mb          peak Python-tracked memory of the cold decode (tracemalloc), and its ratio
                   to the file size
  <view>_cold_s    a view's document from the file on disk, decode included (no disk cache),
                   for overview_page, input_pipeline_analyzer, tensorflow_stats and
                   kernel_stats; <view>_warm_s the same
                   request again in the same process (what a second page load costs)
  reference_<view>_s  with `--reference-python PY`: the reference plugin's conversion of the
                   same file, timed in a separate interpreter that has `xprof` installed (a
                   scratch venv outside the project; the project never imports it)
With `--trace PATH`: the trace viewer's window queries, the every-1-ms-window check on PATH,
the reference's `trace_viewer@`, and a 10M-event synthetic profile served by a real TensorBoard
(scripts/bench_trace.py).
With `--hosts N` (no path): one synthetic host vs N hosts analysed in parallel, wall time and
peak memory of the process tree (scripts/bench_hosts.py). With `--hosts N --capture FILE`: N
links of a real capture, cold ALL_HOSTS pod viewer and overview on the local pool, a 2-worker
Dask cluster and the reference (`--reference-python`), server and tree peak RSS, load average
(`--engines`, `--views` choose; docs/cluster.md has the figures).
With `--scale [PATH]`: 1M, 10M and 20M-event captures made from the real capture PATH (default
/tmp/tbp_large), "longer" (repeated in time) and "wider" (repeated as more threads), written once
under `--scratch`; overview, tensorflow_stats and the trace's first window cold (and reopened
from the disk cache), time and peak RSS, beside the reference's (scripts/bench_scale.py).
With `--device gpu8_2m,gpu8_10m,...`: device-heavy GPU captures (2M/10M/20M events, 8 GPUs,
repeated in time) and a host capture with many TF op rows, made at bench time from the committed
real captures; every view cold beside the reference, peak RSS per event (scripts/bench_device.py).
With `--warm PATH [--code DIR]`: every analysis view through the plugin's data route, cold
once then `--repeats` times warm (the same request again from the same server; median and
all, ms), load noted; `--code` runs another checkout, for before/after in one run
(scripts/bench_warm.py).
Prints one JSON object; `--json-out F` also writes it to F.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import inspect, json, os, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
mode, path = sys.argv[2], sys.argv[3]
out = {}
if mode == "parse":
    from tb_profile_plugin.xspace.pb import xplane_pb2
    data = open(path, "rb").read()
    t = time.perf_counter(); xplane_pb2.XSpace.FromString(data)
    out["parse_only_s"] = time.perf_counter() - t
elif mode in ("cold", "cold_numpy"):
    from tb_profile_plugin.xspace import cache
    from tb_profile_plugin.xspace.decode import decode_xspace
    from tb_profile_plugin.xspace.store import ProfileStore
    pure = mode == "cold_numpy"
    tracemalloc.start()
    t = time.perf_counter()
    data = open(path, "rb").read()
    profile = decode_xspace(data, pure=pure)
    out["cold_decode_s"] = time.perf_counter() - t
    out["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out["decoder"] = profile.decoder
    out["events"] = profile.num_events
    out["columns_mb"] = profile.nbytes / 2**20
    if not pure:
        from tb_profile_plugin.xspace.store import disk_key
        key = disk_key(path)
        t = time.perf_counter()
        cache.save(profile, key)
        out["cache_write_s"] = time.perf_counter() - t
elif mode.startswith("view:"):
    from tb_profile_plugin.tools import registry
    from tb_profile_plugin.xspace.store import ProfileStore
    view = registry.VIEWS[mode[5:]]
    for label in ("cold", "warm"):
        t = time.perf_counter()
        store = store if label == "warm" else ProfileStore()
        if "stats_later" in inspect.signature(ProfileStore.open).parameters:  # as the server
            profile = store.open(path, stats_later=view.events_first)  # opens it for the view
        else:  # a tree from before `events_first`
            profile = store.open(path)
        doc = view.build(registry.ViewRequest("bench", "host", {"host": profile}, {}))
        json.dumps(doc)
        out[f"{mode[5:]}_{label}_s"] = time.perf_counter() - t
    out[f"{mode[5:]}_steps"] = len(doc.get("steps", []))
elif mode == "cached":
    from tb_profile_plugin.xspace.store import ProfileStore
    t = time.perf_counter()
    store = ProfileStore()
    profile = store.open(path)
    out["cached_open_s"] = time.perf_counter() - t
    out["cached_decoder"] = profile.decoder
    t = time.perf_counter()
    total = sum(int(l.events.duration_ps.sum()) for p in profile.planes for l in p.lines)
    out["cached_touch_all_columns_s"] = time.perf_counter() - t
print(json.dumps(out))
"""


def _child(mode: str, path: Path, env: dict[str, str]) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(ROOT), mode, str(path)],
        env=env, check=True, capture_output=True, text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


_REFERENCE_CHILD = r"""
import os, shutil, sys, tempfile, time
from xprof.convert import raw_to_tool_data
path, tool = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:  # xprof writes cache files beside its input
    session = os.path.join(tmp, "plugins", "profile", "s")
    os.makedirs(session)
    copy = os.path.join(session, os.path.basename(path))
    shutil.copyfile(path, copy)
    t = time.perf_counter()
    raw_to_tool_data.xspace_to_tool_data([copy], tool, {"use_saved_result": False})
    print(time.perf_counter() - t)
"""


def _reference(python: str, path: Path, tool: str) -> float:
    result = subprocess.run([python, "-c", _REFERENCE_CHILD, str(path), tool], check=True,
                            capture_output=True, text=True)
    return float(result.stdout.strip().splitlines()[-1])


def _find(path: Path) -> Path:
    if path.is_file():
        return path
    files = sorted(path.glob("**/*.xplane.pb"), key=lambda p: p.stat().st_size)
    if not files:
        sys.exit(f"no .xplane.pb under {path}")
    return files[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, nargs="?",
                        help="an .xplane.pb or a directory holding one")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--reference-python", help="python of a scratch venv with xprof")
    parser.add_argument("--hosts", type=int, help="multi-host mode: N synthetic hosts")
    parser.add_argument("--server", action="store_true",
                        help="with --hosts: the plugin's ALL_HOSTS routes, server and tree RSS")
    parser.add_argument("--code", type=Path,
                        help="with --server or --warm: the checkout to run; with --device: a "
                        "second checkout measured right after ours (before/after in one run)")
    parser.add_argument("--scheduler", help="with --server: a Dask scheduler address")
    parser.add_argument("--steps", type=int, default=400, help="with --server: steps per host")
    parser.add_argument("--capture", type=Path,
                        help="with --hosts: N links of this real capture, cold ALL_HOSTS views "
                        "per engine (scripts/bench_hosts.py real_mode)")
    parser.add_argument("--engines", default="local,dask,reference",
                        help="with --capture: engines to measure (local, dask, reference)")
    parser.add_argument("--views", default="pod_viewer,overview_page",
                        help="with --capture: ALL_HOSTS views to measure")
    parser.add_argument("--trace", action="store_true",
                        help="trace viewer mode: window queries on PATH (scripts/bench_trace.py)")
    parser.add_argument("--trace-synthetic-events", type=int, default=10_000_000,
                        help="with --trace: events of the synthetic profile served (0: skip)")
    parser.add_argument("--scale", action="store_true",
                        help="10M/20M-event captures from PATH (scripts/bench_scale.py)")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/tbp_scale"),
                        help="with --scale: where the captures are written (and reused)")
    parser.add_argument("--captures", default="1m,2.3m,10m_longer,10m_wider,20m_longer,20m_wider",
                        help="with --scale: captures to measure")
    parser.add_argument("--works", default="overview,tensorflow_stats,trace",
                        help="with --scale: what to measure on each capture")
    parser.add_argument("--reference-captures", default="1m,2.3m,10m_longer,10m_wider,"
                        "20m_longer,20m_wider", help="with --scale: captures the reference runs on")
    parser.add_argument("--reference-timeout", type=float, default=300.0,
                        help="with --scale: seconds a reference run may take (capped beyond)")
    parser.add_argument("--runs", type=int, default=3,
                        help="with --scale: fresh processes per figure of ours (the median is "
                        "reported, with the spread); the reference runs once")
    parser.add_argument("--device", metavar="CAPTURES",
                        help="device-heavy GPU captures (gpu8_2m,gpu8_10m,gpu8_20m, nograph8_*, "
                        "graph8_*) and the TF-op host capture (tfops_2m), made from the committed "
                        "NVIDIA and keras_fit captures (scripts/bench_device.py)")
    parser.add_argument("--scratch-device", type=Path, default=Path("/tmp/tbp_device"),
                        help="with --device: where the captures are written (and reused)")
    parser.add_argument("--works-device",
                        default="overview,tensorflow_stats,kernel_stats,input_pipeline_analyzer,"
                        "trace", help="with --device: the views to measure")
    parser.add_argument("--reference-captures-device", default="gpu8_2m,gpu8_10m,nograph8_2m,"
                        "nograph8_10m,tfops_2m",
                        help="with --device: captures the reference runs on")
    parser.add_argument("--warm", action="store_true",
                        help="cold and warm data-route requests per view (bench_warm.py)")
    parser.add_argument("--repeats", type=int, default=5, help="with --warm: warm requests")
    args = parser.parse_args()
    if args.warm:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_warm import run as run_warm

        text = json.dumps(run_warm(_find(args.path or Path("/tmp/tbp_large")), args.code,
                                   repeats=args.repeats), indent=2)
        print(text)
        if args.json_out:
            args.json_out.write_text(text + "\n")
        return 0
    if args.device:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_device import run as run_device

        result = run_device(args.scratch_device, args.device.split(","),
                            args.works_device.split(","), args.reference_python,
                            args.reference_timeout,
                            set(args.reference_captures_device.split(",")), runs=max(1, args.runs),
                            before=args.code)
        print(result["table"], file=sys.stderr)
        text = json.dumps(result, indent=2)
        print(text)
        if args.json_out:
            args.json_out.write_text(text + "\n")
        return 0
    if args.scale:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_scale import run as run_scale

        result = run_scale(_find(args.path or Path("/tmp/tbp_large")), args.scratch,
                           args.captures.split(","), args.works.split(","),
                           args.reference_python, args.reference_timeout,
                           set(args.reference_captures.split(",")), runs=max(1, args.runs))
        print(result["table"], file=sys.stderr)
        text = json.dumps(result, indent=2)
        print(text)
        if args.json_out:
            args.json_out.write_text(text + "\n")
        return 0
    if args.trace:
        if args.path is None:
            parser.error("--trace needs a path")
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_trace import run as run_trace

        text = json.dumps(run_trace(_find(args.path), args.reference_python,
                                    args.trace_synthetic_events), indent=2)
        print(text)
        if args.json_out:
            args.json_out.write_text(text + "\n")
        return 0
    if args.hosts:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_hosts import real_mode, run, server_mode

        if args.capture:
            result = real_mode(_find(args.capture), args.hosts, args.engines.split(","),
                               args.views.split(","), args.reference_python)
        else:
            result = (server_mode(args.hosts, args.code, args.scheduler, args.steps)
                      if args.server else run(args.hosts))
        text = json.dumps(result, indent=2)
        print(text)
        if args.json_out:
            args.json_out.write_text(text + "\n")
        return 0
    if args.path is None:
        parser.error("give a path, or --hosts N")
    path = _find(args.path)
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, TB_PROFILE_CACHE_DIR=cache_dir)
        report: dict[str, object] = {
            "file": str(path), "file_mb": path.stat().st_size / 2**20, "cpus": os.cpu_count(),
        }
        report.update(_child("parse", path, env))
        numpy_run = _child("cold_numpy", path, env)
        report["cold_decode_numpy_s"] = numpy_run["cold_decode_s"]
        report["peak_numpy_mb"] = numpy_run["peak_mb"]
        report.update(_child("cold", path, env))
        report.update(_child("cached", path, env))
        off = dict(env, TB_PROFILE_CACHE_DIR="off")
        reference_tool = {"tensorflow_stats": "framework_op_stats"}
        for view in ("overview_page", "input_pipeline_analyzer", "tensorflow_stats",
                     "kernel_stats"):
            report.update(_child("view:" + view, path, off))
            tool = reference_tool.get(view, view)
            if args.reference_python and view != "kernel_stats":
                report[f"reference_{tool}_s"] = _reference(args.reference_python, path, tool)
    report["peak_to_file_ratio"] = report["peak_mb"] / report["file_mb"]
    text = json.dumps(report, indent=2)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
