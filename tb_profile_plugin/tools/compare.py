"""Compare two profiles: step time, its nine categories, the verdict, and the ops that changed.

Shared by `tb-profile diff` and the `compare` route. Each side is a run and a host (or
ALL_HOSTS); the numbers are those of the side's `overview_page` document (step time and
categories, averages per step) and `tensorflow_stats` document without IDLE (op self time,
summed over the whole capture), so the comparison never disagrees with the views.

Hosts are matched by name (`pair_hosts`): explicit hosts win; two runs with several hosts each
are compared as ALL_HOSTS; a one-host run against a several-host run uses the host of the same
name, or ALL_HOSTS of the several-host run when none has that name (the document's diagnostics
say so); two one-host runs compare their hosts whatever they are called.

Document (docs/api.md, "compare"): tool, version, a and b (run, host, hosts, num_steps,
step_time_ms {avg, stddev, min, max}, input_percent, bottleneck, categories_ms {9 averages},
steps), diagnostics (each side's, prefixed "A: "/"B: "), step_time_ms {a, b, delta,
delta_percent}, categories (per category: category, label, a_ms, b_ms, delta_ms,
delta_percent, a_percent, b_percent), most_changed_category, op_basis ("per_step" or
"whole_capture"), step_count_warning (a sentence or null), ops (the OP_LIMIT ops whose time
changed most: host_or_device, op_type, op_name, a_ms, b_ms, delta_ms, ratio on op_basis,
a_self_time_ms, b_self_time_ms over the whole capture, change "changed"|"new"|"vanished",
a_occurrences, b_occurrences), num_changed_ops, num_new_ops, num_vanished_ops, conclusion.

Ops are compared per step: each side's self time over the capture divided by that side's
step count, so a 127-step capture does not look slower than a 6-step one because it ran
longer. When either side has no steps the ops are compared over the whole capture
(op_basis "whole_capture"). Step counts that differ more than STEP_COUNT_RATIO times get
step_count_warning: per-step averages of so different captures may still not compare.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tb_profile_plugin.analysis.hosts import host_pool
from tb_profile_plugin.analysis.steps.breakdown import CATEGORY_LABELS
from tb_profile_plugin.errors import NotFound
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.model import Profile

NAME = "compare"
VERSION = 1
#: How many changed ops the document lists (largest absolute change of self time first).
OP_LIMIT = 20
#: A category whose average changed by less than this is "unchanged" in the conclusion.
UNCHANGED_MS = 0.05
#: Step counts further apart than this factor get `step_count_warning`.
STEP_COUNT_RATIO = 2.0
#: How the conclusion names each category.
_PHRASES = {
    "device_compute": "device compute", "device_to_device": "device-to-device time",
    "device_collectives": "device collectives", "host_compute": "host compute",
    "kernel_launch": "kernel launch time", "input": "input wait", "output": "output time",
    "compilation": "compilation", "all_others": "other time",
}
MINUS = "\u2212"


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run, all its host files, and the host asked for (if any)."""

    run: str
    files: Mapping[str, str]  # host -> .xplane.pb path, every host of the run
    host: str | None = None  # a host name, ALL_HOSTS, or None to match by name


def pair_hosts(a: Side, b: Side) -> tuple[str, str]:
    """The host (or ALL_HOSTS) compared on each side; NotFound for a host a run lacks."""
    for side, label in ((a, "A"), (b, "B")):
        if side.host and side.host != ALL_HOSTS and side.host not in side.files:
            raise NotFound(f"run {label} ({side.run}) has no host {side.host!r}; it has "
                           f"{', '.join(side.files)}")
    if a.host and b.host:
        return a.host, b.host
    if a.host or b.host:  # one given: the same name (or ALL_HOSTS) on the other side if it can
        given = a.host or b.host or ""
        other = b if a.host else a
        if given == ALL_HOSTS or given in other.files:
            chosen = given
        else:
            chosen = next(iter(other.files)) if len(other.files) == 1 else ALL_HOSTS
        return (given, chosen) if a.host else (chosen, given)
    if len(a.files) > 1 and len(b.files) > 1:
        return ALL_HOSTS, ALL_HOSTS
    if len(a.files) == 1 and len(b.files) == 1:
        return next(iter(a.files)), next(iter(b.files))
    single, several = (a, b) if len(a.files) == 1 else (b, a)
    name = next(iter(single.files))
    matched = name if name in several.files else ALL_HOSTS
    return (name, matched) if single is a else (matched, name)


def _profiles(side: Side, host: str, open_profile: Callable[[str], Profile]
              ) -> Mapping[str, Profile]:
    """The host's profile; for ALL_HOSTS of several, profiles opened only when read (the
    overview and op tables come from the executor's workers: analysis/hosts/host_pool.py)."""
    hosts = list(side.files) if host == ALL_HOSTS else [host]
    if len(hosts) > 1:
        return registry.LazyProfiles({h: side.files[h] for h in hosts}, open_profile)
    return {h: open_profile(side.files[h]) for h in hosts}


