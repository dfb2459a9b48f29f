"""Scale benchmark (`scripts/bench.py --scale [PATH]`): 10M and 20M-event captures made from a
real one, measured side by side with the reference.

Captures (written once under `--scratch`, default /tmp/tbp_scale, and reused; never in the
repository), all made at the protobuf level by copying the real capture's events, so planes,
thread names, event and stat metadata and per-event stats are the real ones:

  1m         the real capture cut in time (its first ~1M events, every thread)
  2.3m       the real capture itself
  10m_longer, 20m_longer   the capture repeated in time: every thread once, then its busiest
             thread (the one with the step markers) played again and again after the capture's
             end until the total is reached, so one thread holds most events (18M of 20M)
  10m_wider, 20m_wider     the capture repeated as more threads: copies of every thread (new
             line ids, same names) over the same time span

Each copy gets its own flow and op ids (`_p`, `_c`, `id`: shifted modulo 2^64, so producers and
consumers still pair up within a copy), and the repeats in time their own step and iteration
numbers, so a copy is new work, not the same events again.

Figures, each from a fresh process with empty caches (`TB_PROFILE_CACHE_DIR` off for the
analysis views, a new empty directory for the trace):

  overview, tensorflow_stats   the view's document from the file on disk (decode included),
                               encoded as the server encodes it (orjson, json_text.py)
  trace                        the trace viewer's first window (decode, index, window, JSON);
                               then `trace_reopen`: a new process opening the same file from the
                               disk cache the first run wrote, and the same window; `pan_zoom`
                               the largest of 11 zoom/pan windows at 1600 px after the first
                               (server time: the document and its JSON as the server writes it)
  reference                    xprof 2.24.2 (`--reference-python`): overview_page,
                               framework_op_stats, trace_viewer@ at 1600 px, in a fresh process
                               each, capped by `--reference-timeout` (a capped run is reported as
                               `timeout`, never as a time)

Each of our figures is the median of `--runs` such processes (default 3; the spread is
printed beside it: on a VM one cold run can take twice another, first-touch memory), the
reference's one run (a 20M-event reference run takes minutes).

Every figure carries its CPU time (`cpu_s`: every thread of the child, which the machine's
load moves far less than the wall time), the child's own peak RSS (VmHWM: ru_maxrss would
count the parent's RSS at the fork) and the 1-minute load average before it (the machine is
shared).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MILLION = 1_000_000
SIZES = {"1m": 1_000_000, "10m": 10_000_000, "20m": 20_000_000}
#: Stats that identify a flow or an op: every copy gets its own values (modulo 2^64).
_ID_STATS = ("_p", "_c", "id")
#: Stats that number steps: repeats in time continue the numbering.
_STEP_STATS = ("step_num", "iter_num")
_GOLDEN = 0x9E3779B97F4A7C15
_GAP_PS = 10**9  # 1 ms between repeats in time


# -- captures ---------------------------------------------------------------------------------


def _host_plane(space: Any) -> Any:
    return max(space.planes, key=lambda p: sum(len(line.events) for line in p.lines))


def _shifter(plane: Any, names: tuple[str, ...], step_names: tuple[str, ...]) -> Any:
    """shift(event, copy): gives the event's id stats (and step stats) the copy's values."""
    ids = {k for k, m in plane.stat_metadata.items() if m.name in names}
    steps = {k for k, m in plane.stat_metadata.items() if m.name in step_names}
    step_span = 1 + max((s.int64_value for line in plane.lines for e in line.events
                         for s in e.stats if s.metadata_id in steps), default=0)

    def shift(event: Any, copy: int) -> None:
        for stat in event.stats:
            if stat.metadata_id in ids:
                which = stat.WhichOneof("value")
                value = (getattr(stat, which) + copy * _GOLDEN) % 2**64
                if which == "int64_value":
                    stat.int64_value = value - 2**64 if value >= 2**63 else value
                elif which == "uint64_value":
                    stat.uint64_value = value
            elif stat.metadata_id in steps:
                stat.int64_value += copy * step_span

    return shift


def _events(space: Any) -> int:
    return sum(len(line.events) for plane in space.planes for line in plane.lines)


def _cut(space: Any, target: int) -> None:
    """Keeps the events that end by the time `target` events have ended (every thread)."""
    import numpy as np

    plane = _host_plane(space)
    ends = np.sort(np.concatenate([
        np.array([line.timestamp_ns * 1000 + e.offset_ps + e.duration_ps for e in line.events],
                 np.int64) for line in plane.lines]))
    cutoff = int(ends[min(target, len(ends)) - 1])
    for line in plane.lines:
        base = line.timestamp_ns * 1000
        kept = [e for e in line.events if base + e.offset_ps + e.duration_ps <= cutoff]
        del line.events[:]
        line.events.extend(kept)


def _longer(space: Any, target: int) -> None:
    plane = _host_plane(space)
    step_stats = {m.name for m in plane.stat_metadata.values()} & set(_STEP_STATS)
    busiest = max(plane.lines, key=lambda ln: sum(
        1 for e in ln.events for s in e.stats
        if plane.stat_metadata[s.metadata_id].name in step_stats) * 10**9 + len(ln.events))
    period = max(e.offset_ps + e.duration_ps for ln in plane.lines for e in ln.events) + _GAP_PS
    shift = _shifter(plane, _ID_STATS, _STEP_STATS)
    source = list(busiest.events)
    copy = 0
    while _events(space) < target:
        copy += 1
        count = min(len(source), target - _events(space))
        template = type(busiest)()
        template.events.extend(source[:count])
        for event in template.events:
            event.offset_ps += copy * period
            shift(event, copy)
        busiest.events.extend(template.events)


def _wider(space: Any, target: int) -> None:
    plane = _host_plane(space)
    shift = _shifter(plane, _ID_STATS, ())
    source = list(plane.lines)
    copy = 0
    while _events(space) < target:
        copy += 1
        for line in source:
            count = min(len(line.events), target - _events(space))
            if count <= 0:
                break
            new = plane.lines.add()
            new.CopyFrom(line)
            del new.events[count:]
            new.id = (line.id + copy * _GOLDEN) % 2**63
            if "/" in line.name:
                new.name = f"{line.name.split('/', 1)[0]}/{new.id}"
            for event in new.events:
                shift(event, copy)


def make_captures(source: Path, scratch: Path, names: list[str]) -> dict[str, Path]:
    """The named captures (`1m`, `2.3m`, `10m_longer`, ...), built once under `scratch`."""
    sys.path.insert(0, str(ROOT))
    from tb_profile_plugin.xspace.pb import xplane_pb2

    paths: dict[str, Path] = {}
    for name in names:
        if name == "2.3m":
            paths[name] = source
            continue
        path = scratch / name / "plugins" / "profile" / "s" / f"{source.name}"
        paths[name] = path
        if path.exists():
            continue
        t = time.perf_counter()
        space = xplane_pb2.XSpace.FromString(source.read_bytes())
        size, _, shape = name.partition("_")
        {"": _cut, "longer": _longer, "wider": _wider}[shape](space, SIZES[size])
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(space.SerializeToString())
        tmp.rename(path)
        print(f"wrote {path}: {_events(space):,} events, {path.stat().st_size / 2**20:.0f} MB "
              f"in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return paths


# -- measuring --------------------------------------------------------------------------------

_OURS = r"""
import inspect, json, sys, time
sys.path.insert(0, sys.argv[1])
work, path = sys.argv[2], sys.argv[3]
t0 = time.perf_counter()
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.store import ProfileStore
view = registry.VIEWS["trace_viewer" if work.startswith("trace") else
                     {"overview": "overview_page"}.get(work, work)]
