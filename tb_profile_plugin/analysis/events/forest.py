"""The event forest: which step (group) every event belongs to.

Follows the profiler's grouping rules (xprof_reference.md §3.2), vectorised:

* Edges. Nesting on a line (parent encloses child; `_a=1` events are async and not nested);
  producer -> consumer across threads (`_pt`/`_p` matches `_ct`/`_c`, ids compared as
  written: 64-bit flow ids are often negative). As in the reference, a thread-pool region
  nests nothing: the zero-length `ThreadpoolListener::StartRegion` (a consumer) joins the step,
  the work the pool runs after it does not;
  `ExecutorState::Process` -> `IteratorGetNextOp::DoCompute` on (`id`, `iter_num`);
  host kernel launch -> device kernel on `correlation_id`; a launch on a tracer line that
  nothing else reached takes the step whose root spans it (`_adopt_tracer_launches`).
* Roots, in this order of preference:
  1. TensorFlow while-loop iterations (the first `ExecutorState::Process` of each
     (`id`, `iter_num`) when some `id` runs more than iteration 0);
  2. events with `_r` (e.g. `tf.profiler.experimental.Trace('train', step_num=N, _r=1)`),
     except those inside functions tf.data runs (`InstantiatedCapturedFunction::Run*`);
  3. when the only `_r` events are `FunctionRun`s (TF marks every tf.function run so): the
     outermost Keras 3 step function executions (names containing `step_on_iterator`), which
     is how `model.fit` runs a step; without those, the `FunctionRun`s;
  4. legacy markers `TraceContext`, `SessionRun`, `RunGraph`.
* Pre-grouped files. A producer that grouped before writing (TensorFlow 2.x up to 2.4 on GPU:
  host and device events carry `group_id`) has decided the steps already; as the reference
  does, its groups are used as they are and none of the rules above runs (rule "producer").
  A group's root is its longest host event with a `step_name` stat (the producer's step
  marker), else its longest outermost host event, else its first device event; its step
  number is the root's `step_num`, else the number `step_name` ends in, else the group id.
* Group ids. Roots are ranked by start time; each event takes the smallest rank of any root
  that reaches it (the reference's breadth-first "first root wins"), found by alternating a
  top-down pass over nesting levels with a min-per-key pass over the cross-thread links until
  nothing changes. Roots reached from an earlier root join that root's group.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.nesting import (
    WALK_LEVELS,
    Nesting,
    ancestor_reduce,
    compiled_parent,
    compiled_pass,
    compute_nesting,
    nearest_marked,
    under,
)
from tb_profile_plugin.analysis.events.table import EventTable, SparseStat
from tb_profile_plugin.request_budget import checkpoint
from tb_profile_plugin.xspace.producers import (
    CORRELATION_ID_STAT,
    GROUP_ID_STAT,
    STEP_NAME_STAT,
    detect_framework,
    is_accelerator_plane,
    launches_from_untied_threads,
)
from tb_profile_plugin.xspace.unique_rows import unique_ints

_NONE = np.iinfo(np.int64).max
LEGACY_ROOT_NAMES = frozenset({"TraceContext", "SessionRun", "RunGraph"})
KERAS_STEP_PATTERN = re.compile(r"step_on_iterator")
EXECUTOR_PROCESS = "ExecutorState::Process"
ITERATOR_GET_NEXT_COMPUTE = "IteratorGetNextOp::DoCompute"
FUNCTION_RUN = "FunctionRun"
TF_DATA_FUNCTION_PREFIX = "InstantiatedCapturedFunction::Run"
#: "No such stat" in link columns (a real id may be any 64-bit value, negative included).
_ABSENT = np.iinfo(np.int64).min
#: Root rule of files the producer grouped before writing (`group_id` stats).
PRODUCER_RULE = "producer"


@dataclass(frozen=True)
class Forest:
    """Group (step) of every event, and the root event and step number of every group."""

    table: EventTable
    nesting: Nesting
    group_id: np.ndarray  # int32 per event, -1 outside every group
    root_event: np.ndarray  # int64 per group: the event that roots it
    step_num: np.ndarray  # int64 per group
    root_rule: str  # "producer", "loop", "marker", "legacy", "keras" or "none"

    @property
    def num_groups(self) -> int:
        return len(self.root_event)


def _key_ids(*columns: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Dense ids of the tuples of `columns`; rows not `valid` get -1 (default: rows where any
    column is negative)."""
    if valid is None:
        valid = np.ones(len(columns[0]), bool)
        for col in columns:
            valid &= col >= 0
    ids = np.full(len(valid), -1, np.int64)
    rows = np.flatnonzero(valid)
    if len(rows) == 0:
        return ids
    picked = [col[rows] for col in columns]
    order = np.lexsort(picked[::-1])
    new_key = np.zeros(len(rows), bool)
    new_key[0] = True
    for col in picked:
        ordered = col[order]
        new_key[1:] |= ordered[1:] != ordered[:-1]
    ids[rows[order]] = np.cumsum(new_key) - 1
    return ids


