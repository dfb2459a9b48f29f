"""The tf.data performance guide's manual checks, automated, and its fixes in plain words.

The guide's workflow ("Analyze tf.data performance with the TF Profiler"):

1. Is the program input-bound? Look at `IteratorGetNext` (or `IteratorGetNextAsOptional`)
   per step: a fast input pipeline answers in ≤ 50 µs (`FAST_GET_NEXT_PS`).
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

from tb_profile_plugin.analysis.events import EventTable
from tb_profile_plugin.analysis.forest import Forest
from tb_profile_plugin.analysis.nesting import under
from tb_profile_plugin.analysis.tf_data_pipelines import IteratorInfo, kind_of

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
    if kind_type == "parallelizable":
        return (f"{name} already runs in parallel but is still the slowest step: let tf.data "
                "choose the parallelism (num_parallel_calls=tf.data.AUTOTUNE), make its "
                "function cheaper (batch before map to vectorise it), or cache() its output "
                "if it is the same every epoch.")
    if kind_type == "sequential":
        return (f"{name} handles one element at a time and cannot run in parallel itself. "
                "Parallelise around it (outer parallelism): shard() the input and interleave "
                "the shards with num_parallel_calls=tf.data.AUTOTUNE; cache() the data before "
                "it if it is the same every epoch.")
    if kind_type == "prefetch":
        return (f"{name} waited with an empty buffer: what feeds it is slower than the "
                "consumer. The producer's work was not captured inside this call; look at the "
                "iterators before it in a longer capture and parallelise the slowest one.")
    return f"{name} is the slowest step; see {GUIDE} for how to speed it up."


PREFETCH_SUGGESTION = ("The pipeline does not end in prefetch: add "
                       ".prefetch(tf.data.AUTOTUNE) as its last transformation so that the next "
                       "batch is prepared while the current step runs.")


def ends_in_prefetch(root: IteratorInfo, iterators: dict[int, IteratorInfo]) -> bool:
    """Whether the last transformation (the root, or the root's child below `Root`) is a
    Prefetch."""
    if kind_of(root.name) != "Root":
        return kind_of(root.name) == "Prefetch"
    last = [i for i in iterators.values() if i.parent_id == root.id]
    return bool(last) and all(kind_of(i.name) == "Prefetch" for i in last)


@dataclass(frozen=True)
class GetNextLatency:
    """Time spent in IteratorGetNext per step (or per call, where no step contains it)."""

    step_num: np.ndarray  # int64, -1 for a call outside every step
    latency_ps: np.ndarray  # int64
    num_calls: np.ndarray  # int64

    @property
    def fast(self) -> np.ndarray:
        return self.latency_ps <= FAST_GET_NEXT_PS


def get_next_latency(table: EventTable, forest: Forest) -> GetNextLatency:
    """Outermost IteratorGetNext(AsOptional) kernel or op events, summed per step."""
    def wanted(name: str) -> bool:
        return name in GET_NEXT_KERNELS or name.rsplit(":", 1)[-1] in GET_NEXT_OP_TYPES
    mask = table.event_mask(table.names_matching(wanted))
    events = np.flatnonzero(mask & ~under(mask, forest.nesting.parent))
    group = forest.group_id[events]
    duration = table.duration_ps[events]
    grouped = group >= 0
    groups, inverse = np.unique(group[grouped], return_inverse=True)
    inverse = inverse.ravel()
    per_step = np.zeros(len(groups), np.int64)
    np.add.at(per_step, inverse, duration[grouped])
    calls = np.bincount(inverse, minlength=len(groups)).astype(np.int64)
    loose = events[~grouped]
    order = np.argsort(table.start_ps[loose], kind="stable")
    return GetNextLatency(
        np.concatenate([forest.step_num[groups], np.full(len(loose), -1, np.int64)]),
        np.concatenate([per_step, duration[~grouped][order]]),
        np.concatenate([calls, np.ones(len(loose), np.int64)]))
