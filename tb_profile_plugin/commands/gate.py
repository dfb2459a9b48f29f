"""`tb-profile diff A B --fail-if-slower PCT`: a performance gate for CI.

The gate reads the `compare` document (tools/compare.py): B regressed when its average step
time is more than PCT percent above A's (`step_time_ms.delta_percent` > PCT). It answers one
line for stderr and an exit code:

    0                within: B's average step time is at most PCT % above A's
    EXIT_SLOWER (7)  B is slower than A by more than PCT %
    EXIT_NO_STEPS (8) A or B has no steps, so there is no step time to compare

The line quotes both averages, their step counts and the change, so a CI log says why.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from tb_profile_plugin.tools.compare import ALL_HOSTS

EXIT_SLOWER = 7
EXIT_NO_STEPS = 8


def percent_argument(text: str) -> float:
    """PCT of --fail-if-slower: a finite number >= 0 (argparse turns the error into exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of percent") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a percentage of 0 or more")
    return value


def add_gate_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-if-slower", type=percent_argument, default=None, metavar="PCT",
        help=f"exit {EXIT_SLOWER} when B's average step time is more than PCT percent above "
             f"A's, {EXIT_NO_STEPS} when either has no steps, else 0; one line on stderr says "
             "which and quotes both averages (e.g. --fail-if-slower 5)")


def _side(label: str, side: dict[str, Any]) -> str:
    host = "all hosts" if side["host"] == ALL_HOSTS else f"host {side['host']}"
    return f"{label} ({side['run']}, {host})"


def gate(doc: dict[str, Any], max_percent: float) -> tuple[int, str]:
    """(exit code, one line) of the gate on a compare document."""
    a, b = doc["a"], doc["b"]
    for label, side in (("A", a), ("B", b)):
        if side["num_steps"] == 0:
            return EXIT_NO_STEPS, (
                f"cannot gate on step time: {_side(label, side)} has no steps (see `tb-profile "
                "summary` for how to mark them), so no average step time can be compared")
    step = doc["step_time_ms"]
    change = step["delta_percent"]
    if change is None:  # A's steps all take 0 ms: no relative change exists
        return EXIT_NO_STEPS, (f"cannot gate on step time: {_side('A', a)} has an average step "
                               "time of 0 ms")
    sign = "+" if change > 0 else "-" if change < 0 else "±"
    figures = (f"average step time {step['a']:.3f} ms over {a['num_steps']} steps -> "
               f"{step['b']:.3f} ms over {b['num_steps']} steps ({sign}{abs(change):.1f} %)")
    if change > max_percent:
        return EXIT_SLOWER, f"slower by more than {max_percent:g} %: {figures}"
    return 0, f"within {max_percent:g} %: {figures}"
