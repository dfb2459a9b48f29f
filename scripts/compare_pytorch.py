"""Print what torch-tb-profiler 0.4.3, HolisticTraceAnalysis 0.5.0 and ``tb-profile`` make of
PyTorch traces (``*.pt.trace.json[.gz]``), side by side, for checking our PyTorch views.

Neither tool is imported by the project or its tests: each one runs in a subprocess with the
Python of a separate virtual environment (``--venv``; both read JSON without torch)::

    python3 -m venv /tmp/cmp_venv
    /tmp/cmp_venv/bin/pip install torch-tb-profiler==0.4.3 HolisticTraceAnalysis==0.5.0
    python scripts/compare_pytorch.py --venv /tmp/cmp_venv                # defaults below
    python scripts/compare_pytorch.py --venv /tmp/cmp_venv tests/data/pytorch_gloo_2ranks

A TARGET is a trace file or a directory; every directory holding trace files (at any depth)
is one run. Default targets: ``tests/data/pytorch_*`` and every directory of
``/tmp/public_traces`` (public traces, decompressed, never committed). Per run it prints:

* torch-tb-profiler, per file (worker): step times and the overview's step-time breakdown
  per step (its categories: Kernel, Memcpy, Memset, Runtime, DataLoader, CPU Exec, Other),
  the average breakdown, the top 10 operators by host self time with device self time, the
  top 10 kernels by total time, the memory peaks per device, the GPU summary; for several
  workers with communication, its distributed view (per-rank computation / overlap /
  communication / waiting per step).
* HolisticTraceAnalysis, per run: ranks, ``get_profiler_steps()``, ProfilerStep durations
  from its parsed frame (it rounds ns-resolution times down), the temporal breakdown, the
  kernel-type breakdown and top kernels, communication/computation overlap.
* ``tb-profile`` (ours; ``--tb-profile``): ``summary --json`` step times, breakdown and top
  ops (all hosts, then per host when the run has several worker files), and the
  ``memory_profile`` peak per memory id (per host); when it does not read the run yet, the
  first line of its error.

Each tool gets ``--timeout`` seconds per run; a failure is printed, never fatal.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TARGETS = (
    *sorted(str(p) for p in (REPO_ROOT / "tests" / "data").glob("pytorch_*")),
    *sorted(str(p) for p in Path("/tmp/public_traces").glob("*") if p.is_dir()),
)
TRACE_RE = re.compile(r"\.(pt\.trace\.)?json(\.gz)?$")
MARK = "@@COMPARE_JSON@@"
TOP = 10


def _trace_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_file() and TRACE_RE.search(p.name))


def find_runs(targets: Iterable[str]) -> list[tuple[Path, list[Path]]]:
    """(run directory, its trace files) for every target."""
    runs: list[tuple[Path, list[Path]]] = []
    for target in targets:
        path = Path(target)
        if path.is_file():
            runs.append((path.parent, [path]))
            continue
        for directory in sorted({path, *(p for p in path.rglob("*") if p.is_dir())}):
            files = _trace_files(directory)
            if files:
                runs.append((directory, files))
    return runs


# --------------------------------------------------------------------------------------
# Inside the comparison venv (hidden modes): each prints one JSON object after MARK.
# --------------------------------------------------------------------------------------


def _ttb_steps(overview: dict[str, Any]) -> list[dict[str, Any]]:
    table = overview.get("steps") or {}
    names = [c.get("name") for c in table.get("columns", [])]
    out = []
    for row in table.get("rows", []):
        parts = {n: v for n, v in zip(names, row, strict=False)
                 if n and n != "Step" and isinstance(v, (int, float))}
        out.append({"step": row[0], "total_us": sum(parts.values()), "breakdown_us": parts})
    return out


def _ttb_one(worker: str, path: Path, cache: str) -> tuple[dict[str, Any], Any]:
    from torch_tb_profiler.profiler.data import DistributedRunProfileData, RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    data = RunProfileData.parse(worker, None, str(path), cache)
    prof = RunGenerator(worker, None, data).generate_run_profile()
    ops = sorted((prof.operation_table_by_name or {}).get("data", []),
                 key=lambda r: -r.get("host_self_duration", 0))[:TOP]
    kernels: list[Any] = []
    if prof.kernel_table:
        cols = [c["name"] for c in prof.kernel_table["data"]["columns"]]
        rows = [dict(zip(cols, r, strict=False)) for r in prof.kernel_table["data"]["rows"]]
        kernels = sorted(rows, key=lambda r: -r.get("Total Duration (us)", 0))[:TOP]
    try:
        peaks = prof.get_memory_curve()["metadata"]["peaks"]
    except Exception as exc:  # noqa: BLE001 - report what the tool does
        peaks = f"error: {exc!r}"
    perf = (prof.overview or {}).get("performance") or [{}]
    result = {
        "worker": worker,
        "file": path.name,
        "steps_names": list(getattr(data, "steps_names", []) or []),
        "steps": _ttb_steps(prof.overview or {}),
        "average": {c["name"]: [c["value"], c["extra"]] for c in perf[0].get("children", [])},
        "top_ops": [{k: r.get(k) for k in ("name", "calls", "host_self_duration",
                                            "device_self_duration")} for r in ops],
        "top_kernels": [{"name": r.get("Name"), "calls": r.get("Calls"),
                         "total_us": r.get("Total Duration (us)")} for r in kernels],
        "memory_peaks": peaks,
        "gpu_summary": prof.gpu_summary,
    }
    return result, DistributedRunProfileData(data)


def run_ttb(files: Sequence[str]) -> dict[str, Any]:
    from torch_tb_profiler import consts

    cache = tempfile.mkdtemp(prefix="ttb_cache_")
    workers, dist = [], []
    for name in files:
        path = Path(name)
        match = consts.WORKER_PATTERN.match(path.name)
        worker = match.group(1) if match else path.stem
        try:
            one, d = _ttb_one(worker, path, cache)
            workers.append(one)
            dist.append(d)
        except Exception as exc:  # noqa: BLE001 - report what the tool does
            workers.append({"worker": worker, "file": path.name, "error": repr(exc)[:300]})
    distributed: Any = None
    if len(dist) > 1:
        try:
            from torch_tb_profiler.profiler.loader import RunLoader

            loader = RunLoader.__new__(RunLoader)
            loader.run_name = "compare"
            prof = loader._process_distributed_profiles(dist, None)
            distributed = None if prof is None else {
                "steps_to_wait": prof.steps_to_wait, "steps_to_overlap": prof.steps_to_overlap}
        except Exception as exc:  # noqa: BLE001
            distributed = f"error: {exc!r}"[:300]
    return {"workers": workers, "distributed": distributed}


def run_hta(run_dir: str) -> dict[str, Any]:
    from hta.trace_analysis import TraceAnalysis

    out: dict[str, Any] = {}
    analysis = TraceAnalysis(trace_dir=run_dir)
    traces = analysis.t
    out["ranks"] = sorted(int(r) for r in traces.traces)
    try:
        out["profiler_steps"] = [int(s) for s in analysis.get_profiler_steps()]
    except Exception as exc:  # noqa: BLE001
        out["profiler_steps"] = f"error: {exc!r}"[:200]
    symbols = list(traces.symbol_table.get_sym_table())
    steps: dict[str, Any] = {}
    for rank in out["ranks"]:
        frame = traces.get_trace(rank)
        ids = [i for i, s in enumerate(symbols) if str(s).startswith("ProfilerStep#")]
        rows = frame[frame["name"].isin(ids)]
        steps[str(rank)] = sorted((symbols[int(n)], float(d))
                                  for n, d in zip(rows["name"], rows["dur"], strict=True))
    out["step_durations_us"] = steps
    for key, call in (
        ("temporal_breakdown", lambda: analysis.get_temporal_breakdown(visualize=False)),
        ("kernel_breakdown", lambda: analysis.get_gpu_kernel_breakdown(visualize=False)),
        ("comm_comp_overlap", lambda: analysis.get_comm_comp_overlap(visualize=False)),
    ):
        try:
            value = call()
            frames = value if isinstance(value, tuple) else (value,)
            out[key] = [f.head(TOP).to_dict(orient="records") for f in frames]
        except Exception as exc:  # noqa: BLE001
            out[key] = f"error: {exc!r}"[:200]
    return out


# --------------------------------------------------------------------------------------
# Driver: runs the tools and prints the comparison.
# --------------------------------------------------------------------------------------


def _call(cmd: list[str], timeout: float) -> tuple[Any, str]:
    """Run ``cmd``; (the JSON after MARK or None, the first error line)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):]), ""
    lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
    return None, f"rc={proc.returncode}: {lines[-1] if lines else ''}"[:300]


