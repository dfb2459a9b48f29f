"""`tb-profile summary PATH [--host H] [--json]`: the overview of a profile, for a terminal.

Prints, in 80 columns: the run and its hosts, steps and average step time, the nine-category
breakdown (ms per step and % of step time), the input-bound verdict, the top ops, the
recommendations (each with the evidence it rests on), the advice withheld and why, and the
diagnostics. Colour only on a terminal (NO_COLOR respected). With
`--json`, the `overview_page` document exactly as the `data` route serves it. A run with
several hosts is summarised over ALL_HOSTS unless `--host` picks one.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from tb_profile_plugin.commands.output import Style, colour_wanted, to_json
from tb_profile_plugin.commands.profiles import (
    Located,
    add_scheduler_argument,
    locate,
    use_scheduler,
    view_request,
)
from tb_profile_plugin.commands.progress import Progress
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.tools import registry

HELP = "print a profile's overview: step time, breakdown, verdict, top ops, advice"
WIDTH = 80
BAR_WIDTH = 20
TOP_JITTED = 10  # jitted functions the summary lists
VERDICT_STYLES = {"highly": ("bold", "red"), "moderately": ("bold", "yellow"),
                  "potentially": ("yellow",), "not": ("green",)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a logdir (its newest run), a run directory or an .xplane.pb")
    parser.add_argument("--host", default=None,
                        help=f"one host of a several-host run (default: {ALL_HOSTS})")
    parser.add_argument("--json", action="store_true",
                        help="print the overview_page document as the data route serves it")
    add_scheduler_argument(parser)


def overview_document(located: Located, host: str | None) -> dict[str, Any]:
    """The overview_page document of the located run (one host, or ALL_HOSTS)."""
    with Progress(len(located.files) + 1, located.size_bytes()) as progress:
        request = view_request(located, host, {}, progress)
        progress.stage("analysing")
        return registry.build_document(registry.VIEWS["overview_page"], request)


def run(args: argparse.Namespace) -> int:
    use_scheduler(args)
    located = locate(args.path, args.host)
    doc = overview_document(located, args.host)
    if args.json:
        sys.stdout.write(to_json(doc) + "\n")
    else:
        sys.stdout.write(render(doc, located, Style(colour_wanted(sys.stdout))))
    return 0


def _wrap(text: str, indent: str = "  ", first: str | None = None) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=first if first is not None else indent,
                         subsequent_indent=indent, break_on_hyphens=False) or [indent.rstrip()]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _middle_cut(text: str, width: int) -> str:
    """Long op names keep their start and their end (the part that tells ops apart)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "\u2026" + text[len(text) - (width - 1 - head):]


def _bar(percent: float) -> str:
    filled = round(BAR_WIDTH * max(0.0, min(percent, 100.0)) / 100.0)
    return "#" * filled + "." * (BAR_WIDTH - filled)


def _function_lines(rows: list[dict[str, Any]], share_label: str,
                    name: Callable[[dict[str, Any]], str],
                    share: Callable[[dict[str, Any]], float]) -> list[str]:
    """A per-function table (jitted functions, tf.functions): calls, times, share, name."""
    out = [f"  {'calls':>6} {'mean ms':>9} {'min ms':>9} {'max ms':>9} {share_label:>7}  "
           "function"]
    for row in rows[:TOP_JITTED]:
        out.append(f"  {row['calls']:>6} {row['mean_ms']:>9.3f} {row['min_ms']:>9.3f} "
                   f"{row['max_ms']:>9.3f} {100 * share(row):>6.1f}%  "
                   f"{_middle_cut(name(row), WIDTH - 47)}")
    if len(rows) > TOP_JITTED:
        out.append(f"  (and {len(rows) - TOP_JITTED} more; the overview lists all)")
    return out


