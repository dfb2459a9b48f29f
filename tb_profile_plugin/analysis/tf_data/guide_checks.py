"""The tf.data performance guide's manual checks, automated, and its fixes in plain words.

The guide's workflow ("Analyze tf.data performance with the TF Profiler"):

1. Is the program input-bound? Look at `IteratorGetNext` (or `IteratorGetNextAsOptional`)
   per step: a fast input pipeline answers in ≤ 50 µs (`FAST_GET_NEXT_PS`). The steps are
   the overview's (the host's step database), so both views count the same steps; a profile
   without steps has no step to check.
2. Does the pipeline end in `prefetch`? Without it, producing the next batch cannot overlap
   the training step.
3. Which iterator is slow, and of what kind: a *source* (reading files: read them in parallel
   with `interleave`), a *parallelisable* transformation (`map`, `interleave`: AUTOTUNE
   parallelism or `cache()`), or a *sequential* one (`filter`, `batch`, `unbatch`:
   parallelise around it by sharding, "outer parallelism").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_profile_plugin.analysis.events.forest import Forest
from tb_profile_plugin.analysis.events.nesting import under
from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.analysis.evidence import AdviceSet, Evidence, duration_text
from tb_profile_plugin.analysis.steps.step_db import StepDb
from tb_profile_plugin.analysis.tf_data.pipelines import IteratorInfo, kind_of

FAST_GET_NEXT_PS = 50_000_000  # 50 µs
GET_NEXT_KERNELS = frozenset({"IteratorGetNextOp::DoCompute",
                              "IteratorGetNextAsOptionalOp::DoCompute"})
GET_NEXT_OP_TYPES = frozenset({"IteratorGetNext", "IteratorGetNextAsOptional",
                               "IteratorGetNextSync"})

SOURCE_KINDS = frozenset({
    "TFRecord", "TextLine", "FixedLengthRecord", "FromTensor", "FromTensors", "TensorSlice",
    "Tensor", "SparseTensorSlice", "Generator", "Range", "SSTable", "CSV", "Csv", "Sql", "LMDB",
    "ListFiles", "Random", "Counter", "Load", "Snapshot", "FlatMapGenerator", "RecordIO",
    "ArrayRecord", "Bigtable",
})
DATA_SERVICE_KINDS = frozenset({"DataService"})
PARALLELISABLE_KINDS = frozenset({
    "Map", "ParallelMap", "Interleave", "ParallelInterleave", "LegacyParallelInterleave",
    "FlatMap", "MapAndBatch", "ParseExample", "ParallelBatch",
})
SEQUENTIAL_KINDS = frozenset({
    "Filter", "FilterByLastComponent", "Batch", "PaddedBatch", "Unbatch", "Shuffle",
    "ShuffleAndRepeat", "Repeat", "ForeverRepeat", "Scan", "Window", "GroupByWindow",
    "GroupByReducer", "Zip", "Concatenate", "Take", "Skip", "Shard", "Cache", "MemoryCache",
    "Rebatch", "Unique", "TakeWhile", "DenseToSparseBatch", "Bucket", "SlidingWindow",
})
#: A cache: never told to cache() what it already caches.
CACHE_KINDS = frozenset({"Cache", "MemoryCache"})
#: Buffers: a slow call means the buffer was empty and its producer was not seen keeping up.
BUFFER_KINDS = frozenset({"Prefetch"})

GUIDE = "the tf.data performance guide (tensorflow.org/guide/data_performance_analysis)"


def suggestion_type(info: IteratorInfo) -> str:
    """source, data_service, parallelizable, sequential, prefetch or other (by short name)."""
    kind = kind_of(info.name)
    for name, kinds in (("source", SOURCE_KINDS), ("data_service", DATA_SERVICE_KINDS),
                        ("parallelizable", PARALLELISABLE_KINDS),
                        ("sequential", SEQUENTIAL_KINDS), ("prefetch", BUFFER_KINDS)):
        if kind in kinds:
            return name
    return "other"


def suggestion(info: IteratorInfo) -> str:
    """What to change about a bottleneck iterator, in the guide's words."""
    name, kind, kind_type = info.name, kind_of(info.name), suggestion_type(info)
    if kind_type == "source":
        return (f"{name} reads the input and is the slowest step. Read several files at once: "
                "build a dataset of file names and use interleave(<reader>, "
                "num_parallel_calls=tf.data.AUTOTUNE, deterministic=False); if the data fits "
                "in memory, cache() it after reading.")
    if kind_type == "data_service":
        return (f"{name} waits for the tf.data service: add service workers, or move "
                "preprocessing so the workers have less to do per element.")
    if kind_type == "parallelizable" and not info.is_async:
        call = "interleave" if "Interleave" in kind or kind == "FlatMap" else "map"
        return (f"{name} runs one element at a time. Parallelise it: "
                f"{call}(..., num_parallel_calls=tf.data.AUTOTUNE); if its output is the same "
                "every epoch, cache() it.")
    if kind_type == "parallelizable" and info.autotune:
        return (f"{name} already runs in parallel with its parallelism chosen by tf.data "
                "(AUTOTUNE) but is still the slowest step: make its function cheaper (batch "
                "before map to vectorise it), or cache() its output if it is the same every "
                "epoch.")
    if kind_type == "parallelizable":
        return (f"{name} already runs in parallel but is still the slowest step: let tf.data "
                "choose the parallelism (num_parallel_calls=tf.data.AUTOTUNE), make its "
                "function cheaper (batch before map to vectorise it), or cache() its output "
                "if it is the same every epoch.")
    if kind_type == "sequential":
        cache = ("" if kind in CACHE_KINDS else
                 "; cache() the data before it if it is the same every epoch")
        return (f"{name} handles one element at a time and cannot run in parallel itself. "
                "Parallelise around it (outer parallelism): shard() the input and interleave "
                f"the shards with num_parallel_calls=tf.data.AUTOTUNE{cache}.")
    if kind_type == "prefetch":
        return (f"{name} waited with an empty buffer: what feeds it is slower than the "
                "consumer. The producer's work was not captured inside this call; look at the "
                "iterators before it in a longer capture and parallelise the slowest one.")
    return f"{name} is the slowest step; see {GUIDE} for how to speed it up."


