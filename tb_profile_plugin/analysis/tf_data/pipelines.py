"""tf.data input pipelines of one host: iterator events, their metadata and their tree.

Every `Iterator::<Dataset_1>::...::<Dataset_n>` event is one `GetNext` call of one iterator
(xprof_reference.md §3.1, §3.5). Its stats name the iterator (`id`) and its consumer
(`parent_id`). An event with exactly two name components (`Iterator::Root`, or
`Iterator::Prefetch` before TF added the Root dataset) is a call of a pipeline's root: one
*execution* of the pipeline.

The tf.data parent of an iterator event is found in two ways, both vectorised:

* on its own thread, the nearest enclosing iterator event (`Map` calls `Range` inside it);
* across threads, for asynchronous transformations: the producer thread's work runs inside a
  `<Kind>Produce` event (`PrefetchProduce`, `ParallelMapProduce`, ...) and the consumer takes
  the element inside a `<Kind>Consume` event, both carrying the same `element_id`. The
  iterator directly inside the Produce event (its `parent_id` is the consumer iterator's id)
  becomes a child of the iterator event enclosing the Consume event whose `id` and
  `element_id` match:

      python      [Iterator::Root::Prefetch ........ [PrefetchConsume e=7]]
      tf_data_..  [PrefetchProduce e=7 [Iterator::Root::Prefetch::BatchV2 parent_id=P ...]]
                                        └──── child of the Prefetch call above ────┘

A pipeline is `Host:n`, or `Device:n` when it holds the `Prefetch::Generator` iterator that
a distribution strategy puts on each device; n numbers the pipelines of a kind by first call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.nesting import Nesting
from tb_profile_plugin.analysis.events.table import EventTable

ITERATOR_PREFIX = "Iterator::"
#: Transformations whose producer runs on other threads (the reference's `is_async` set).
ASYNC_KINDS = frozenset({
    "Prefetch", "ParallelInterleave", "ParallelMap", "ParseExample", "MapAndBatch",
    "DataService", "LegacyParallelInterleave", "ParallelBatch",
})
#: Events that bracket the producer's and the consumer's side of an asynchronous element.
LINKED_KINDS = ("Prefetch", "ParallelInterleave", "ParallelMap", "MapAndBatch", "ParseExample",
                "ParallelBatch")
PRODUCE_NAMES = frozenset(f"{kind}Produce" for kind in LINKED_KINDS)
CONSUME_NAMES = frozenset(f"{kind}Consume" for kind in LINKED_KINDS)
#: What a distribution strategy's per-device pipeline is called (below the root).
DEVICE_GENERATOR_NAMES = frozenset({"Iterator::Prefetch::Generator",
                                    "Iterator::Root::Prefetch::Generator"})
MAX_DEPTH = 100  # as the reference: deeper trees are cut (and reported)

_INDEX_SUFFIX = re.compile(r"\[[^\]]*\]$")
_VERSION_SUFFIX = re.compile(r"(?:Dataset)?(?:V\d+)?$")


def short_name(long_name: str) -> str:
    """The last component of an iterator name, without an input index: `FlatMap[0]` → FlatMap."""
    return _INDEX_SUFFIX.sub("", long_name.rsplit("::", 1)[-1])


def kind_of(name: str) -> str:
    """The dataset kind without version suffix: `ParallelMapV2` → ParallelMap."""
    return _VERSION_SUFFIX.sub("", name) or name


def is_root_name(long_name: str) -> bool:
    """A pipeline root has exactly two components: `Iterator::Root`, `Iterator::Prefetch`."""
    return long_name.startswith(ITERATOR_PREFIX) and long_name.count("::") == 1


@dataclass(frozen=True)
class IteratorInfo:
    """What the profile says about one iterator (the reference's IteratorMetadata)."""

    id: int
    parent_id: int | None  # None for a pipeline root
    name: str  # short name, e.g. "Map"
    long_name: str  # e.g. "Iterator::Root::BatchV2::Map"
    is_async: bool
    autotune: bool | None = None  # its `autotune` stat ("true"/"false"); None where absent


@dataclass(frozen=True)
class Pipeline:
    """One input pipeline: its root iterator and its executions (root calls), slowest first."""

    root_id: int
    name: str  # "Host:0", "Device:1", ...
    kind: str  # "host" or "device"
    executions: np.ndarray  # int64 indices into TfDataEvents arrays, by duration desc


@dataclass(frozen=True)
class TfDataEvents:
    """The iterator events of one host as parallel arrays, with their tf.data tree."""

    event: np.ndarray  # int64 index into the EventTable
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64
    iterator: np.ndarray  # int64 index into `iterator_ids` (dense iterator number)
    parent: np.ndarray  # int64 index into these arrays of the tf.data parent, -1 for none
    linked: np.ndarray  # bool: the parent was found across threads (producer → consumer)
    iterator_ids: np.ndarray  # int64: the `id` stat of each dense iterator number
    iterators: dict[int, IteratorInfo]  # by iterator id
    pipelines: list[Pipeline]
    num_unlinked_producers: int  # producer iterators whose consumer was not captured

    def __len__(self) -> int:
        return len(self.event)

    @property
    def duration_ps(self) -> np.ndarray:
        return self.end_ps - self.start_ps


def int_stat_present(table: EventTable, stat_name: str) -> tuple[np.ndarray, np.ndarray]:
    """(value, present) per event of an integer stat. tf.data ids use all 64 bits, so no fill
    value can mark absence: presence is its own column."""
    values = np.zeros(len(table), np.int64)
    present = np.zeros(len(table), bool)
    for k, (plane, line) in enumerate(table.lines):
        stat_id = plane.stat_metadata.id_of(stat_name)
        if stat_id is None:
            continue
        sub = line.stats.select(stat_id, len(line.events))
        rows = int(table.line_bounds[k]) + sub.row.astype(np.int64)
        values[rows] = sub.value
        present[rows] = True
    return values, present


def nearest_ancestor(mask: np.ndarray, parent: np.ndarray, events: np.ndarray) -> np.ndarray:
    """For each of `events`, its nearest strict ancestor (by `parent`) in `mask`, else -1.
    One vectorised step per nesting level."""
    result = np.full(len(events), -1, np.int64)
    current = parent[events]
    live = np.flatnonzero(current >= 0)
    while len(live):
        hit = mask[current[live]]
        result[live[hit]] = current[live[hit]]
        live = live[~hit]
        current[live] = parent[current[live]]
        live = live[current[live] >= 0]
    return result


def _pair_ids(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids of the (x, y) pairs of `a` and of `b`, equal where the pairs are equal."""
    x = np.concatenate([a[0], b[0]])
    y = np.concatenate([a[1], b[1]])
    order = np.lexsort((y, x))
    new_key = np.ones(len(order), bool)
    new_key[1:] = (np.diff(x[order]) != 0) | (np.diff(y[order]) != 0)
    inverse = np.empty(len(order), np.int64)
    inverse[order] = np.cumsum(new_key) - 1
    return inverse[: len(a[0])], inverse[len(a[0]):]


def find_tf_data_events(table: EventTable, nesting: Nesting) -> TfDataEvents:
    """The iterator events of `table` (one host) with metadata, tree and pipelines."""
    names = table.names
    is_iterator_name = table.names_matching(lambda s: s.startswith(ITERATOR_PREFIX))
    is_iterator = table.event_mask(is_iterator_name)
    ids, has_id = int_stat_present(table, "id")
    events = np.flatnonzero(is_iterator & has_id)
    events = events[np.lexsort((events, table.start_ps[events]))]
    position = np.full(len(table), -1, np.int64)
    position[events] = np.arange(len(events))
    parent_ids, has_parent_id = int_stat_present(table, "parent_id")

    # Same thread: the nearest enclosing iterator (or Produce event, for the links below).
    produce = table.event_mask(table.names_matching(lambda s: s in PRODUCE_NAMES))
    consume = table.event_mask(table.names_matching(lambda s: s in CONSUME_NAMES))
    owner = nearest_ancestor((is_iterator & has_id) | produce, nesting.parent, events)
    parent = np.full(len(events), -1, np.int64)
    nested = owner >= 0
    nested[nested] = is_iterator[owner[nested]]
    parent[nested] = position[owner[nested]]

    # Across threads: producer iterator (parent_id, element_id) ↔ consumer (id, element_id).
    element, has_element = int_stat_present(table, "element_id")
    producer = np.flatnonzero(owner >= 0)
    producer = producer[produce[owner[producer]] & has_element[owner[producer]]
                        & has_parent_id[events[producer]]]
    consume_events = np.flatnonzero(consume & has_element)
    consumer_iter = nearest_ancestor(is_iterator & has_id, nesting.parent, consume_events)
    keep = consumer_iter >= 0
    consume_events, consumer_iter = consume_events[keep], consumer_iter[keep]
    producer_key, consumer_key = _pair_ids(
        (parent_ids[events[producer]], element[owner[producer]]),
        (ids[consumer_iter], element[consume_events]))
    linked = np.zeros(len(events), bool)
    num_unlinked = 0
    if len(producer):
        first_consumer = np.full(len(producer) + len(consume_events) + 1, -1, np.int64)
        # The earliest consume of a key wins (an element is consumed once).
        order = np.argsort(table.start_ps[consume_events], kind="stable")[::-1]
        first_consumer[consumer_key[order]] = position[consumer_iter[order]]
        found = first_consumer[producer_key]
        ok = found >= 0
        parent[producer[ok]] = found[ok]
        linked[producer[ok]] = True
        num_unlinked = int((~ok).sum())

    iterator_ids, dense = np.unique(ids[events], return_inverse=True)
    dense = dense.ravel().astype(np.int64)
    iterators = _metadata(table, names, events, dense, iterator_ids, parent_ids, has_parent_id,
                          table.str_stat_codes("autotune"))
    start = table.start_ps[events]
    end = table.end_ps[events]
    pipelines = _pipelines(events, start, end, parent, dense, iterator_ids, iterators, names,
                           table.name_id)
    return TfDataEvents(events, start, end, dense, parent, linked, iterator_ids, iterators,
                        pipelines, num_unlinked)


def _metadata(table: EventTable, names: list[str], events: np.ndarray, dense: np.ndarray,
              iterator_ids: np.ndarray, parent_ids: np.ndarray, has_parent_id: np.ndarray,
              autotune: tuple[np.ndarray, list[str]]) -> dict[int, IteratorInfo]:
    """One IteratorInfo per iterator id, from its first event (a loop per iterator)."""
    autotune_code, autotune_texts = autotune
    first = np.full(len(iterator_ids), -1, np.int64)
    first[dense[::-1]] = np.arange(len(events))[::-1]
    out: dict[int, IteratorInfo] = {}
    for k, row in enumerate(first.tolist()):
        event = int(events[row])
        long_name = names[int(table.name_id[event])]
        name = short_name(long_name)
        parent_id = int(parent_ids[event]) if has_parent_id[event] else None
        code = int(autotune_code[event])
        out[int(iterator_ids[k])] = IteratorInfo(
            int(iterator_ids[k]), None if is_root_name(long_name) else parent_id, name,
            long_name, kind_of(name) in ASYNC_KINDS,
            None if code < 0 else autotune_texts[code].lower() == "true")
    return out


def _pipelines(events: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
               dense: np.ndarray, iterator_ids: np.ndarray, iterators: dict[int, IteratorInfo],
               names: list[str], name_id: np.ndarray) -> list[Pipeline]:
    """Root calls grouped by root iterator; host pipelines first, each kind by first call."""
    root_name = np.array([is_root_name(n) for n in names] + [False])
    roots = np.flatnonzero(root_name[name_id[events]] & (parent < 0))
    device_roots = _device_root_ids(iterators)
    found: list[tuple[str, int, int, np.ndarray]] = []
    for k in np.unique(dense[roots]).tolist():
        calls = roots[dense[roots] == k]
        calls = calls[np.lexsort((start[calls], -(end[calls] - start[calls])))]
        root_id = int(iterator_ids[k])
        kind = "device" if root_id in device_roots else "host"
        found.append((kind, int(start[calls].min()), root_id, calls))
    found.sort(key=lambda f: (f[0] != "host", f[1], f[2]))
    out: list[Pipeline] = []
    counters = {"host": 0, "device": 0}
    for kind, _, root_id, calls in found:
        label = f"{kind.capitalize()}:{counters[kind]}"
        counters[kind] += 1
        out.append(Pipeline(root_id, label, kind, calls))
    return out


def _device_root_ids(iterators: dict[int, IteratorInfo]) -> set[int]:
    """Roots of the pipelines that hold a distribution strategy's `Prefetch::Generator`."""
    out: set[int] = set()
    for info in iterators.values():
        if info.long_name not in DEVICE_GENERATOR_NAMES:
            continue
        current: IteratorInfo | None = info
        for _ in range(MAX_DEPTH):
            if current is None or current.parent_id is None:
                break
            current = iterators.get(current.parent_id)
        if current is not None:
            out.add(current.id)
    return out