def _side_docs(
    side: Side, host: str, profiles: Mapping[str, Profile], on_stage: Callable[[str], None]
) -> tuple[dict[str, Any], dict[str, Any]]:
    overview = registry.VIEWS["overview_page"]
    stats = registry.VIEWS["tensorflow_stats"]
    paths = {h: side.files[h] for h in profiles}
    host_facts = (host_pool.facts_of_files(paths) if isinstance(profiles, registry.LazyProfiles)
                  else {h: registry.as_facts(p) for h, p in profiles.items()})
    for found in host_facts.values():
        if found.failure is not None:
            raise type(found.failure)(str(found.failure))
    if not overview.available(registry.RunFacts.combine(host_facts)):
        raise NotFound(f"run {side.run} (host {host}) has no host events: nothing to compare")
    on_stage(f"analysing {side.run}")
    doc = overview.build(registry.ViewRequest(side.run, host, profiles, {}, paths=paths,
                                              facts=host_facts))
    ops = stats.build(registry.ViewRequest(
        side.run, host, profiles, {"include_idle": "false"}, paths=paths, facts=host_facts))
    return doc, ops


def _summary(side: Side, host: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "run": side.run, "host": host, "hosts": list(side.files),
        "num_steps": len(doc["steps"]), "step_time_ms": doc["step_time_ms"],
        "input_percent": doc["input_percent"], "bottleneck": doc["bottleneck"],
        "categories_ms": {k: v["avg"] for k, v in doc["categories"].items()},
        "steps": doc["steps"],
    }


def _relative_percent(a: float, b: float) -> float | None:
    return 100.0 * (b - a) / a if a else None


def _categories(doc_a: dict[str, Any], doc_b: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, label in CATEGORY_LABELS.items():
        a, b = doc_a["categories"][key], doc_b["categories"][key]
        rows.append({
            "category": key, "label": label, "a_ms": a["avg"], "b_ms": b["avg"],
            "delta_ms": b["avg"] - a["avg"], "delta_percent": _relative_percent(a["avg"], b["avg"]),
            "a_percent": a["percent"], "b_percent": b["percent"],
        })
    return rows


def op_changes(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]],
               steps_a: int = 0, steps_b: int = 0) -> list[dict[str, Any]]:
    """Every op of either side (by host/device and name), largest change first.

    a_ms / b_ms are each side's self time divided by its step count when both sides have
    steps (`op_basis` "per_step"), else the whole capture's self time; a_self_time_ms /
    b_self_time_ms are always the whole capture's."""
    def by_key(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
        return {(r["host_or_device"], r["op_name"]): r for r in rows}

    per_step = op_basis(steps_a, steps_b) == "per_step"
    div_a, div_b = (steps_a, steps_b) if per_step else (1, 1)
    a, b = by_key(rows_a), by_key(rows_b)
    changes = []
    for key in a.keys() | b.keys():
        ra, rb = a.get(key), b.get(key)
        a_total = ra["total_self_time_us"] / 1e3 if ra else 0.0
        b_total = rb["total_self_time_us"] / 1e3 if rb else 0.0
        a_ms, b_ms = a_total / div_a, b_total / div_b
        changes.append({
            "host_or_device": key[0], "op_type": (rb or ra or {}).get("op_type", ""),
            "op_name": key[1], "a_ms": a_ms, "b_ms": b_ms,
            "delta_ms": b_ms - a_ms, "ratio": b_ms / a_ms if ra and rb and a_ms else None,
            "a_self_time_ms": a_total, "b_self_time_ms": b_total,
            "change": "new" if ra is None else "vanished" if rb is None else "changed",
            "a_occurrences": ra["occurrences"] if ra else 0,
            "b_occurrences": rb["occurrences"] if rb else 0,
        })
    changes.sort(key=lambda c: (-abs(c["delta_ms"]), c["host_or_device"], c["op_name"]))
    return changes


def op_basis(steps_a: int, steps_b: int) -> str:
    """How `op_changes` compares: "per_step" when both sides have steps, else "whole_capture"."""
    return "per_step" if steps_a > 0 and steps_b > 0 else "whole_capture"


def step_count_warning(steps_a: int, steps_b: int) -> str | None:
    """A sentence when one side has more than STEP_COUNT_RATIO times the other's steps."""
    low, high = sorted((steps_a, steps_b))
    if low == 0 or high <= STEP_COUNT_RATIO * low:
        return None
    return (f"A has {steps_a} steps and B {steps_b} ({high / low:.1f}\u00d7 as many): ops are "
            "compared per step (each run's self time divided by its own step count), but "
            "captures this different may not do the same work per step (warm-up, evaluation, "
            "checkpoints); capture similar step counts to compare like with like")


def jitted_changes(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]
                   ) -> list[dict[str, Any]]:
    """Every jitted function (XLA module) of either side: calls and mean execution time in A
    and B, largest change of mean execution time first."""
    return function_changes(rows_a, rows_b, "module")


def tf_function_changes(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]
                        ) -> list[dict[str, Any]]:
    """Every tf.function of either side: calls and mean call time in A and B, largest change
    of mean call time first."""
    return function_changes(rows_a, rows_b, "function")


