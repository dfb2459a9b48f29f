"""What a profile's tf.data pipelines look like, read from their iterator names alone.

Each iterator event is named after its place in the pipeline, root first:
`Iterator::Root::Prefetch::BatchV2::ParallelMapV2::Range` is a Range source, mapped in
parallel, batched, then prefetched. The names are known for every host without decoding it
again (`HostAnalysis.tf_data_names`, merged for ALL_HOSTS), so the overview can check its
input advice against them:

- the last transformation of each pipeline: the root's child (`Iterator::Root::X`), or a root
  that is itself a transformation (`Iterator::Prefetch`, older TensorFlow); it agrees with the
  tf.data view's `ends_in_prefetch` (tests/unit/analysis/test_input_advice.py);
- sequential maps: `Map` and `Interleave` not below a parallel interleave (whose
  cycle already runs its input functions side by side), and the parallel ones;
- file readers (TFRecord, TextLine, ...) and whether a parallel interleave reads them.

Names are normalised without input indices (`ForeverRepeat[10]` → `ForeverRepeat`), sorted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tb_profile_plugin.analysis.tf_data.pipelines import ITERATOR_PREFIX, kind_of, short_name

#: Sequential transformations with a parallel form (num_parallel_calls). FlatMap is left out:
#: its parallel form is another transformation (interleave), and Keras' data adapters use it
#: over cheap TensorSlice sources.
SEQUENTIAL_MAP_KINDS = frozenset({"Map", "Interleave"})
PARALLEL_MAP_KINDS = frozenset({"ParallelMap", "ParallelInterleave", "LegacyParallelInterleave",
                                "MapAndBatch", "ParseExample"})
#: Interleaves run several input functions at once: what is below them is read in parallel.
PARALLEL_INTERLEAVE_KINDS = frozenset({"ParallelInterleave", "LegacyParallelInterleave"})
FILE_READER_KINDS = frozenset({"TFRecord", "TextLine", "FixedLengthRecord", "ArrayRecord",
                               "SSTable", "RecordIO", "CSV", "Csv", "LMDB"})


@dataclass(frozen=True)
class PipelineShape:
    last_transformations: tuple[str, ...]  # normalised long names, one per distinct pipeline end
    sequential_maps: tuple[str, ...]
    parallel_maps: tuple[str, ...]
    serial_readers: tuple[str, ...]  # file readers not below a parallel interleave
    parallel_readers: tuple[str, ...]

    @property
    def without_prefetch(self) -> tuple[str, ...]:
        """Last transformations that are not a Prefetch."""
        return tuple(n for n in self.last_transformations if _kind(n) != "Prefetch")


def _kind(long_name: str) -> str:
    return kind_of(short_name(long_name))


def _normalised(name: str) -> tuple[str, list[str]]:
    parts = [short_name(part) for part in name.split("::")]
    return "::".join(parts), [kind_of(p) for p in parts[1:]]


def pipeline_shape(names: Iterable[str]) -> PipelineShape:
    """The shape of the pipelines whose iterator names are `names` (other names are skipped)."""
    last: set[str] = set()
    sequential: set[str] = set()
    parallel: set[str] = set()
    serial_readers: set[str] = set()
    parallel_readers: set[str] = set()
    for name in names:
        if not name.startswith(ITERATOR_PREFIX):
            continue
        normal, kinds = _normalised(name)
        if (len(kinds) == 2 and kinds[0] == "Root") or (len(kinds) == 1 and kinds[0] != "Root"):
            last.add(normal)
        kind, above = kinds[-1], kinds[:-1]
        in_parallel = any(k in PARALLEL_INTERLEAVE_KINDS for k in above)
        if kind in SEQUENTIAL_MAP_KINDS and not in_parallel:
            sequential.add(normal)
        elif kind in PARALLEL_MAP_KINDS:
            parallel.add(normal)
        if kind in FILE_READER_KINDS:
            (parallel_readers if in_parallel else serial_readers).add(normal)
    return PipelineShape(*(tuple(sorted(s)) for s in (
        last, sequential, parallel, serial_readers, parallel_readers)))


def tf_data_names(names: Iterable[str]) -> tuple[str, ...]:
    """The iterator names among an event table's names, sorted (`HostAnalysis.tf_data_names`)."""
    return tuple(sorted({n for n in names if n.startswith(ITERATOR_PREFIX)}))
