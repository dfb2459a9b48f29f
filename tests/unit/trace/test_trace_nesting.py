"""The compiled nesting order (analysis/events/_nesting.c) against the numpy reference
(trace/depth.py): the same order and depths on random tracks (properly nested, overlapping
without nesting, ties, zero-length events, starts out of order), and the same index and
windows when the index is built either way."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.trace import depth as depth_module
from tb_profile_plugin.trace.depth import compiled_nesting_available, depth_order, nesting_order
from tb_profile_plugin.trace.index import build_index
from tests.unit.trace.test_trace_window import doc, random_profile

pytestmark = pytest.mark.skipif(not compiled_nesting_available(),
                                reason="analysis/events/_nesting.c is not built (no C compiler)")


def _track(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    shape = seed % 5
    if shape == 0:  # overlapping at random (the Python tracer's worst)
        start, length = rng.integers(0, 60, n), rng.integers(0, 25, n)
    elif shape == 1:  # many ties and zero-length events
        start, length = rng.integers(0, 8, n), rng.integers(0, 3, n)
    elif shape == 2:  # nested: children inside their parent, some ending with it
        start, length = _nested(rng, n)
    elif shape == 3:  # sparse
        start, length = rng.integers(0, 10_000, n), rng.integers(0, 200, n)
    else:  # one long event over many short ones, times near 2^57 ps
        start = 2**57 + rng.integers(0, 1_000, n)
        length = rng.integers(0, 30, n)
        length[0] = 2_000
    start = start.astype(np.int64)
    if seed % 3 == 0:  # in file order (the path without a sort)
        length = length[np.lexsort((-length, start))]
        start = np.sort(start)
    return start, start + length.astype(np.int64)


def _nested(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    starts, lengths = [], []
    at = 0
    while len(starts) < n:
        outer = int(rng.integers(1, 50))
        starts.append(at)
        lengths.append(outer)
        for _ in range(int(rng.integers(0, 6))):
            inner = int(rng.integers(0, outer + 1))
            first = at + int(rng.integers(0, outer - inner + 1))
            starts.append(first)
            lengths.append(inner)
        at += outer + int(rng.integers(0, 3))
    return np.array(starts[:n]), np.array(lengths[:n])


@pytest.mark.parametrize("seed", range(200))
def test_compiled_order_equals_the_numpy_reference(seed: int) -> None:
    start, end = _track(seed)
    expected_order, expected_depth = depth_order(start, end, pure=True)
    order, depth = depth_order(start, end, pure=False)
    assert np.array_equal(order, expected_order)
    assert np.array_equal(depth, expected_depth)
    assert order.dtype == np.int64 and depth.dtype == np.int32
    _, counts = nesting_order(start, end, pure=False)
    assert counts.tolist() == np.bincount(expected_depth).tolist()


def test_compiled_order_of_a_deep_chain_and_of_nothing() -> None:
    """Nested 5,000 deep (the stack grows to n) and an empty track."""
    start = np.arange(5_000, dtype=np.int64)
    end = 20_000 - start
    order, depth = depth_order(start, end, pure=False)
    assert np.array_equal(order, np.arange(5_000)) and np.array_equal(depth, np.arange(5_000))
    order, depth = depth_order(start[:0], end[:0], pure=False)
    assert len(order) == len(depth) == 0


def test_compiled_order_takes_non_contiguous_columns() -> None:
    start, end = _track(7)
    both = np.stack([start, end], axis=1)  # strided views into one array
    order, depth = depth_order(both[:, 0], both[:, 1], pure=False)
    expected_order, expected_depth = depth_order(start, end, pure=True)
    assert np.array_equal(order, expected_order) and np.array_equal(depth, expected_depth)


@pytest.mark.parametrize("seed", range(6))
def test_index_and_windows_are_the_same_built_either_way(seed: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    profile = random_profile(seed)
    compiled = build_index(profile)
    compiled_doc = doc(profile, resolution="0")
    monkeypatch.setenv(depth_module.PURE_NESTING_ENV, "1")
    pure = build_index(random_profile(seed))
    pure_doc = doc(random_profile(seed), resolution="0")
    for name in ("start_ps", "end_ps", "name_id", "source_row", "segment_bounds",
                 "segment_depth", "segment_disjoint", "block_max_ps"):
        assert np.array_equal(getattr(compiled, name), getattr(pure, name)), name
    assert compiled.tracks == pure.tracks
    assert compiled_doc == pure_doc


@pytest.mark.parametrize("seed", range(30))
def test_event_names_by_lookup_equal_the_metadata_rows(seed: int) -> None:
    """`index._line_name_ids` (one gather through a table indexed by metadata id) names every
    event as `EventMetadataTable.rows_of` does: ids the plane does not define, negative ids,
    ids past the table, a repeated id (its first row)."""
    from types import SimpleNamespace

    from tb_profile_plugin.trace.index import _line_name_ids, _name_lookup
    from tb_profile_plugin.xspace.model import EventMetadataTable

    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(200, int(rng.integers(1, 60)), replace=seed % 3 != 0)).astype(np.int64)
    local = np.concatenate([rng.permutation(len(ids)), [-1]]).astype(np.int32)
    table = SimpleNamespace(ids=ids)
    table.rows_of = lambda m: EventMetadataTable.rows_of(table, m)  # type: ignore[arg-type]
    low = -3 if seed % 2 else 0
    metadata_id = rng.integers(low, int(ids[-1]) + (5 if seed % 4 else 1), 500).astype(np.int64)
    lookup = _name_lookup(table, local, len(metadata_id))  # type: ignore[arg-type]
    assert lookup is not None
    expected = local[EventMetadataTable.rows_of(table, metadata_id)]  # type: ignore[arg-type]
    got = _line_name_ids(metadata_id, table, local, lookup)  # type: ignore[arg-type]
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.parametrize("seed", range(40))
def test_columns_placed_by_the_compiled_pass_equal_the_gathered_ones(seed: int) -> None:
    """`nesting_order_into` writes start, end and names in (depth, start) order in the pass
    that orders them: the same as gathering each column by the order; it declines (None,
    nothing written) when the events are not in start order."""
    from tb_profile_plugin.trace.depth import nesting_order_into

    start, end = _track(seed)
    names = np.random.default_rng(seed).integers(0, 50, len(start)).astype(np.int32)
    outputs = (np.full(len(start), -7, np.int64), np.full(len(start), -7, np.int64),
               np.full(len(start), -7, np.int32))
    placed = nesting_order_into(start, end, names, *outputs)
    order, counts = nesting_order(start, end, pure=True)
    in_order = bool(np.all((np.diff(start) > 0) | ((np.diff(start) == 0)
                                                    & (np.diff(end) <= 0))))
    if not in_order:
        assert placed is None and all(np.all(o == -7) for o in outputs)
        return
    assert placed is not None
    assert np.array_equal(placed[0], order) and np.array_equal(placed[1], counts)
    for out, column in zip(outputs, (start, end, names), strict=True):
        assert np.array_equal(out, column[order])
