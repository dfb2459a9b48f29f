"""Zero-length events in the step breakdown: the time the reference's sweep gives them.

The reference splits a step's overlapping events into non-overlapping spans with a sweep over
event boundaries (xprof_reference.md §3.3 "Non-overlap"): boundaries sorted by time, an *end*
before a *start* at the same time, a count per event type, and a "current" type that is the
highest type whose count is non-zero. A zero-length event (a `ThreadpoolListener::StartRegion`
or `Record`, a `Wait for ... holds` of 0 ns) has its end sorted before its own start. When no
event of its type or higher is open, the end takes the count to -1 and the start back to 0 but
makes the type current; nothing then lowers it until an event of that type ends (its count
reaches 0 again) or a higher type begins. So the gap after such an instant counts as its type:

    python     [train ............................................................]
               [dispatch]                                         [Await]
    XLA thread           | StartRegion (0 ns, same step)
    reference            |=========== host compute ==================|
                          ^ instant                                  ^ next host-compute end

A JAX CPU step that dispatches asynchronously and then blocks untraced is mostly host compute
for the reference, while a step whose dispatch spans the start of the XLA run is not
(tests/data/jax_cpu_steps: 6 of 18 steps). `instant_spans` returns, per such instant, the span
[instant, end) the sweep gives its type, so a plain union of events reproduces the reference
to the nanosecond (docs/analysis.md "Zero-length events").

Rule, per step group g and instant x of type t (events of the group, any line or device):
- x is *covered* when an event of type >= t, longer than 0, has start <= x < end: no span;
- else the span is [x, y), y = the earliest of: the first end after x of a longer-than-0
  event of type t, the first start at or after x of an event of a higher type, and the
  group's last boundary (the sweep emits nothing after it).

This is the numpy version. Where the compiled step sweep is built (analysis/steps/
_step_sweep.c, used by step_db.py unless TB_PROFILE_PURE_STEPS=1), the same rule runs per
group in two passes over its events in start order (tests/unit/analysis/test_step_sweep.py
holds the two equal).
"""

from __future__ import annotations

import numpy as np