def prefetch_suggestion(last: str) -> str:
    """Add a final prefetch, quoting the pipeline's last transformation `last`."""
    return (f"The pipeline does not end in prefetch (its last transformation is {last}): add "
            ".prefetch(tf.data.AUTOTUNE) as its last transformation so that the next batch is "
            "prepared while the current step runs.")


def last_transformations(root: IteratorInfo, iterators: dict[int, IteratorInfo]
                         ) -> list[IteratorInfo]:
    """The pipeline's last transformation: the root's children below `Root`, or the root
    itself when it is a transformation (older TensorFlow's `Iterator::Prefetch`)."""
    if kind_of(root.name) != "Root":
        return [root]
    return [i for i in iterators.values() if i.parent_id == root.id]


def ends_in_prefetch(root: IteratorInfo, iterators: dict[int, IteratorInfo]) -> bool:
    """Whether the last transformation (the root, or the root's child below `Root`) is a
    Prefetch."""
    last = last_transformations(root, iterators)
    return bool(last) and all(kind_of(i.name) == "Prefetch" for i in last)


def pipeline_advice(bottleneck: IteratorInfo | None, self_ps: int, calls: int,
                    root: IteratorInfo, iterators: dict[int, IteratorInfo]) -> AdviceSet:
    """What to change about one pipeline, each suggestion with its evidence: the bottleneck's
    (its name, self time, whether it runs in parallel and with AUTOTUNE), then "end in
    prefetch", withheld when the pipeline already does."""
    out = AdviceSet()
    if bottleneck is not None:
        evidence = [Evidence("slowest stage of the slowest call", bottleneck.long_name),
                    Evidence("its self time in that call",
                             f"{duration_text(self_ps / 1e6)} over {calls} call(s)")]
        kind = suggestion_type(bottleneck)
        if kind == "parallelizable":
            evidence.append(Evidence("runs in parallel", "yes" if bottleneck.is_async else "no"))
            if bottleneck.is_async and bottleneck.autotune is not None:
                evidence.append(Evidence("autotune stat", str(bottleneck.autotune).lower()))
            if bottleneck.autotune:
                out.withhold("tf_data_autotune", f"{bottleneck.long_name} already lets tf.data "
                             "choose its parallelism (its autotune stat is true)")
        out.give(f"tf_data_bottleneck_{kind}", suggestion(bottleneck), *evidence)
    last = last_transformations(root, iterators)
    names = ", ".join(i.long_name for i in last)
    if not last:
        out.withhold("tf_data_prefetch", "no call of the pipeline's last transformation was "
                                         "captured, so whether it ends in prefetch is unknown")
    elif ends_in_prefetch(root, iterators):
        out.withhold("tf_data_prefetch", f"the pipeline already ends in prefetch ({names})")
    else:
        out.give("tf_data_prefetch", prefetch_suggestion(names),
                 Evidence("last transformation of the pipeline", names))
    return out