try:  # what the server sends (orjson); a tree from before json_text.py: the stdlib's
    from tb_profile_plugin.json_text import json_bytes as serialise
except ImportError:
    serialise = json.dumps
from tb_profile_plugin import request_budget


def build(params):  # as the server builds it: a request under its budget
    with request_budget.bounded(request_budget.request_seconds()):
        return view.build(registry.ViewRequest("bench", "host", {"host": profile}, params))


t, cpu = time.perf_counter(), time.process_time()
if "stats_later" in inspect.signature(ProfileStore.open).parameters:  # as the server opens
    profile = ProfileStore().open(path, stats_later=view.events_first)  # it (stats_later.py)
else:  # a tree from before `events_first`
    profile = ProfileStore().open(path)
out = {"open_s": time.perf_counter() - t, "decoder": profile.decoder,
       "events": profile.num_events}
doc = build({})
serialise(doc)
out["s"] = time.perf_counter() - t
out["cpu_s"] = time.process_time() - cpu  # every thread's CPU: a figure the load moves less
if doc.get("derived_pending"):  # the lines first (trace/lines_first.py): until every track,
    out["lines_first"] = True   # asked again as the page does (every second)
    while doc.get("derived_pending"):
        time.sleep(1.0)
        doc = build({})
        serialise(doc)
    out["whole_s"] = time.perf_counter() - t
