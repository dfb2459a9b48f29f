"""Device-heavy benchmark (`scripts/bench.py --device`): GPU captures of 2M, 10M and 20M events
made from the committed real NVIDIA captures, and a host capture with many TF op rows, measured
side by side with the reference in one run (the measuring is bench_scale.py's: fresh processes,
cold, peak RSS as VmHWM, load before each figure).

Captures, written at bench time under `--scratch` (default /tmp/tbp_device; never committed) with
the project's protobuf classes, then streamed out at the wire level (an XLine's events are a
concatenation of serialized event runs, so a 20M-event file never sits in memory as messages):

  gpu8_<N>          tests/data/jax_nvidia_device_bound (kernels in CUDA graphs, 6 steps) widened
                    as an 8-GPU host writes it: /device:GPU:1..7 copies of GPU:0, each with a host
                    launch line of its own (the main thread's launch events, the ones carrying a
                    correlation id), then every plane repeated in time until N events (2m, 10m,
                    20m); ~83% of the events are on the GPUs
  nograph8_<N>      the same from tests/data/jax_nvidia_train_nograph (each kernel launched alone,
                    one correlation id per kernel; its Python tracer events make it ~32% device)
  graph8_<N>        the same from tests/data/jax_nvidia_train (CUDA graphs, host input pipeline)
  tfops_<N>         tests/data/keras_fit (299 TF op rows in tensorflow_stats) repeated in time

Ids that pair events are kept distinct per copy (GPU g of time copy k is copy k * 8 + g):
correlation_id, run_id, id, parent_id, element_id are shifted by copy * (largest value + 1); the
flow ids `_p`, `_c` (random 64-bit) by copy * 0x9E3779B97F4A7C15 modulo 2^64; step_num,
iter_num, step_id, group_id continue their numbering in each copy in time (GPUs of one step share
its number). scope_range_id (a key into the __ScopeRangeCallStack__ plane), program_id and the
CUDA graph ids keep their values: they name the same program.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {
    "gpu8": "jax_nvidia_device_bound",
    "nograph8": "jax_nvidia_train_nograph",
    "graph8": "jax_nvidia_train",
    "tfops": "keras_fit",
}
SIZES = {"50k": 50_000, "2m": 2_000_000, "5m": 5_000_000, "10m": 10_000_000, "20m": 20_000_000}
GPUS = 8
_ADD_IDS = ("correlation_id", "run_id", "id", "parent_id", "element_id")
_HASH_IDS = ("_p", "_c")
_STEPS = ("step_num", "iter_num", "step_id", "group_id")
_GOLDEN = 0x9E3779B97F4A7C15
_GAP_PS = 10**9  # 1 ms between copies in time


def _field(number: int, payload: bytes) -> bytes:
    from tb_profile_plugin.trace import wire  # (imported where used, as the pb classes are)

    return wire.key(number, wire.LEN) + wire.varint(len(payload)) + payload


def _source_file(name: str) -> Path:
    files = sorted((ROOT / "tests" / "data" / name).glob("**/*.xplane.pb"))
    if not files:
        sys.exit(f"no capture under tests/data/{name}")
    return files[0]


class _Shifter:
    """Rewrites one copy's id and step stats in place on template events."""

    def __init__(self, space: Any) -> None:
        self.spans: dict[str, int] = {}
        for plane in space.planes:
            names = {k: m.name for k, m in plane.stat_metadata.items()}
            for line in plane.lines:
                for event in line.events:
                    for stat in event.stats:
                        name = names.get(stat.metadata_id)
                        if name in _ADD_IDS or name in _STEPS:
                            which = stat.WhichOneof("value")
                            if which in ("int64_value", "uint64_value"):
                                value = abs(getattr(stat, which))
                                self.spans[name] = max(self.spans.get(name, 0), value + 1)

    def plan(self, plane: Any, events: Any) -> list[tuple[Any, str, int, int, bool]]:
        """(stat, field, base value, span, is a step) for every stat a copy rewrites."""
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        out = []
        for event in events:
            for stat in event.stats:
                name = names.get(stat.metadata_id)
                which = stat.WhichOneof("value")
                if which not in ("int64_value", "uint64_value"):
                    continue
                if name in _HASH_IDS:
                    out.append((stat, which, getattr(stat, which), -1, False))
                elif name in _ADD_IDS:
                    out.append((stat, which, getattr(stat, which), self.spans[name], False))
                elif name in _STEPS:
                    out.append((stat, which, getattr(stat, which), self.spans[name], True))
        return out


def _apply(plan: list[tuple[Any, str, int, int, bool]], copy: int, time_copy: int) -> None:
    for stat, which, base, span, is_step in plan:
        if span < 0:
            value = (base + copy * _GOLDEN) % 2**64
        else:
            value = (base + (time_copy if is_step else copy) * span) % 2**64
        if which == "int64_value":
            setattr(stat, which, value - 2**64 if value >= 2**63 else value)
        else:
            setattr(stat, which, value)