def function_changes(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], key: str
                     ) -> list[dict[str, Any]]:
    """Rows of a per-function table (by `key`) on either side, with their mean times in A
    and B, largest change first."""
    a = {r[key]: r for r in rows_a}
    b = {r[key]: r for r in rows_b}
    changes = []
    for module in a.keys() | b.keys():
        ra, rb = a.get(module), b.get(module)
        a_ms = ra["mean_ms"] if ra else 0.0
        b_ms = rb["mean_ms"] if rb else 0.0
        changes.append({
            key: module, "a_calls": ra["calls"] if ra else 0,
            "b_calls": rb["calls"] if rb else 0, "a_mean_ms": a_ms, "b_mean_ms": b_ms,
            "delta_ms": b_ms - a_ms, "delta_percent": _relative_percent(a_ms, b_ms)
            if ra and rb else None,
            "change": "new" if ra is None else "vanished" if rb is None else "changed",
        })
    changes.sort(key=lambda c: (-abs(c["delta_ms"]), c[key]))
    return changes


def most_changed(categories: list[dict[str, Any]]) -> str | None:
    best = max(categories, key=lambda c: abs(c["delta_ms"]))
    return best["category"] if abs(best["delta_ms"]) >= UNCHANGED_MS else None


def conclusion(a: dict[str, Any], b: dict[str, Any], categories: list[dict[str, Any]]) -> str:
    """One line: the step-time change and the category that moved most, per step."""
    for side, label in ((a, "A"), (b, "B")):
        if side["num_steps"] == 0:
            return (f"no step time to compare: run {label} ({side['run']}) has no steps; see "
                    "its diagnostics for how to mark steps")
    avg_a, avg_b = a["step_time_ms"]["avg"], b["step_time_ms"]["avg"]
    percent = _relative_percent(avg_a, avg_b) or 0.0
    sign = "+" if percent > 0 else MINUS if percent < 0 else "\u00b1"
    head = f"step time {sign}{abs(percent):.0f} % ({avg_a:.1f} ms to {avg_b:.1f} ms per step)"
    key = most_changed(categories)
    if key is None:
        return f"{head}: no category changed by {UNCHANGED_MS} ms or more"
    row = next(c for c in categories if c["category"] == key)
    verb = "fell" if row["delta_ms"] < 0 else "rose"
    return (f"step time {sign}{abs(percent):.0f} %: {_PHRASES[key]} {verb} from "
            f"{row['a_ms']:.1f} ms to {row['b_ms']:.1f} ms per step")


def _host_text(host: str) -> str:
    return "all hosts" if host == ALL_HOSTS else f"host {host}"


def compare(
    a: Side, b: Side, open_profile: Callable[[str], Profile],
    on_stage: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """The comparison document of side A (before) and side B (after)."""
    host_a, host_b = pair_hosts(a, b)
    docs = []
    for side, host in ((a, host_a), (b, host_b)):
        profiles = _profiles(side, host, open_profile)
        docs.append(_side_docs(side, host, profiles, on_stage))
    (doc_a, ops_a), (doc_b, ops_b) = docs
    sum_a, sum_b = _summary(a, host_a, doc_a), _summary(b, host_b, doc_b)
    categories = _categories(doc_a, doc_b)
    steps_a, steps_b = sum_a["num_steps"], sum_b["num_steps"]
    changes = op_changes(ops_a["rows"], ops_b["rows"], steps_a, steps_b)
    diagnostics: dict[str, list[str]] = {"errors": [], "warnings": [], "info": []}
    if (host_a == ALL_HOSTS) != (host_b == ALL_HOSTS):
        diagnostics["info"].append(
            f"A ({_host_text(host_a)}) is compared with B ({_host_text(host_b)}): the runs have "
            "no host of the same name; choose hosts to compare others")
    for label, doc in (("A", doc_a), ("B", doc_b)):
        for kind, messages in doc["diagnostics"].items():
            diagnostics[kind].extend(f"{label}: {m}" for m in messages)
    avg_a, avg_b = doc_a["step_time_ms"]["avg"], doc_b["step_time_ms"]["avg"]
    return {
        "tool": NAME, "version": VERSION, "a": sum_a, "b": sum_b, "diagnostics": diagnostics,
        "step_time_ms": {"a": avg_a, "b": avg_b, "delta": avg_b - avg_a,
                         "delta_percent": _relative_percent(avg_a, avg_b)},
        "categories": categories,
        "most_changed_category": most_changed(categories),
        "op_basis": op_basis(steps_a, steps_b),
        "step_count_warning": step_count_warning(steps_a, steps_b),
        "ops": changes[:OP_LIMIT],
        "num_changed_ops": sum(c["change"] == "changed" for c in changes),
        "num_new_ops": sum(c["change"] == "new" for c in changes),
        "num_vanished_ops": sum(c["change"] == "vanished" for c in changes),
        "jitted_functions": jitted_changes(doc_a["jitted_functions"], doc_b["jitted_functions"]),
        "tf_functions": tf_function_changes(doc_a["tf_functions"], doc_b["tf_functions"]),
        "conclusion": conclusion(sum_a, sum_b, categories),
    }