@dataclass(frozen=True)
class GetNextCalls:
    """The outermost IteratorGetNext(AsOptional) kernel or op events, in time order."""

    group_id: np.ndarray  # int64: the event forest's group, -1 for a call in no group
    start_ps: np.ndarray  # int64
    duration_ps: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.start_ps)


def get_next_calls(table: EventTable, forest: Forest) -> GetNextCalls:
    """Outermost IteratorGetNext(AsOptional) kernel or op events (one per call: the op event
    nests its kernel event), with their forest group."""
    def wanted(name: str) -> bool:
        return name in GET_NEXT_KERNELS or name.rsplit(":", 1)[-1] in GET_NEXT_OP_TYPES
    mask = table.event_mask(table.names_matching(wanted))
    events = np.flatnonzero(mask & ~under(mask, forest.nesting.parent))
    events = events[np.argsort(table.start_ps[events], kind="stable")]
    return GetNextCalls(forest.group_id[events].astype(np.int64),
                        table.start_ps[events].astype(np.int64),
                        table.durations_of(events).astype(np.int64))


@dataclass(frozen=True)
class GetNextLatency:
    """Time spent in IteratorGetNext in each step of a step database (the overview's steps:
    the same count and numbers), and the calls that fall in none of them."""

    step_num: np.ndarray  # int64, one per step of the step database, in its order
    latency_ps: np.ndarray  # int64, 0 for a step without a call
    num_calls: np.ndarray  # int64
    num_outside_calls: int  # calls in no step (outside every step, or in a dropped one)
    outside_latency_ps: int  # their summed duration

    @property
    def fast(self) -> np.ndarray:
        return self.latency_ps <= FAST_GET_NEXT_PS


def get_next_per_step(calls: GetNextCalls, steps: StepDb, by_group: bool) -> GetNextLatency:
    """IteratorGetNext time per step of `steps`, summed over the calls of the step.

    by_group (steps made from the event forest's groups, `StepDb.group_id` being the group):
    a call belongs to the step of its forest group, as the reference groups it. Otherwise
    (steps from jitted-function executions, whose ids are no forest groups): a call belongs
    to the step whose span [begin, begin + duration) holds its start. A call in no kept step
    (ungrouped, or in a first or last step dropped as partial) is counted apart.
    """
    n = len(steps)
    step_of = np.full(len(calls), -1, np.int64)
    if n and by_group:
        order = np.argsort(steps.group_id, kind="stable")
        sorted_ids = steps.group_id[order]
        at = np.clip(np.searchsorted(sorted_ids, calls.group_id), 0, n - 1)
        found = (calls.group_id >= 0) & (sorted_ids[at] == calls.group_id)
        step_of[found] = order[at[found]]
    elif n:
        at = np.searchsorted(steps.begin_ps, calls.start_ps, "right") - 1
        safe = np.maximum(at, 0)
        found = (at >= 0) & (calls.start_ps < steps.begin_ps[safe] + steps.duration_ps[safe])
        step_of[found] = at[found]
    counted = step_of >= 0
    latency = np.zeros(n, np.int64)
    np.add.at(latency, step_of[counted], calls.duration_ps[counted])
    num_calls = np.bincount(step_of[counted], minlength=n).astype(np.int64)
    return GetNextLatency(
        steps.step_num.astype(np.int64), latency, num_calls, int((~counted).sum()),
        int(calls.duration_ps[~counted].sum()))