def _ms(us: Any) -> str:
    return f"{float(us) / 1000:.3f}" if isinstance(us, (int, float)) else str(us)


def print_ttb(res: dict[str, Any]) -> None:
    for w in res["workers"]:
        print(f"  [torch-tb-profiler] worker {w['worker']} ({w['file']})")
        if "error" in w:
            print(f"    error: {w['error']}")
            continue
        print(f"    steps it found: {w['steps_names']}")
        for s in w["steps"]:
            parts = ", ".join(f"{k} {_ms(v)}" for k, v in s["breakdown_us"].items())
            print(f"    step {s['step']}: {_ms(s['total_us'])} ms  ({parts})")
        avg = ", ".join(f"{k} {v[0]} us {v[1]}%" for k, v in w["average"].items())
        print(f"    average breakdown: {avg}")
        print("    top ops (host self us / device self us / calls):")
        for op in w["top_ops"]:
            print(f"      {op['host_self_duration']:>10} {op['device_self_duration']!s:>10} "
                  f"{op['calls']:>6}  {op['name']}")
        if w["top_kernels"]:
            print("    top kernels (total us / calls):")
            for k in w["top_kernels"]:
                print(f"      {k['total_us']:>10} {k['calls']:>6}  {str(k['name'])[:100]}")
        print(f"    memory peaks: {w['memory_peaks']}")
        if w["gpu_summary"]:
            print("    gpu summary: " + "; ".join(
                f"{g['title']} {g['value']}" for g in w["gpu_summary"]))
    if res["distributed"] is not None:
        print(f"  [torch-tb-profiler] distributed: {json.dumps(res['distributed'])[:1500]}")