if work == "trace":
    span = doc["full_timespan_ms"][1]
    slowest = 0.0
    for frac, pos in [(0.99, 0.005), (0.5, 0.25), (0.1, 0.45), (0.1, 0.5), (0.01, 0.3),
                      (0.01, 0.31), (0.001, 0.7), (0.0001, 0.2), (0.3, 0.0), (0.3, 0.1),
                      (0.05, 0.9)]:
        a = span * pos; b = min(span, a + span * frac)
        t = time.perf_counter()
        serialise(build({"start_time_ms": str(a), "end_time_ms": str(b),
                         "resolution": "1600"}))
        slowest = max(slowest, time.perf_counter() - t)
    out["pan_zoom_max_ms"] = round(slowest * 1000, 1)
out["rss_mb"] = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
print(json.dumps(out))
"""

_REFERENCE = r"""
import json, os, shutil, sys, tempfile, time
from xprof.convert import raw_to_tool_data
path, tool = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:  # xprof writes cache files beside its input
    session = os.path.join(tmp, "plugins", "profile", "s")
    os.makedirs(session)
    copy = os.path.join(session, os.path.basename(path))
    os.link(path, copy) if os.stat(path).st_dev == os.stat(tmp).st_dev else shutil.copyfile(
        path, copy)
    options = {"use_saved_result": False}
    if tool == "trace_viewer@":
        options = {"use_saved_result": False, "hosts": [os.path.basename(path)[:-11]],
                   "trace_viewer_options": {"resolution": "1600"}}
    t, cpu = time.perf_counter(), time.process_time()
    raw_to_tool_data.xspace_to_tool_data([copy], tool, options)
    seconds, cpu_s = time.perf_counter() - t, time.process_time() - cpu
