"""`tb-profile diff A B [--host H | --host-a H --host-b H] [--json] [--fail-if-slower PCT]`: what
changed from A to B.

A and B are each a logdir (its newest run), a run directory or an `.xplane.pb`. Prints the
one-line conclusion, the average step time and each category (A, B, change in ms and %), the
verdict before and after, the ops whose self time per step changed most (each run's self time
divided by its own step count; new and vanished ops marked), a warning when the step counts
differ more than twofold, and both sides' diagnostics; `--json` prints the `compare` route's
document (tools/compare.py computes both). Hosts are matched by name; two several-host runs
are compared over ALL_HOSTS. `--fail-if-slower PCT` gates on the average step time
(commands/gate.py: exit 7 slower, 8 no steps, one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tb_profile_plugin.commands.gate import add_gate_argument, gate
from tb_profile_plugin.commands.output import Style, colour_wanted, to_json
from tb_profile_plugin.commands.profiles import add_scheduler_argument, locate, use_scheduler
from tb_profile_plugin.commands.progress import Progress
from tb_profile_plugin.commands.summary import WIDTH, _cut, _middle_cut, _wrap
from tb_profile_plugin.tools import compare
from tb_profile_plugin.xspace.store import ProfileStore

HELP = "compare two profiles: step time, breakdown, verdict and the ops that changed"
OPS_SHOWN = 15


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path_a", help="the profile before (logdir, run directory or .xplane.pb)")
    parser.add_argument("path_b", help="the profile after")
    parser.add_argument("--host", default=None, help="the host to compare on both sides")
    parser.add_argument("--host-a", default=None, help="the host of A (default: matched by name)")
    parser.add_argument("--host-b", default=None, help="the host of B (default: matched by name)")
    parser.add_argument("--json", action="store_true", help="print the compare document")
    add_gate_argument(parser)
    add_scheduler_argument(parser)


def run(args: argparse.Namespace) -> int:
    use_scheduler(args)
    located_a, located_b = locate(args.path_a), locate(args.path_b)
    side_a = compare.Side(located_a.run, located_a.files, args.host_a or args.host)
    side_b = compare.Side(located_b.run, located_b.files, args.host_b or args.host)
    store = ProfileStore()
    size_bytes = located_a.size_bytes() + located_b.size_bytes()
    with Progress(len(located_a.files) + len(located_b.files) + 2, size_bytes) as progress:
        def open_profile(path: str) -> Any:
            progress.stage(f"reading {path.rsplit('/', 1)[-1]}")
            return store.open(path)

        doc = compare.compare(side_a, side_b, open_profile, progress.stage)
    if args.json:
        sys.stdout.write(to_json(doc) + "\n")
    else:
        sys.stdout.write(render(doc, Style(colour_wanted(sys.stdout))))
    if args.fail_if_slower is None:
        return 0
    sys.stdout.flush()
    code, line = gate(doc, args.fail_if_slower)
    print(f"tb-profile: {line}", file=sys.stderr)
    return code


def _signed(value: float, digits: int) -> str:
    text = f"{abs(value):.{digits}f}"
    return ("+" if value > 0 else compare.MINUS if value < 0 else " ") + text


def _percent(value: float | None) -> str:
    return "n/a" if value is None else _signed(value, 1) + "%"


def render(doc: dict[str, Any], style: Style) -> str:
    """The diff as text, every line at most WIDTH columns (ANSI codes aside)."""
    a, b = doc["a"], doc["b"]
    out: list[str] = []
    for label, side in (("A", a), ("B", b)):
        host = "all hosts" if side["host"] == compare.ALL_HOSTS else side["host"]
        out.append(_cut(f"{label}: {side['run']} ({host}; {side['num_steps']} steps)", WIDTH))
    if doc.get("step_count_warning"):
        out.extend(style(line, "yellow")
                   for line in _wrap(doc["step_count_warning"], "    ", "  warning: "))
    out.append("")
    out.extend(style(line, "bold") for line in _wrap(doc["conclusion"], "  ", ""))

    out.extend(["", style("Average per step", "bold")])
    out.append(f"  {'':<18} {'A ms':>9} {'B ms':>9} {'change ms':>10} {'change':>8}  "
               f"{'A %':>5} {'B %':>5}")
    step = doc["step_time_ms"]
    out.append(style(f"  {'Step time':<18} {step['a']:>9.3f} {step['b']:>9.3f} "
                     f"{_signed(step['delta'], 3):>10} {_percent(step['delta_percent']):>8}",
                     "bold"))
    for row in doc["categories"]:
        line = (f"  {row['label']:<18} {row['a_ms']:>9.3f} {row['b_ms']:>9.3f} "
                f"{_signed(row['delta_ms'], 3):>10} {_percent(row['delta_percent']):>8}  "
                f"{row['a_percent']:>5.1f} {row['b_percent']:>5.1f}")
        if row["category"] == doc["most_changed_category"]:
            line = style(line, "bold", "cyan")
        elif row["a_ms"] == 0 and row["b_ms"] == 0:
            line = style(line, "dim")
        out.append(line)

    out.extend(["", style("Verdict", "bold")])
    for label, side in (("A", a), ("B", b)):
        level = side["bottleneck"]["input_bound"]
        out.append(f"  {label}: {level.upper()} input-bound ({side['input_percent']:.1f} % of "
                   "the step time waits for input)" if level != "unknown"
                   else f"  {label}: UNKNOWN (no step time)")

    if doc.get("op_basis") == "whole_capture":
        title = "Ops whose self time changed most (whole capture: a run has no steps)"
    else:
        title = (f"Ops whose self time per step changed most (A total / {a['num_steps']}, "
                 f"B total / {b['num_steps']} steps)")
    out.extend(["", style(_cut(title, WIDTH), "bold")])
    out.append(f"  {'change ms':>10} {'A ms':>9} {'B ms':>9} {'B/A':>8}  op")
    for op in doc["ops"][:OPS_SHOWN]:
        ratio = op["change"] if op["ratio"] is None else f"x{op['ratio']:.2f}"
        where = "" if op["host_or_device"] == "Host" else "[device] "
        out.append(f"  {_signed(op['delta_ms'], 3):>10} {op['a_ms']:>9.3f} "
                   f"{op['b_ms']:>9.3f} {ratio:>8}  "
                   f"{_middle_cut(where + op['op_name'], WIDTH - 44)}")
    if not doc["ops"]:
        out.append("  (no ops)")
    out.append(f"  ({doc['num_changed_ops']} ops in both, {doc['num_new_ops']} new in B, "
               f"{doc['num_vanished_ops']} vanished from A)")

    for key, name, title in (
            ("jitted_functions", "module", "Jitted functions (mean execution time)"),
            ("tf_functions", "function", "tf.functions (mean call time)")):
        rows = doc.get(key) or []
        if rows:
            out.extend(["", style(title, "bold")])
            out.append(f"  {'change ms':>10} {'A ms':>9} {'B ms':>9} {'calls A/B':>11}  function")
            for row in rows[:OPS_SHOWN]:
                calls = f"{row['a_calls']}/{row['b_calls']}"
                out.append(f"  {_signed(row['delta_ms'], 3):>10} {row['a_mean_ms']:>9.3f} "
                           f"{row['b_mean_ms']:>9.3f} {calls:>11}  "
                           f"{_middle_cut(row[name], WIDTH - 47)}")

    messages = [(kind, m) for kind in ("errors", "warnings", "info")
                for m in doc["diagnostics"][kind]]
    if messages:
        out.extend(["", style("Diagnostics", "bold")])
        for kind, message in messages:
            colour = {"errors": "red", "warnings": "yellow"}.get(kind, "dim")
            prefix = {"errors": "error", "warnings": "warning"}.get(kind, "info")
            out.extend(style(line, colour) for line in _wrap(message, "    ", f"  {prefix}: "))
    return "\n".join(out) + "\n"