@dataclass(frozen=True)
class _Link:
    """Sources and targets that share a key: each target takes the min over its key's sources.
    Only the linked events are held (a few percent of a profile), not a column per event."""

    sources: np.ndarray  # int64 event indices
    source_key: np.ndarray  # int64 key id per source
    targets: np.ndarray  # int64 event indices
    target_key: np.ndarray  # int64 key id per target
    num_keys: int
    #: (group column, best per key) of the last `apply`: see there.
    _last: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list, compare=False)

    def apply(self, group: np.ndarray) -> bool:
        """Lowers each target's group to its key's best source (in place); whether any
        changed. Groups only ever fall, and after an apply no target's group is above its
        key's best; so where no key's best fell since the last apply to the same column,
        nothing can change, and the targets (millions of kernels) are not read again."""
        if self.num_keys == 0:
            return False
        best = np.full(self.num_keys, _NONE, np.int64)
        np.minimum.at(best, self.source_key, group[self.sources])
        last = self._last
        if last and last[0][0] is group and np.array_equal(best, last[0][1]):
            return False
        last[:] = [(group, best)]
        changed = False
        chunk = max(1, column_sizes.CHUNK_EVENTS // 4)  # (a part's temporaries, in cache)
        for lo in range(0, len(self.targets), chunk):
            targets = self.targets[lo:lo + chunk]
            proposed = best[self.target_key[lo:lo + chunk]]
            better = proposed < group[targets]
            if better.any():
                group[targets[better]] = proposed[better]
                changed = True
        return changed


def _link(source_cols: tuple[np.ndarray, ...], target_cols: tuple[np.ndarray, ...],
          sources: np.ndarray, targets: np.ndarray) -> _Link:
    """The link between `sources` and `targets` (event indices) keyed by the tuples of their
    columns (values at those events)."""
    n = len(sources)
    if len(source_cols) == 1:  # one key column (correlation ids): a table of its range
        source_key, target_key = _single_key_ids(source_cols[0], target_cols[0])
        num_keys = int(max(source_key.max(initial=-1), target_key.max(initial=-1))) + 1
        return _Link(sources, source_key, targets, target_key, num_keys)
    both = [np.concatenate([s, t]) for s, t in zip(source_cols, target_cols, strict=True)]
    ids = _key_ids(*both, valid=np.ones(n + len(targets), bool))  # keyed as given (may be < 0)
    num_keys = int(ids.max()) + 1 if len(ids) and ids.max() >= 0 else 0
    return _Link(sources, ids[:n], targets, ids[n:], num_keys)


def _single_key_ids(source_values: np.ndarray, target_values: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """`_key_ids` of one column over the sources then the targets, split back: the rank of
    each value among the distinct values of both. Correlation ids are small counters (a range
    within a few times their number), so the ranks come from a mark per value of the range
    and its running count, O(n + range), where the sort of 10M concatenated ids took 1.2 s;
    a wide range is ranked by `unique_ints`' sort (the same ranks)."""
    count = len(source_values) + len(target_values)
    if count == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    low = min(int(v.min()) for v in (source_values, target_values) if len(v))
    high = max(int(v.max()) for v in (source_values, target_values) if len(v))
    if high - low + 1 > _DENSE_KEY_RANGE_PER_ID * count + _DENSE_KEY_SLACK:
        ids = unique_ints(np.concatenate([source_values, target_values]),
                          return_inverse=True)[1].astype(np.int64, copy=False)
        return ids[:len(source_values)], ids[len(source_values):]
    present = np.zeros(high - low + 1, bool)
    chunk = max(1, column_sizes.CHUNK_EVENTS // 4)  # (a part's slots at a time, warm in cache)
    for values in (source_values, target_values):
        for lo in range(0, len(values), chunk):
            present[values[lo:lo + chunk] - low] = True
    rank = np.cumsum(present, dtype=np.int64)
    rank -= 1
    del present
    key_ids: list[np.ndarray] = []
    for values in (source_values, target_values):
        out = np.empty(len(values), np.int64)
        for lo in range(0, len(values), chunk):
            np.take(rank, values[lo:lo + chunk] - low, out=out[lo:lo + chunk])
        key_ids.append(out)
    return key_ids[0], key_ids[1]


#: Key columns whose range is within this many times their number (plus the slack) are
#: ranked by a table.
_DENSE_KEY_RANGE_PER_ID = 2
_DENSE_KEY_SLACK = 1024


def _events_named(table: EventTable, predicate: Callable[[str], bool]) -> np.ndarray:
    """Per event: `predicate(name)`; no gather over every event where no name passes (most
    of the names looked for here: TensorFlow's, on a JAX capture)."""
    name_mask = table.names_matching(predicate)
    if not name_mask.any():
        return np.zeros(len(table), bool)
    return table.event_mask(name_mask)


def _present(stat: SparseStat) -> SparseStat:
    """The events of `stat` whose value is not the `_ABSENT` fill (`stat` itself, no copy,
    where none is: millions of correlation ids)."""
    written = stat.values != _ABSENT
    return stat if written.all() else stat.where(written)


def _both(first: SparseStat, second: SparseStat) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Events carrying both stats (neither equal to the `_ABSENT` fill), and the two values."""
    first, second = _present(first), _present(second)
    rows, i, j = np.intersect1d(first.rows, second.rows, assume_unique=True,
                                return_indices=True)
    return rows, first.values[i], second.values[j]


def build_forest(table: EventTable, nesting: Nesting | None = None) -> Forest:
    """The forest of `table`'s events (`nesting`: the table's, when the caller has it)."""
    if nesting is None:
        nesting = compute_nesting(table.start_ps, table.end_ps, table.line_bounds)
    if np.any(table.stat_rows(GROUP_ID_STAT).values >= 0):
        return _producer_forest(table, nesting, table.int_stat(GROUP_ID_STAT))
    n = len(table)
    is_async = table.stat_rows("_a")
    async_rows = is_async.rows[is_async.values > 0]
    parent = nesting.parent
    if len(async_rows):  # (a copy only where some event is async: 4 bytes per event)
        parent = parent.copy()
        parent[async_rows] = -1
    del is_async, async_rows

    correlation = _present(table.stat_rows(CORRELATION_ID_STAT))  # links and adoption
    links = _cross_thread_links(table, correlation)
    roots, rule = _find_roots(table, nesting)
    extra_children = np.zeros(0, np.int64)
    extra_parents = np.zeros(0, np.int64)
    if rule == "loop":
        roots, extra_parents, extra_children = _loop_iterations(table)

    # Ranks by start time; each event takes the smallest reaching rank.
    order = np.lexsort((roots, table.start_ps[roots]))
    roots = roots[order]
    group = np.full(n, _NONE, np.int64)
    group[roots] = np.arange(len(roots))
    if len(extra_children):
        np.minimum.at(group, extra_children, group[extra_parents])

    down = _top_down(parent, nesting.depth)
    for _ in range(64):  # chains of cross-thread hops are short; 64 is a safety bound
        checkpoint()
        changed = down(group)
        for link in links:
            changed |= link.apply(group)
        if not changed:
            break

    _adopt_tracer_launches(table, roots, group, links, correlation)
    del parent, down, correlation
    ungrouped = group == _NONE
    # Ranks in use, renumbered densely in order (ranks < len(roots): a bincount, no sort).
    # The group column becomes the group ids in place (no second column of every event).
    group[ungrouped] = len(roots)
    present = np.zeros(len(roots) + 1, bool)
    present[group] = True
    ranks = np.flatnonzero(present[:-1])
    dense = np.cumsum(present) - 1
    dense[-1] = -1
    del ungrouped, present
    np.take(dense, group, out=group, mode="clip")  # every index is in range
    group_id = group.astype(np.int32)  # (held for the analysis' life: 4 bytes per event)
    del group
    root_event = roots[ranks]
    step_num = _step_numbers(table, nesting, root_event, rule)
    return Forest(table, nesting, group_id, root_event, step_num, rule if len(roots) else "none")


#: Up to this nesting depth, groups flow down one depth level at a time; deeper (crafted or
#: runaway nesting), by pointer jumping, so the work never grows with depth times events.
_LEVEL_PASSES_MAX_DEPTH = WALK_LEVELS


def _top_down(parent: np.ndarray, depth: np.ndarray) -> Callable[[np.ndarray], bool]:
    """A function that lowers every event's group to the smallest of its ancestors' (in
    place), returning whether anything changed: the compiled pass where built (one climb per
    chain, O(n), no set-up: at 20M events 0.3 s instead of 2.5 s of level sorting and
    gathers), else numpy one depth level at a time (the reference)."""
    compiled = compiled_pass()
    if compiled is not None:
        contiguous_parent = compiled_parent(parent)
        return lambda group: bool(compiled.lower_to_ancestors(group, contiguous_parent))
    nested = np.flatnonzero(parent >= 0)
    max_depth = int(depth.max(initial=0))
    if max_depth > _LEVEL_PASSES_MAX_DEPTH:
        def by_jumping(group: np.ndarray) -> bool:
            lowest = ancestor_reduce(group, parent, np.minimum, _NONE)
            better = lowest < group
            group[better] = lowest[better]
            return bool(better.any())
        return by_jumping
    small = depth[nested].astype(np.int8)  # depths <= 64 here: a one-pass radix sort
    by_depth = nested[np.argsort(small, kind="stable")]
    del small
    cuts = np.searchsorted(depth[by_depth], np.arange(1, max_depth + 2))
    levels = np.split(by_depth, cuts[1:-1]) if len(by_depth) else []

    def by_levels(group: np.ndarray) -> bool:
        changed = False
        for level in levels:
            proposed = group[parent[level]]
            better = proposed < group[level]
            if better.any():
                group[level[better]] = proposed[better]
                changed = True
        return changed
    return by_levels


def _adopt_tracer_launches(table: EventTable, roots: np.ndarray, group: np.ndarray,
                           links: list[_Link], correlation: SparseStat) -> None:
    """Kernel launches on a line nothing else reached (the ROCm tracer writes its API calls
    on `Host Threads/<tid>` lines apart from the TraceMe lines of the same thread) take the
    step whose root spans their start, when the roots do not overlap; their kernels follow
    through `correlation_id`. So a JAX step annotation reaches its GPU work. Where the
    runtime issues work from worker threads that no flow ties to the step
    (`launches_from_untied_threads`: JAX's host-to-device copies), every launch left
    ungrouped is adopted so, whatever its line. `correlation`: the events' `correlation_id`.

    Only the host launches are read, and whether a line was reached is its group column's
    minimum (no mask or gather of every event: at 10M events those took 0.6 s)."""
    if len(roots) == 0 or not links:
        return
    starts, ends = table.start_ps[roots], table.end_ps[roots]  # roots in rank order
    if np.any(starts[1:] < ends[:-1]):
        return  # overlapping steps: time says nothing about which step launched a kernel
    accelerator = np.array([is_accelerator_plane(p.name) for p in table.profile.planes])
    host = _on_planes(table, correlation, ~accelerator)
    launches = host.rows[host.values >= 0]
    orphans = launches[group[launches] == _NONE]
    if not launches_from_untied_threads(detect_framework(table.profile).framework) \
            and len(orphans):
        bounds = table.line_bounds.tolist()
        reached = np.array([hi > lo and int(group[lo:hi].min()) != _NONE  # per line
                            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)], bool)
        orphans = orphans[~reached[table.line_index[orphans]]]
    if len(orphans) == 0:
        return
    slot = np.searchsorted(starts, table.start_ps[orphans], side="right") - 1
    inside = (slot >= 0) & (table.start_ps[orphans] < ends[np.maximum(slot, 0)])
    group[orphans[inside]] = slot[inside]
    links[-1].apply(group)  # the launch -> kernel link is the last one


def _on_planes(table: EventTable, stat: SparseStat, planes: np.ndarray) -> SparseStat:
    """The part of `stat` on the planes marked in `planes` (one flag per plane of the
    profile), in event order. A line's events lie side by side, so each line's part is one
    slice of the rows, found by a search per line; adjacent slices are joined, and one
    slice is a view (no mask or gather over millions of correlation ids)."""
    bounds = table.line_bounds
    filled = np.flatnonzero(np.diff(bounds) > 0)
    lines = filled[planes[table.plane_index[bounds[filled]]]]
    cuts = np.searchsorted(stat.rows, bounds).tolist()
    spans: list[list[int]] = []
    for k in lines.tolist():
        lo, hi = cuts[k], cuts[k + 1]
        if spans and spans[-1][1] == lo:
            spans[-1][1] = hi
        elif hi > lo:
            spans.append([lo, hi])
    if len(spans) == 1:
        return SparseStat(stat.rows[spans[0][0]:spans[0][1]], stat.values[spans[0][0]:spans[0][1]])
    if not spans:
        return SparseStat(stat.rows[:0], stat.values[:0])
    return SparseStat(np.concatenate([stat.rows[lo:hi] for lo, hi in spans]),
                      np.concatenate([stat.values[lo:hi] for lo, hi in spans]))


def _producer_forest(table: EventTable, nesting: Nesting, producer_group: np.ndarray) -> Forest:
    """The producer's own groups (`group_id` stats), densely renumbered in id order."""
    grouped = np.flatnonzero(producer_group >= 0)
    values, dense = unique_ints(producer_group[grouped], return_inverse=True)
    group_id = np.full(len(table), -1, np.int32)
    group_id[grouped] = dense
    num_groups = len(values)
    host = ~table.on_device
    length = table.end_ps - table.start_ps
    step_name_code, step_names = table.str_stat_codes(STEP_NAME_STAT)
    # Root preference per group: host step marker (step_name), outermost host event, device
    # event; then the longest, then the earliest. One lexsort, the first row per group wins.
    preference = np.where(host & (step_name_code >= 0), 0,
                          np.where(host & (nesting.parent < 0), 1, np.where(host, 3, 2)))
    rows = grouped[np.lexsort((table.start_ps[grouped], -length[grouped],
                               preference[grouped], group_id[grouped]))]
    first = np.ones(len(rows), bool)
    first[1:] = group_id[rows][1:] != group_id[rows][:-1]
    root_event = rows[first]
    step_num = table.int_stat("step_num")[root_event]
    named = np.array([_trailing_number(text) for text in step_names] + [-1], np.int64)
    step_num = np.where(step_num >= 0, step_num, named[step_name_code[root_event]])
    step_num = np.where(step_num >= 0, step_num, values)
    rule = PRODUCER_RULE if num_groups else "none"
    return Forest(table, nesting, group_id, root_event, step_num.astype(np.int64), rule)


_TRAILING_NUMBER = re.compile(r"(\d+)\s*$")


def _trailing_number(text: str) -> int:
    """`"train 12"` -> 12, `"0"` -> 0; -1 where the name ends in no number."""
    match = _TRAILING_NUMBER.search(text)
    return int(match.group(1)) if match else -1


def _cross_thread_links(table: EventTable, correlation: SparseStat) -> list[_Link]:
    """Producer -> consumer, executor -> GetNext and launch -> kernel links. Ids are matched as
    written: flow ids are 64-bit and often negative, so presence (not sign) says a stat is
    there. `correlation`: the events carrying a `correlation_id` and its value."""
    links: list[_Link] = []
    producers, producer_type, producer_id = _both(table.stat_rows("_pt"), table.stat_rows("_p"))
    consumers, consumer_type, consumer_id = _both(table.stat_rows("_ct"), table.stat_rows("_c"))
    links.append(_link((producer_type, producer_id), (consumer_type, consumer_id),
                       producers, consumers))
    executor = _events_named(table, lambda s: s == EXECUTOR_PROCESS)
    get_next = _events_named(
        table, lambda s: s.startswith(ITERATOR_GET_NEXT_COMPUTE))
    if executor.any() and get_next.any():
        keyed, step_id, iter_num = _both(table.stat_rows("id"), table.stat_rows("iter_num"))
        source, target = executor[keyed], get_next[keyed]
        links.append(_link((step_id[source], iter_num[source]),
                           (step_id[target], iter_num[target]), keyed[source], keyed[target]))
    if len(correlation.rows):
        device_plane = np.array([p.name.startswith("/device:") for p in table.profile.planes])
        launches = _on_planes(table, correlation, ~device_plane)
        kernels = _on_planes(table, correlation, device_plane)
        links.append(_link((launches.values,), (kernels.values,), launches.rows, kernels.rows))
    return links


def _find_roots(table: EventTable, nesting: Nesting) -> tuple[np.ndarray, str]:
    if _has_tf_loops(table):
        return np.zeros(0, np.int64), "loop"
    marked = table.stat_rows("_r")
    explicit = marked.mask(len(table), marked.values > 0) & ~_in_tf_data(table, nesting)
    function_run = _events_named(table, lambda s: s == FUNCTION_RUN)
    keras = _events_named(table, lambda s: bool(KERAS_STEP_PATTERN.search(s)))
    if np.any(explicit & ~function_run):
        return np.flatnonzero(explicit), "marker"
    if keras.any():
        # TF marks every tf.function run as a root (`FunctionRun`, `_r=1`); Keras 3 fit runs
        # one step per outermost step function, which is the better step boundary.
        return _outermost(keras, nesting), "keras"
    if explicit.any():
        return np.flatnonzero(explicit), "marker"
    legacy = np.flatnonzero(_events_named(table, lambda s: s in LEGACY_ROOT_NAMES))
    if len(legacy):
        return legacy, "legacy"
    return np.zeros(0, np.int64), "none"


def _in_tf_data(table: EventTable, nesting: Nesting) -> np.ndarray:
    """Events inside a function that tf.data runs (its roots are not training steps)."""
    captured = _events_named(table, lambda s: s.startswith(TF_DATA_FUNCTION_PREFIX))
    return under(captured, nesting.parent)


def _outermost(mask: np.ndarray, nesting: Nesting) -> np.ndarray:
    """Events in `mask` with no ancestor in `mask`."""
    return np.flatnonzero(mask & ~under(mask, nesting.parent))


def _executor_keys(table: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    executor = _events_named(table, lambda s: s == EXECUTOR_PROCESS)
    keyed, step_id, iter_num = _both(table.stat_rows("id"), table.stat_rows("iter_num"))
    chosen = executor[keyed]
    return keyed[chosen], step_id[chosen], iter_num[chosen]


def _has_tf_loops(table: EventTable) -> bool:
    """A TensorFlow while loop: some executor `id` runs an iteration other than 0."""
    _, _, iter_num = _executor_keys(table)
    return bool(np.any(iter_num > 0))


def _loop_iterations(table: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Roots = first executor event of each iteration of each looping `id`; the iteration's
    other executor events become its children. Returns (roots, parents, children)."""
    events, step_id, iter_num = _executor_keys(table)
    looping_ids = np.unique(step_id[iter_num > 0])
    keep = np.isin(step_id, looping_ids)
    events, step_id, iter_num = events[keep], step_id[keep], iter_num[keep]
    order = np.lexsort((table.start_ps[events], iter_num, step_id))
    events, step_id, iter_num = events[order], step_id[order], iter_num[order]
    first = np.ones(len(events), bool)
    first[1:] = (step_id[1:] != step_id[:-1]) | (iter_num[1:] != iter_num[:-1])
    iteration = np.cumsum(first) - 1
    roots = events[first]
    return roots, roots[iteration[~first]], events[~first]


def _step_numbers(table: EventTable, nesting: Nesting, roots: np.ndarray, rule: str) -> np.ndarray:
    """step_num of the root (or of its nearest ancestor that has one), else iter_num, else
    the group's index."""
    step_num = table.stat_rows("step_num")
    parent = nesting.parent
    result = np.full(len(roots), -1, np.int64)
    current = roots.copy()
    for _ in range(WALK_LEVELS):  # real roots find theirs within a few levels
        live = (current >= 0) & (result < 0)
        if not live.any():
            break
        result[live] = step_num.at(current[live], -1)
        current[live] = parent[current[live]]
    else:
        rest = (current >= 0) & (result < 0)
        if rest.any():  # deeper: every event's nearest numbered ancestor, n·log(depth)
            dense = table.int_stat("step_num")
            result[rest] = nearest_marked(dense, dense >= 0, parent)[current[rest]]
    if rule == "loop":
        iter_num = table.stat_rows("iter_num").at(roots, _ABSENT)
        result = np.where(result < 0, np.where(iter_num == _ABSENT, -1, iter_num), result)
    return np.where(result < 0, np.arange(len(roots)), result)