rss_kb = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(json.dumps({"s": seconds, "cpu_s": cpu_s, "rss_mb": rss_kb / 1024}))
"""

REFERENCE_TOOL = {"overview": "overview_page", "tensorflow_stats": "framework_op_stats",
                  "trace": "trace_viewer@", "kernel_stats": "kernel_stats",
                  "input_pipeline_analyzer": "input_pipeline_analyzer"}


def _run(argv: list[str], env: dict[str, str], timeout_s: float | None) -> dict[str, Any]:
    load = os.getloadavg()[0]
    try:
        result = subprocess.run(argv, env=env, capture_output=True, text=True,
                                timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"timeout_s": timeout_s, "load": round(load, 2)}
    if result.returncode:
        return {"error": result.stderr.strip().splitlines()[-1:], "load": round(load, 2)}
    out = json.loads(result.stdout.strip().splitlines()[-1])
    out["load"] = round(load, 2)
    return out


def ours(work: str, path: Path, cache_dir: str, root: Path = ROOT) -> dict[str, Any]:
    """`root`: the checkout to run (another one for a before/after in one run)."""
    env = dict(os.environ, TB_PROFILE_CACHE_DIR=cache_dir)
    return _run([sys.executable, "-c", _OURS, str(root), work, str(path)], env, None)


def reference(python: str, work: str, path: Path, timeout_s: float) -> dict[str, Any]:
    return _run([python, "-c", _REFERENCE, str(path), REFERENCE_TOOL[work]], dict(os.environ),
                timeout_s)


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median time (the upper one of an even count), with every run's seconds
    beside it (`s_runs`): on a VM one cold run can take twice another (first-touch memory)."""
    timed = sorted((r for r in runs if "s" in r), key=lambda r: r["s"])
    if not timed:
        return runs[-1]
    middle = dict(timed[len(timed) // 2])
    middle["s_runs"] = [round(r["s"], 2) for r in runs if "s" in r]
    return middle


def _measure(name: str, path: Path, works: list[str], reference_python: str | None,
             reference_timeout_s: float, reference_names: set[str],
             runs: int = 1) -> dict[str, Any]:
    row: dict[str, Any] = {"file_mb": round(path.stat().st_size / 2**20, 1)}
    for work in works:
        if work == "trace":
            cold, reopened = [], []
            for _ in range(runs):  # each cold run with an empty disk cache of its own
                with tempfile.TemporaryDirectory() as cache_dir:
                    cold.append(ours("trace", path, cache_dir))
                    reopened.append(ours("trace_reopen", path, cache_dir))
            row["trace"], row["trace_reopen"] = median_run(cold), median_run(reopened)
            zooms = [r["pan_zoom_max_ms"] for r in cold if "pan_zoom_max_ms" in r]
            if zooms:  # the largest window of every run, not of the median one alone
                row["trace"]["pan_zoom_max_ms"] = max(zooms)
        else:
            row[work] = median_run([ours(work, path, "off") for _ in range(runs)])
        if reference_python and name in reference_names:
            row[f"reference_{work}"] = reference(reference_python, work, path,
                                                 reference_timeout_s)
        print(f"{name} {work}: {json.dumps({k: v for k, v in row.items() if work in k})}",
              file=sys.stderr)
    return row


def _fmt(fig: dict[str, Any] | None) -> str:
    if not fig:
        return "–"
    if "timeout_s" in fig:
        return f"> {fig['timeout_s']:.0f} s (capped), load {fig['load']}"
    if "error" in fig:
        return f"failed: {fig['error']}"
    rss = fig["rss_mb"]
    memory = f"{rss / 1024:.2f} GB" if rss >= 1024 else f"{rss:.0f} MB"
    spread = ""
    if len(fig.get("s_runs", [])) > 1:
        spread = f"; {len(fig['s_runs'])} runs {min(fig['s_runs']):.2f}–{max(fig['s_runs']):.2f} s"
    return f"{fig['s']:.2f} s, {memory} (load {fig['load']}{spread})"


def _ratio(us: dict[str, Any] | None, ref: dict[str, Any] | None) -> str:
    if not us or not ref or "s" not in us:
        return "–"
    if "timeout_s" in ref:
        return f"< {us['s'] / ref['timeout_s']:.2f}"
    return f"{us['s'] / ref['s']:.2f}" if "s" in ref else "–"


def tables(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| capture | work | us | reference | ratio |", "|---|---|---|---|---|"]
    for name, row in results.items():
        for work in ("overview", "tensorflow_stats", "trace"):
            if work not in row:
                continue
            ref = row.get(f"reference_{work}")
            label = {"trace": "trace first window"}.get(work, work) + " cold"
            lines.append(f"| {name} | {label} | {_fmt(row[work])} | {_fmt(ref)} | "
                         f"{_ratio(row[work], ref)} |")
            if work == "trace":
                lines.append(f"| {name} | trace reopened (disk cache) | "
                             f"{_fmt(row['trace_reopen'])} | – | – |")
                lines.append(f"| {name} | zoom/pan windows, 1600 px (largest) | "
                             f"{row['trace'].get('pan_zoom_max_ms', '–')} ms | – | – |")
    lines += ["", "Growth (longer shape):", "",
              "| events | overview us / ref | tensorflow_stats us / ref | trace us / ref |",
              "|---|---|---|---|"]
    for name in ("1m", "2.3m", "10m_longer", "20m_longer"):
        row = results.get(name)
        if not row:
            continue
        cells = [f"{_short(row.get(w))} / {_short(row.get('reference_' + w))}"
                 for w in ("overview", "tensorflow_stats", "trace")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _short(fig: dict[str, Any] | None) -> str:
    if not fig:
        return "–"
    if "s" not in fig:
        return "capped" if "timeout_s" in fig else "failed"
    return f"{fig['s']:.2f} s {fig['rss_mb']:.0f} MB"


def run(source: Path, scratch: Path, names: list[str], works: list[str],
        reference_python: str | None, reference_timeout_s: float,
        reference_names: set[str], runs: int = 1) -> dict[str, Any]:
    paths = make_captures(source, scratch, names)
    results = {name: _measure(name, paths[name], works, reference_python,
                              reference_timeout_s, reference_names, runs) for name in names}
    return {"cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "captures": results,
            "table": tables(results)}