def _widen(space: Any, gpus: int) -> list[tuple[Any, Any, int]]:
    """(plane, line, gpu) for every line of the widened capture, planes added to `space`."""
    from tb_profile_plugin.xspace.pb import xplane_pb2

    rows: list[tuple[Any, Any, int]] = []
    gpu0 = [p for p in space.planes if p.name == "/device:GPU:0"]
    host = [p for p in space.planes if p.name == "/host:CPU"]
    for plane in list(space.planes):
        for line in plane.lines:
            rows.append((plane, line, 0))
    if not gpu0 or gpus <= 1:
        return rows
    launches: list[Any] = []
    if host:
        cid = {k for k, m in host[0].stat_metadata.items() if m.name == "correlation_id"}
        for line in host[0].lines:
            kept = [e for e in line.events if any(s.metadata_id in cid for s in e.stats)]
            if kept:
                launch = xplane_pb2.XLine()
                launch.CopyFrom(line)
                del launch.events[:]
                launch.events.extend(kept)
                launches.append(launch)
    for gpu in range(1, gpus):
        plane = space.planes.add()
        plane.CopyFrom(gpu0[0])
        plane.name = f"/device:GPU:{gpu}"
        for line in plane.lines:
            rows.append((plane, line, gpu))
        for launch in launches:
            line = host[0].lines.add()
            line.CopyFrom(launch)
            line.id = (launch.id + gpu * _GOLDEN) % 2**63
            line.display_id = 0
            rows.append((host[0], line, gpu))
    return rows


def write_capture(source: Path, path: Path, target: int, gpus: int) -> int:
    """Writes the capture; returns its number of events."""
    sys.path.insert(0, str(ROOT))
    from tb_profile_plugin.xspace.pb import xplane_pb2

    space = xplane_pb2.XSpace.FromString(source.read_bytes())
    shifter = _Shifter(space)
    rows = _widen(space, gpus)
    starts = [line.timestamp_ns * 1000 + e.offset_ps for _, line, _ in rows for e in line.events]
    ends = [line.timestamp_ns * 1000 + e.offset_ps + e.duration_ps
            for _, line, _ in rows for e in line.events]
    period = max(ends) - min(starts) + _GAP_PS
    per_copy = len(starts)
    copies = max(1, math.ceil(target / per_copy))
    lines_of: dict[int, list[bytes]] = {}
    events = 0
    for plane, line, gpu in rows:
        template = xplane_pb2.XLine()
        template.events.extend(line.events)
        offsets = [e.offset_ps for e in template.events]
        plan = shifter.plan(plane, template.events)
        header = xplane_pb2.XLine()
        header.CopyFrom(line)
        del header.events[:]
        chunks = [header.SerializeToString()]
        for time_copy in range(copies):
            for event, offset in zip(template.events, offsets, strict=True):
                event.offset_ps = offset + time_copy * period
            _apply(plan, time_copy * gpus + gpu, time_copy)
            chunks.append(template.SerializeToString())
        events += len(offsets) * copies
        lines_of.setdefault(id(plane), []).append(_field(3, b"".join(chunks)))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        rest = xplane_pb2.XSpace()
        rest.CopyFrom(space)
        del rest.planes[:]
        out.write(rest.SerializeToString())
        for plane in space.planes:
            head = xplane_pb2.XPlane()
            head.CopyFrom(plane)
            del head.lines[:]
            body = head.SerializeToString() + b"".join(lines_of.get(id(plane), []))
            out.write(_field(1, body))
    tmp.rename(path)
    return events