def instant_spans(types: np.ndarray, groups: np.ndarray, start: np.ndarray,
                  end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Spans the reference's sweep gives zero-length events: (type, group, start, end) arrays.

    Per event: `types` (EventType, < 0 not counted), `groups` (< 0: no step), `start` and
    `end` in ps. Vectorised: one pass per event type that has an instant."""
    counted = (types >= 0) & (groups >= 0)
    instant = counted & (end == start)
    empty = np.zeros(0, np.int64)
    if not instant.any():
        return empty, empty, empty, empty
    del instant
    if counted.all():  # the step database passes only counted events: no copies of them
        ev_type, ev_group, ev_start, ev_end = types, groups, start, end
    else:
        ev = np.flatnonzero(counted)
        ev_type, ev_group, ev_start, ev_end = types[ev], groups[ev], start[ev], end[ev]
        del ev
    del counted
    longer = ev_end > ev_start
    # (group, time) as one sortable int64 key: each group's own time span laid end to end
    # (group g's keys are base[g] + time - first[g]; steps rarely overlap, so the keys span
    # about the capture), else, when that does not fit, time ranks.
    num_groups = int(ev_group.max()) + 1
    first = np.full(num_groups, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, ev_group, ev_start)
    last = np.full(num_groups, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, ev_group, ev_end)
    present = first <= last
    span = np.where(present, last - np.where(present, first, 0) + 1, 0)
    if float(span.astype(np.float64).sum()) < 2**62:
        times = None
        base = np.zeros(num_groups, np.int64)
        np.cumsum(span[:-1], out=base[1:])
        shift = base - np.where(present, first, 0)  # key = time + shift[group]
        start_key = shift[ev_group]  # (+= in place: no second temporary per key)
        start_key += ev_start
        end_key = shift[ev_group]
        end_key += ev_end
    else:
        times, inverse = np.unique(np.concatenate([ev_start, ev_end]), return_inverse=True)
        per_group = len(times) + 1
        shift = np.arange(num_groups, dtype=np.int64) * per_group
        start_key = shift[ev_group] + inverse[:len(ev_start)]
        end_key = shift[ev_group] + inverse[len(ev_start):]
        del inverse
    del ev_end  # from here on only the keys; the instants' own starts are kept below
    last_key = np.full(num_groups, -1, np.int64)
    np.maximum.at(last_key, ev_group, np.maximum(start_key, end_key))

    # The instants (queries) by type, taken before the per-event columns are dropped.
    is_instant = ~longer
    instant_types = np.unique(ev_type[is_instant])
    queries_of = {int(t): np.flatnonzero(is_instant & (ev_type == t)) for t in instant_types}
    del is_instant
    query_key = {t: start_key[q] for t, q in queries_of.items()}
    query_group = {t: ev_group[q] for t, q in queries_of.items()}
    query_start = {t: ev_start[q] for t, q in queries_of.items()}
    del ev_start, ev_group, queries_of
    # Two sorts for all types; each type then selects from them in one pass (no sort per type).
    # Sorted by start: the keys, the ends in that order, types and lengths; by end: the keys,
    # types and lengths (no per-event index kept beyond these).
    by_start = np.argsort(start_key, kind="stable")
    start_sorted = start_key[by_start]
    del start_key
    end_by_start = end_key[by_start]
    type_by_start, longer_by_start = ev_type[by_start], longer[by_start]
    del by_start
    by_end = np.argsort(end_key, kind="stable")
    end_sorted = end_key[by_end]
    del end_key
    type_by_end, longer_by_end = ev_type[by_end], longer[by_end]
    del by_end, ev_type, longer

    out: list[tuple[np.ndarray, ...]] = []
    for t in instant_types.tolist():
        x_key = query_key[t]
        # Covered: some longer event of type >= t has start <= x < end (same group: keys of
        # other groups' intervals end below this group's first key).
        coverer = longer_by_start & (type_by_start >= t)
        reach = np.maximum.accumulate(end_by_start[coverer]) if coverer.any() else empty
        at = np.searchsorted(start_sorted[coverer], x_key, side="right") - 1
        del coverer
        covered = (at >= 0) & (np.append(reach, -1)[at] > x_key)
        del reach, at
        x_key = x_key[~covered]
        if len(x_key) == 0:
            continue
        q_group = query_group[t][~covered]
        stop_key = np.minimum.reduce([
            last_key[q_group],
            _next_key(end_sorted[longer_by_end & (type_by_end == t)], x_key, "right"),
            _next_key(start_sorted[type_by_start > t], x_key, "left"),
        ])
        # A candidate of a later group has a key beyond this group's last boundary, so the
        # minimum with `last_key` keeps every span inside its own group.
        offset = stop_key - shift[q_group]
        stop_ps = offset if times is None else times[offset]
        x_ps = query_start[t][~covered]
        keep = stop_ps > x_ps
        out.append((np.full(int(keep.sum()), t, np.int64), q_group[keep], x_ps[keep],
                    stop_ps[keep]))
    if not out:
        return empty, empty, empty, empty
    span_type, group, begin_ps, end_ps = (np.concatenate(parts).astype(np.int64)
                                          for parts in zip(*out, strict=True))
    return span_type, group, begin_ps, end_ps


def _next_key(sorted_keys: np.ndarray, query_key: np.ndarray, side: str) -> np.ndarray:
    """Per query, the first key after it (`side="right"`) or at or after it ("left");
    int64 max where there is none."""
    at = np.searchsorted(sorted_keys, query_key, side=side)  # type: ignore[call-overload]
    padded = np.append(sorted_keys, np.iinfo(np.int64).max)
    return padded[at]
