"""pod_viewer view: every host's step, side by side, per common step; and the stragglers.

Per common step of the run's hosts (the step intersection, analysis/hosts/step_alignment.py), per
host: its own step number, step time and the nine-category breakdown in µs, and its bottleneck
(the largest category, as the reference's pod viewer). On GPU hosts each GPU (device core) has
its own column too (`cores`), from a step database of the host events with only that GPU's
device events. Beyond the reference, `stragglers` names per step the slowest host, its lag
behind the median host and the category that explains the lag (analysis/hosts/stragglers.py).
PyTorch hosts (ranks) add to each column torch-tb-profiler's breakdown and the step's
communication, computation and their overlap, `pytorch_ranks` per host, and
`pytorch_straggler`: the rank the others wait for in their collectives (tools/pytorch_keys.py).

Offered for every run with host events, one host included: a one-host run (or one host of
several) has one column per step, its own steps, in the same document shape; its straggler
table is empty (there is no other host to lag behind). A run without steps gets the document
with no steps and the diagnostics that say what was looked for, as the overview does.

Parameters: `step_start` (index of the first common step returned, default 0) and `step_count`
(default `DEFAULT_STEP_COUNT`): a window of the steps, so a run of many hosts and thousands of
steps answers in pieces; `num_steps` is always the total, and a partial answer says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tb_profile_plugin.analysis.hosts.multi_host import MultiHost
from tb_profile_plugin.analysis.hosts.stragglers import STRAGGLER_LAG_FRACTION, find_stragglers
from tb_profile_plugin.analysis.steps.breakdown import CATEGORIES, CATEGORY_LABELS, category_ps
from tb_profile_plugin.analysis.steps.step_db import StepDb
from tb_profile_plugin.errors import BadRequest
from tb_profile_plugin.tools.analysis_views import has_host_events, hosts_json, multi_host
from tb_profile_plugin.tools.document import Diagnostics, document
from tb_profile_plugin.tools.pytorch_keys import comm_straggler, pod_column_keys, rank_row
from tb_profile_plugin.tools.view import Table, View, ViewRequest

NAME = "pod_viewer"
VERSION = 1
DEFAULT_STEP_COUNT = 1000
_PS_PER_US = 1e6
_NAMES = list(CATEGORIES)


def _int_param(params: Mapping[str, str], name: str, default: int) -> int:
    text = str(params.get(name, default))
    if not text.isdigit():
        raise BadRequest(f"{name} must be a non-negative integer, not {text!r}")
    return int(text)


def _category_matrix(steps: StepDb, rows: np.ndarray) -> np.ndarray:
    """[rows, 9] category times in ps of the given step rows."""
    cats = category_ps(steps)
    return np.stack([cats[n][rows] for n in _NAMES], axis=1) if len(rows) else \
        np.zeros((0, len(_NAMES)), np.int64)


def _column(breakdown_ps: np.ndarray, step_ps: int) -> dict[str, Any]:
    return {
        "step_time_us": step_ps / _PS_PER_US,
        "breakdown_us": {n: float(v) / _PS_PER_US for n, v in zip(_NAMES, breakdown_ps,
                                                                   strict=True)},
        "bottleneck": _NAMES[int(np.argmax(breakdown_ps))],
    }


def _core_columns(multi: MultiHost, host: str, rows: np.ndarray) -> list[list[dict[str, Any]]]:
    """Per requested host step row: one column per GPU plane that ran in that step."""
    analysis = multi.analyses[host]
    out: list[list[dict[str, Any]]] = [[] for _ in rows]
    wanted = analysis.steps.group_id[rows]
    for plane_name, core in analysis.core_steps:
        # The core's step of each wanted group (of equal groups, the last), by a sorted search.
        order = np.argsort(core.group_id, kind="stable")
        at = np.searchsorted(core.group_id[order], wanted, "right") - 1
        found = np.flatnonzero(at >= 0)
        found = found[core.group_id[order[at[found]]] == wanted[found]]
        picked = order[at[found]]
        matrix = _category_matrix(core, picked)
        for k, i, m in zip(found.tolist(), picked.tolist(), range(len(picked)), strict=True):
            out[k].append({"core": plane_name, **_column(matrix[m], int(core.duration_ps[i]))})
    return out


def build(request: ViewRequest) -> dict[str, Any]:
    diagnostics = Diagnostics()
    start = _int_param(request.params, "step_start", 0)
    count = _int_param(request.params, "step_count", DEFAULT_STEP_COUNT)
    multi = multi_host(request, diagnostics)
    a = multi.alignment
    hosts = [h for h in multi.analyses if h in a.indices]  # request order
    total = a.num_steps
    window = np.arange(min(start, total), min(start + count, total))
    if len(window) < total:
        diagnostics.info.append(
            f"steps {int(window[0]) if len(window) else start} to "
            f"{int(window[-1]) if len(window) else start} (by index) of {total} are shown; "
            "ask for others with step_start and step_count")
    chief_rows = a.indices[a.chief] if a.chief else np.zeros(0, np.int64)
    chief_nums = multi.analyses[a.chief].steps.step_num[chief_rows] if a.chief else chief_rows
    step_ps = np.zeros((len(hosts), len(window)), np.int64)
    cats = np.zeros((len(hosts), len(window), len(_NAMES)), np.int64)
    rows_of: dict[str, np.ndarray] = {}
    for h, host in enumerate(hosts):
        rows = a.indices[host][window]
        rows_of[host] = rows
        step_ps[h] = multi.analyses[host].steps.duration_ps[rows]
        cats[h] = _category_matrix(multi.analyses[host].steps, rows)
    cores = {h: _core_columns(multi, h, rows_of[h]) for h in hosts}
    steps_out = []
    for k, index in enumerate(window):
        columns = []
        for h, host in enumerate(hosts):
            column = {"host": host,
                      "step_num": int(multi.analyses[host].steps.step_num[rows_of[host][k]]),
                      **_column(cats[h, k], int(step_ps[h, k]))}
            if cores[host][k]:
                column["cores"] = cores[host][k]
            facts = multi.analyses[host].pytorch
            if facts is not None:
                column.update(pod_column_keys(facts, int(rows_of[host][k])))
            columns.append(column)
        steps_out.append({"step_num": int(chief_nums[index]),
                          "index": int(index), "hosts": columns})
    found = find_stragglers(step_ps, cats)
    stragglers = []
    if len(hosts) >= 2:
        for k in np.argsort(-found.lag_ps, kind="stable"):
            stragglers.append({
                "step_num": steps_out[k]["step_num"], "index": int(window[k]),
                "host": hosts[int(found.slowest[k])],
                "step_time_us": float(found.step_ps[k]) / _PS_PER_US,
                "median_step_time_us": float(found.median_ps[k]) / _PS_PER_US,
                "lag_us": float(found.lag_ps[k]) / _PS_PER_US,
                "lag_percent": 100.0 * float(found.lag_ps[k]) / float(found.median_ps[k])
                if found.median_ps[k] > 0 else 0.0,
                "category": _NAMES[int(found.category[k])],
                "category_lag_us": float(found.category_lag_ps[k]) / _PS_PER_US,
                "significant": bool(found.significant[k]),
            })
    ranks = [rank_row(h, f, rows_of[h], step_ps[i]) for i, h in enumerate(hosts)
             if (f := multi.analyses[h].pytorch) is not None]
    per_host = {h: 0 for h in hosts}
    for row in stragglers:
        per_host[row["host"]] += int(row["significant"])
    return document(
        NAME, VERSION, request.run, request.host, diagnostics,
        categories=[{"key": n, "label": CATEGORY_LABELS[n]} for n in _NAMES],
        hosts=hosts,
        num_steps=total,
        step_start=int(window[0]) if len(window) else start,
        steps=steps_out,
        stragglers=stragglers,
        straggler_lag_fraction=STRAGGLER_LAG_FRACTION,
        straggler_steps_per_host=[{"host": h, "num_steps": n} for h, n in per_host.items()],
        multi_host=hosts_json(multi),
        **({"pytorch_ranks": ranks,
            "pytorch_straggler": comm_straggler(ranks, STRAGGLER_LAG_FRACTION)} if ranks else {}),
    )


def stragglers_table(doc: dict[str, Any]) -> Table:
    header = ["step_num", "host", "step_time_us", "median_step_time_us", "lag_us",
              "lag_percent", "category", "category_lag_us", "significant"]
    return header, [[row[k] for k in header] for row in doc["stragglers"]]


def steps_table(doc: dict[str, Any]) -> Table:
    header = ["step_num", "host", "host_step_num", "step_time_us", "bottleneck",
              *[f"{n}_us" for n in _NAMES]]
    rows = [[s["step_num"], c["host"], c["step_num"], c["step_time_us"], c["bottleneck"],
             *[c["breakdown_us"][n] for n in _NAMES]] for s in doc["steps"] for c in s["hosts"]]
    return header, rows


VIEW = View(NAME, VERSION, build, has_host_events, combines_hosts=True,
            tables={"stragglers": stragglers_table, "steps": steps_table})