def render(doc: dict[str, Any], located: Located, style: Style) -> str:
    """The summary text: every line at most WIDTH columns (ANSI codes aside)."""
    out: list[str] = []

    def heading(title: str) -> None:
        out.extend(["", style(title, "bold")])

    env = doc.get("run_environment", {})
    out.append(style(_cut(f"Run {doc['run']}", WIDTH), "bold", "cyan"))
    if located.other_runs:
        out.extend(_wrap(f"(the newest of {located.other_runs + 1} runs; give a run directory "
                         "to pick another)"))
    shown = "all hosts" if doc["host"] == ALL_HOSTS else doc["host"]
    out.extend(_wrap(f"Hosts: {', '.join(located.hosts)} (shown: {shown})"))
    out.extend(_wrap(f"Device: {env.get('device_type', '?')}"
                     + (f" x {env['device_core_count']}" if env.get("device_core_count") else "")
                     + (f"   Framework: {env['framework']}" if env.get("framework") else "")))
    steps = doc["steps"]
    step_ms = doc["step_time_ms"]
    if steps:
        out.append(f"  Steps: {len(steps)}   Average step time: "
                   + style(f"{step_ms['avg']:.3f} ms", "bold")
                   + f" (stddev {step_ms['stddev']:.3f}, min {step_ms['min']:.3f}, "
                   f"max {step_ms['max']:.3f})")
    else:
        out.append("  Steps: 0 (no step time measured; see the diagnostics)")

    heading("Step-time breakdown (average per step)")
    out.append(f"  {'category':<20} {'ms/step':>10} {'%':>7}  ")
    for row in doc["categories"].values():
        line = (f"  {row['label']:<20} {row['avg']:>10.3f} {row['percent']:>6.1f}%  "
                f"{_bar(row['percent'])}")
        out.append(style(line, "dim") if row["avg"] == 0 else line)

    heading("Verdict")
    bottleneck = doc["bottleneck"]
    level = bottleneck.get("stated_level", bottleneck["input_bound"])  # as the page states it
    if bottleneck.get("headline"):
        out.append("  " + style(bottleneck["headline"], "bold"))
    out.append("  " + style(f"{level.upper()} input-bound" if level != "unknown" else "UNKNOWN",
                            *VERDICT_STYLES.get(level, ())))
    out.extend(_wrap(doc["bottleneck"]["statement"]))

    ops = doc.get("top_device_ops") or doc.get("top_host_ops") or []
    side = "device" if doc.get("top_device_ops") else "host"
    heading(f"Top {side} ops by self time")
    if ops:
        out.append(f"  {'self ms':>10} {'%':>6}  {'type':<16} name")
        for op in ops:
            ms = op.get("self_time_ms")
            ms_text = f"{ms:>10.3f}" if isinstance(ms, (int, float)) else f"{'':>10}"
            out.append(f"  {ms_text} {100 * op['self_time_fraction']:>5.1f}%  "
                       f"{_cut(str(op.get('type', op.get('category', ''))), 16):<16} "
                       f"{_middle_cut(op['name'], WIDTH - 38)}")
    else:
        out.append("  (none)")

    jitted = doc.get("jitted_functions") or []
    if jitted:
        heading("Jitted functions (XLA modules)")
        out.extend(_function_lines(jitted, "device", lambda row: row["module"] + (
            " (steps)" if row["module"] == doc.get("step_module") else ""),
            lambda row: row["device_fraction"]))
    functions = doc.get("tf_functions") or []
    if functions:
        heading("tf.functions (host call time)")
        out.extend(_function_lines(functions, "share", lambda row: row["function"] + (
            f" (traced {row['concrete']}x)" if row["concrete"] > 1 else ""),
            lambda row: row["fraction"]))

    heading("Recommendations")
    for advice in doc.get("advice") or [{"text": "(none)", "evidence": []}]:
        out.extend(_wrap(advice["text"], "    ", "  - "))
        evidence = "; ".join(f"{e['what']} {e['value']}" for e in advice["evidence"])
        if evidence:
            out.extend(style(line, "dim") for line in _wrap(f"evidence: {evidence}", "    "))
    withheld = doc.get("advice_withheld") or []
    if withheld:
        heading("Not advised, and why")
        for item in withheld:
            out.extend(style(line, "dim") for line in _wrap(
                f"{item['key']}: {item['reason']}", "    ", "  - "))

    heading("Diagnostics")
    diagnostics = doc["diagnostics"]
    any_message = False
    for kind, colour in (("errors", "red"), ("warnings", "yellow"), ("info", "dim")):
        for message in diagnostics.get(kind, []):
            any_message = True
            out.extend(style(line, colour) for line in _wrap(
                message, "    ", f"  {kind.rstrip('s') if kind != 'info' else 'info'}: "))
    if not any_message:
        out.append("  (none)")
    return "\n".join(out) + "\n"