def make_captures(scratch: Path, names: list[str]) -> dict[str, Path]:
    """The named captures (`gpu8_2m`, `tfops_2m`, ...), built once under `scratch`."""
    paths: dict[str, Path] = {}
    for name in names:
        kind, _, size = name.partition("_")
        source = _source_file(SOURCES[kind])
        path = scratch / name / "plugins" / "profile" / "s" / source.name
        paths[name] = path
        if path.exists():
            continue
        t = time.perf_counter()
        events = write_capture(source, path, SIZES[size], GPUS if kind.endswith("8") else 1)
        print(f"wrote {path}: {events:,} events, {path.stat().st_size / 2**20:.0f} MB "
              f"in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return paths


VIEWS = ("overview", "tensorflow_stats", "kernel_stats", "input_pipeline_analyzer", "trace")


def _measure(name: str, path: Path, works: list[str], reference_python: str | None,
             reference_timeout_s: float, with_reference: bool, runs: int,
             before: Path | None) -> dict[str, Any]:
    """One capture's row: per view ours (median of `runs`), then `before`'s (another checkout,
    right after ours, same load) and the reference's, each a fresh process."""
    import tempfile

    from bench_scale import median_run, ours, reference

    row: dict[str, Any] = {"file_mb": round(path.stat().st_size / 2**20, 1)}
    for work in works:
        for label, root in (("", ROOT), ("before_", before)):
            if root is None:
                continue
            if work == "trace":
                cold = []
                for _ in range(runs):  # each cold run with an empty disk cache of its own
                    with tempfile.TemporaryDirectory() as cache_dir:
                        cold.append(ours("trace", path, cache_dir, root))
                row[label + work] = median_run(cold)
                zooms = [r["pan_zoom_max_ms"] for r in cold if "pan_zoom_max_ms" in r]
                if zooms:  # the largest window of every run
                    row[label + work]["pan_zoom_max_ms"] = max(zooms)
            else:
                row[label + work] = median_run([ours(work, path, "off", root)
                                                for _ in range(runs)])
        if reference_python and with_reference:
            row[f"reference_{work}"] = reference(reference_python, work, path,
                                                 reference_timeout_s)
        print(f"{name} {work}: {json.dumps({k: v for k, v in row.items() if work in k})}",
              file=sys.stderr)
    return row


def run(scratch: Path, names: list[str], works: list[str], reference_python: str | None,
        reference_timeout_s: float, reference_names: set[str], runs: int = 1,
        before: Path | None = None) -> dict[str, Any]:
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    paths = make_captures(scratch, names)
    results = {}
    for name in names:
        results[name] = _measure(name, paths[name], works, reference_python,
                                 reference_timeout_s, name in reference_names, runs, before)
    return {"cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M"),
            "captures": results, "table": table(results)}


def table(results: dict[str, dict[str, Any]]) -> str:
    before = any("before_" + w in row for row in results.values() for w in VIEWS)
    lines = ["| capture | events | view | " + ("before (s, ratio, B/event) | " if before else "")
             + "ours | reference | ratio | our peak RSS (B/event) |",
             "|---|---|---|---|---|---|---|" + ("---|" if before else "")]
    for name, row in results.items():
        for work in VIEWS:
            fig = row.get(work)
            if not fig:
                continue
            ref = row.get(f"reference_{work}") or {}
            events = fig.get("events", 0)
            ours = f"{fig['s']:.2f} s" if "s" in fig else str(fig.get("error", fig))
            if "cpu_s" in fig:
                ours += f" (CPU {fig['cpu_s']:.2f} s)"
            if "s" in ref:
                theirs = f"{ref['s']:.2f} s" + (f" (CPU {ref['cpu_s']:.2f} s)"
                                                 if "cpu_s" in ref else "")
                ratio = f"{fig['s'] / ref['s']:.2f}" if "s" in fig else "–"
            elif "timeout_s" in ref:
                theirs, ratio = f"> {ref['timeout_s']:.0f} s", "–"
            else:
                theirs, ratio = ("failed" if ref else "–"), "–"
            rss = fig.get("rss_mb", 0)
            per = f"{rss * 2**20 / events:.0f}" if events else "–"
            label = {"trace": "trace first window"}.get(work, work)
            old = row.get(f"before_{work}") or {}
            was = ""
            if before:
                was = "– | "
                if "s" in old:
                    ratio_was = f"{old['s'] / ref['s']:.2f}" if "s" in ref else "–"
                    cpu_was = f" (CPU {old['cpu_s']:.2f} s)" if "cpu_s" in old else ""
                    was = (f"{old['s']:.2f} s{cpu_was}, {ratio_was}, "
                           f"{old['rss_mb'] * 2**20 / events:.0f} | ")
            lines.append(f"| {name} | {events:,} | {label} | {was}{ours} (load {fig.get('load')})"
                         f" | {theirs} | {ratio} | {rss:,.0f} MB ({per}) |")
            if work == "trace" and "whole_s" in fig:  # the lines first: then every track
                whole_was = (f"{old['whole_s']:.2f} s | " if "whole_s" in old else "– | "
                             ) if before else ""
                lines.append(f"| {name} | | trace window with every track (derived tracks "
                             f"made) | {whole_was}{fig['whole_s']:.2f} s | | | |")
            if work == "trace":
                zoom_was = f"{old.get('pan_zoom_max_ms', '–')} ms | " if before else ""
                lines.append(f"| {name} | | zoom/pan windows (largest) | {zoom_was}"
                             f"{fig.get('pan_zoom_max_ms', '–')} ms | | | |")
                reopen = row.get("trace_reopen", {})
                if "s" in reopen:
                    lines.append(f"| {name} | | trace reopened (disk cache) | "
                                 f"{reopen['s']:.2f} s | | | {reopen['rss_mb']:,.0f} MB |")
    return "\n".join(lines)