def print_hta(res: dict[str, Any]) -> None:
    print(f"  [HTA] ranks {res['ranks']}, get_profiler_steps() {res['profiler_steps']}")
    for rank, steps in res["step_durations_us"].items():
        print(f"    rank {rank} steps (ms): "
              + ", ".join(f"{n} {_ms(d)}" for n, d in steps))
    for key in ("temporal_breakdown", "kernel_breakdown", "comm_comp_overlap"):
        print(f"    {key}: {json.dumps(res[key], default=str)[:1200]}")


def _ours_json(tb_profile: str, args: list[str], timeout: float) -> tuple[Any, str]:
    try:
        proc = subprocess.run([tb_profile, *args], capture_output=True, text=True,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, repr(exc)
    if proc.returncode != 0:
        first = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[:1]
        return None, first[0][:200] if first else f"rc={proc.returncode}"
    return json.loads(proc.stdout), ""


def _print_ours_overview(doc: dict[str, Any], indent: str) -> None:
    for s in doc.get("steps", []):
        parts = ", ".join(f"{k} {v:.3f}" for k, v in s.get("breakdown_ms", {}).items() if v)
        print(f"{indent}step {s.get('step_num')}: {s.get('step_time_ms', 0):.3f} ms ({parts})")
    avg = doc.get("step_time_ms") or {}
    cats = ", ".join(f"{c.get('label')} {c.get('percent', 0):.1f}%"
                     for c in (doc.get("categories") or {}).values() if c.get("percent"))
    print(f"{indent}average {avg.get('avg', 0):.3f} ms; breakdown: {cats}")


def _ours_steps(doc: dict[str, Any]) -> dict[str, float]:
    return {str(st.get("step_num")): float(st.get("step_time_ms", 0))
            for st in doc.get("steps", [])}


def run_ours(tb_profile: str, run_dir: Path, files: Sequence[Path], timeout: float
             ) -> dict[str, dict[str, float]]:
    """Our figures: ``tb-profile summary --json`` (all hosts, then each worker file's host
    when several) and the memory_profile peak (per host)."""
    doc, err = _ours_json(tb_profile, ["summary", "--json", str(run_dir)], timeout)
    if doc is None:
        print(f"  [tb-profile] does not read it yet: {err}")
        return {}
    env = doc.get("run_environment") or {}
    hosts = sorted({f.name.split(".")[0] for f in files}) if len(files) > 1 else []
    print(f"  [tb-profile] run {doc.get('run')} host {doc.get('host')} "
          f"framework {env.get('framework')} device {env.get('device_type')}")
    _print_ours_overview(doc, "    ")
    steps = {"": _ours_steps(doc)}
    for key in ("top_host_ops", "top_device_ops"):
        for op in (doc.get(key) or [])[:TOP]:
            print(f"    {key}: {op.get('self_time_ms', 0):.3f} ms x{op.get('occurrences')} "
                  f"{str(op.get('name'))[:100]}")
    if len(hosts) > 1:
        for host in hosts:
            one, err = _ours_json(tb_profile, ["summary", "--json", "--host", host,
                                               str(run_dir)], timeout)
            print(f"    host {host}:" + ("" if one else f" {err}"))
            if one:
                _print_ours_overview(one, "      ")
                steps[host] = _ours_steps(one)
    for host in hosts or [None]:
        extra = ["--host", host] if host else []
        label = f"memory_profile{f' {host}' if host else ''}"
        mem, err = _ours_json(tb_profile, ["view", *extra, str(run_dir), "memory_profile",
                                           "--json"], timeout)
        if mem is None:
            print(f"    {label}: {err}")
            continue
        print(f"    {label}: memory ids {mem.get('memory_ids')}")
        for memory_id in mem.get("memory_ids") or []:
            one, err = _ours_json(tb_profile, [
                "view", *extra, str(run_dir), "memory_profile", "--json",
                "--param", f"memory_id={memory_id}"], timeout)
            peak = ((one or {}).get("summary") or {}).get("peak") or {}
            heap = peak.get("heap_bytes") or 0
            print(f"      {memory_id}: " + (err if one is None else
                  f"peak heap {heap} bytes ({heap / 1024:.1f} KiB) at {peak.get('time_ms')} ms"
                  f" (step {peak.get('step')})"))

    return steps

def _rank_of(path: Path) -> int | None:
    """``distributedInfo.rank`` of a trace file (None without it)."""
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        info = json.load(fh).get("distributedInfo") or {}
    rank = info.get("rank")
    return int(rank) if isinstance(rank, int) else None


def print_side_by_side(files: Sequence[Path], ttb: Any, hta: Any,
                       ours: dict[str, dict[str, float]]) -> None:
    """Per worker file: each step's time (ms) from the three tools on one line."""
    print("  [side by side] step time ms: torch-tb-profiler | HTA | tb-profile")
    ranks = {f.name: _rank_of(f) for f in files} if len(files) > 1 else {}
    for f in files:
        worker = next((w for w in (ttb or {}).get("workers", []) if w.get("file") == f.name),
                      {})
        by_ttb: dict[str, list[float]] = {}
        for st in worker.get("steps", []):
            by_ttb.setdefault(str(st["step"]), []).append(st["total_us"] / 1000)
        rank = ranks.get(f.name, None) if len(files) > 1 else None
        hta_steps = (hta or {}).get("step_durations_us", {})
        key = str(rank) if rank is not None else (next(iter(hta_steps), None)
                                                 if len(files) == 1 else None)
        by_hta: dict[str, list[float]] = {}
        for name, dur in hta_steps.get(key, []) if key is not None else []:
            by_hta.setdefault(name.split("#", 1)[1], []).append(dur / 1000)
        host = f.name.split(".")[0] if len(files) > 1 else ""
        by_ours = ours.get(host, {})
        steps = sorted({*by_ttb, *by_hta, *by_ours}, key=lambda x: (len(x), x))

        def fmt(values: list[float]) -> str:
            return " + ".join(f"{v:.3f}" for v in values) if values else "-"

        print(f"    {f.name}:" + ("" if steps else " no steps in any tool"))
        for step in steps:
            print(f"      step {step:>6}: {fmt(by_ttb.get(step, [])):>18} | "
                  f"{fmt(by_hta.get(step, [])):>18} | "
                  f"{fmt([by_ours[step]] if step in by_ours else []):>10}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="trace files or directories")
    parser.add_argument("--venv", type=Path, default=Path("/tmp/cmp_venv"),
                        help="virtual environment with torch-tb-profiler and HTA")
    parser.add_argument("--tb-profile", default=str(Path(sys.executable).parent / "tb-profile"),
                        help="our CLI (default: next to this Python)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per tool per run")
    parser.add_argument("--_ttb", nargs="+", dest="ttb", help=argparse.SUPPRESS)
    parser.add_argument("--_hta", dest="hta", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ttb:
        print(MARK + json.dumps(run_ttb(args.ttb), default=str), flush=True)
        return 0
    if args.hta:
        print(MARK + json.dumps(run_hta(args.hta), default=str), flush=True)
        return 0
    python = str(args.venv / "bin" / "python")
    me = str(Path(__file__).resolve())
    for run_dir, files in find_runs(args.targets or DEFAULT_TARGETS):
        size = sum(f.stat().st_size for f in files)
        print(f"== {run_dir} ({len(files)} file(s), {size / 1e6:.1f} MB)", flush=True)
        ttb, err = _call([python, me, "--_ttb", *map(str, files)], args.timeout)
        print_ttb(ttb) if ttb else print(f"  [torch-tb-profiler] failed: {err}")
        hta, err = _call([python, me, "--_hta", str(run_dir)], args.timeout)
        print_hta(hta) if hta else print(f"  [HTA] failed: {err}")
        ours = run_ours(args.tb_profile, run_dir, files, args.timeout)
        print_side_by_side(files, ttb, hta, ours)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
