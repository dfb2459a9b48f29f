"""The nesting's parents are int32 (4 bytes per event less, held for the analysis' life): the
compiled walks read and write int32 parents exactly as int64 ones, and refuse what they
refuse there."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.nesting import compiled_pass, compute_nesting, under
from tb_profile_plugin.trace.depth import compiled_nesting_available

pytestmark = pytest.mark.skipif(not compiled_nesting_available(),
                                reason="the compiled pass is not built")


def _random_forest(rng: np.random.Generator, n: int) -> np.ndarray:
    """Parents of `n` events in a random order (int64), -1 at roots, no cycles."""
    perm = rng.permutation(n)
    tree = np.array([-1 if i == 0 or rng.random() < 0.2 else int(rng.integers(0, i))
                     for i in range(n)], np.int64)
    parent = np.full(n, -1, np.int64)
    parent[perm] = np.where(tree >= 0, perm[np.maximum(tree, 0)], -1)
    return parent


def test_compute_nesting_keeps_int32_parents_equal_to_the_numpy_reference() -> None:
    rng = np.random.default_rng(21)
    for _ in range(200):
        n = int(rng.integers(1, 80))
        start = np.sort(rng.integers(0, 50, n)).astype(np.int64)
        end = start + rng.integers(0, 30, n)
        bounds = np.array([0, n // 3, n])
        compiled = compute_nesting(start, end, bounds, pure=False)
        reference = compute_nesting(start, end, bounds, pure=True)
        assert compiled.parent.dtype == np.int32 and reference.parent.dtype == np.int32
        assert compiled.parent.tolist() == reference.parent.tolist()
        assert compiled.depth.tolist() == reference.depth.tolist()


def test_walks_over_int32_parents_equal_those_over_int64() -> None:
    compiled = compiled_pass(False)
    rng = np.random.default_rng(22)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        wide = _random_forest(rng, n)
        narrow = wide.astype(np.int32)
        mask = rng.random(n) < 0.3
        assert np.array_equal(under(mask, narrow, pure=False), under(mask, wide, pure=False))
        assert np.array_equal(under(mask, narrow, pure=False), under(mask, narrow, pure=True))
        group = rng.integers(0, 20, n).astype(np.int64)
        by_wide, by_narrow = group.copy(), group.copy()
        changed = compiled.lower_to_ancestors(by_wide, wide)
        assert compiled.lower_to_ancestors(by_narrow, narrow) == changed
        assert by_narrow.tolist() == by_wide.tolist()


def test_int32_parents_out_of_range_or_in_a_cycle_are_refused() -> None:
    compiled = compiled_pass(False)
    with pytest.raises(ValueError, match="cycle"):
        under(np.ones(3, bool), np.array([1, 2, 0], np.int32), pure=False)
    with pytest.raises(ValueError, match="out of range"):
        under(np.ones(2, bool), np.array([-1, 7], np.int32), pure=False)
    with pytest.raises(ValueError, match="cycle"):
        compiled.lower_to_ancestors(np.zeros(2, np.int64), np.array([1, 0], np.int32))
    with pytest.raises(ValueError, match="must be"):  # neither int32[n] nor int64[n]
        compiled.lower_to_ancestors(np.zeros(4, np.int64), np.array([-1, 0], np.int32))


def test_depth_parent_refuses_positions_an_int32_parent_cannot_hold() -> None:
    compiled = compiled_pass(False)
    start = np.array([0, 1], np.int64)
    end = np.array([5, 2], np.int64)
    depth, parent = np.empty(2, np.int32), np.empty(2, np.int32)
    compiled.depth_parent(start, end, depth, parent, 10)
    assert parent.tolist() == [-1, 10] and depth.tolist() == [0, 1]
    with pytest.raises(ValueError, match="int32 parents"):
        compiled.depth_parent(start, end, depth, parent, 2**31 - 2)
