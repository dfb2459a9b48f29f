"""The compiled step sweep (analysis/steps/_step_sweep.c) against the numpy reference.

Where it is built, the step database's per-type unions (instant spans included) and
`union_per_group` / `union_sorted` come from one compiled pass; TB_PROFILE_PURE_STEPS=1 or
`pure=True` keeps numpy. Both must give the same figures: random steps with instants, ties,
nested events, invalid groups and every group dtype, and every committed real capture."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.steps import step_db
from tb_profile_plugin.analysis.steps.compiled_sweep import sweep
from tb_profile_plugin.analysis.steps.step_db import (
    NUM_TYPES,
    PURE_STEPS_ENV,
    StepDb,
    StepSpans,
    build_step_db,
    classify,
    compiled_sweep,
    step_db_from_spans,
    union_per_group,
    union_sorted,
)
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR, xplane_files

BUILT = sweep() is not None
needs_sweep = pytest.mark.skipif(not BUILT, reason="the compiled sweep is not built")


def _events(rng: np.random.Generator, n: int, groups: int,
            group_dtype: type[np.signedinteger]) -> tuple[np.ndarray, ...]:
    """Random events on a coarse clock (many equal starts and ends), a third zero-length."""
    types = rng.integers(-2, NUM_TYPES, n).astype(np.int8)
    group = rng.integers(-1, groups, n).astype(group_dtype)
    start = rng.integers(0, 60, n).astype(np.int64) * 10
    length = np.where(rng.random(n) < 0.3, 0, rng.integers(1, 25, n) * 10)
    return types, group, start, start + length


def _parents(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random forest of parents (each an earlier event or none): only work is saved."""
    parent = np.array([int(rng.integers(-1, i)) if i else -1 for i in range(n)], np.int32)
    return parent


def _spans(rng: np.random.Generator, num_groups: int) -> StepSpans:
    begin = rng.integers(0, 400, num_groups).astype(np.int64)
    return StepSpans(begin, begin + rng.integers(1, 500, num_groups),
                     rng.random(num_groups) < 0.85, np.arange(num_groups, dtype=np.int64))


def _same(a: StepDb, b: StepDb) -> None:
    for field in ("step_num", "group_id", "begin_ps", "duration_ps", "type_ps"):
        left, right = getattr(a, field), getattr(b, field)
        assert left.dtype == right.dtype, field
        assert left.tolist() == right.tolist(), field
    assert (a.has_device, a.num_dropped, a.num_partial_dropped) == (
        b.has_device, b.num_dropped, b.num_partial_dropped)


@needs_sweep
@pytest.mark.parametrize("group_dtype", [np.int8, np.int16, np.int32, np.int64])
def test_random_steps_match_numpy(group_dtype: type[np.signedinteger]) -> None:
    rng = np.random.default_rng(41)
    for _ in range(150):
        n = int(rng.integers(0, 250))
        num_groups = int(rng.integers(1, 10))
        types, group, start, end = _events(rng, n, num_groups, group_dtype)
        spans = _spans(rng, num_groups)
        parent = _parents(rng, n) if rng.random() < 0.5 else None
        has_device, drop_partial, keep_empty = (bool(x) for x in rng.random(3) < 0.5)
        numpy_db, compiled = (
            step_db_from_spans(spans, types, group, start, end, has_device, drop_partial,
                               parent, keep_empty, pure=pure) for pure in (True, False))
        _same(numpy_db, compiled)


@needs_sweep
def test_instants_alone_and_at_group_edges_match_numpy() -> None:
    """Groups of only instants, instants at a step's first and last boundary, instants that a
    longer event of their type starts at, and higher types starting with them."""
    types = np.array([5, 5, 7, 5, 3, 3, 3, 10, 10, 1], np.int8)
    group = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2], np.int32)
    start = np.array([0, 10, 10, 30, 5, 5, 9, 100, 100, 100], np.int64)
    end = np.array([0, 40, 10, 30, 5, 8, 9, 100, 150, 100], np.int64)
    spans = StepSpans(np.array([0, 0, 90], np.int64), np.array([50, 20, 200], np.int64),
                      np.ones(3, bool), np.arange(3, dtype=np.int64))
    numpy_db = step_db_from_spans(spans, types, group, start, end, True, keep_empty=True,
                                  pure=True)
    compiled = step_db_from_spans(spans, types, group, start, end, True, keep_empty=True,
                                  pure=False)
    _same(numpy_db, compiled)
    assert int(numpy_db.type_ps.sum()) == int(numpy_db.duration_ps.sum())


def test_numpy_parts_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The numpy reference a few whole groups at a time equals it in one part (with the sweep
    built, the default path no longer goes through the parts)."""
    rng = np.random.default_rng(42)
    for _ in range(100):
        n = int(rng.integers(1, 250))
        num_groups = int(rng.integers(1, 10))
        types, group, start, end = _events(rng, n, num_groups, np.int32)
        spans = _spans(rng, num_groups)
        whole = step_db_from_spans(spans, types, group, start, end, True, pure=True)
        monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", int(rng.integers(1, 20)))
        parts = step_db_from_spans(spans, types, group, start, end, True, pure=True)
        monkeypatch.undo()
        _same(whole, parts)


@needs_sweep
def test_unions_per_group_match_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """`union_per_group` and `union_sorted` (the latter also on rows out of order, where the
    numpy running maximum gives some sum: the compiled one gives the same)."""
    rng = np.random.default_rng(43)
    for _ in range(300):
        n = int(rng.integers(0, 200))
        num_groups = int(rng.integers(1, 8))
        dtype = rng.choice(np.array([np.int8, np.int16, np.int32, np.int64, np.uint16]))
        group = rng.integers(0, num_groups, n).astype(dtype)
        start = rng.integers(0, 100, n).astype(np.int64)
        end = start + rng.integers(-3, 30, n) * (rng.random(n) < 0.8)
        results = []
        for pure in ("1", "0"):
            monkeypatch.setenv(PURE_STEPS_ENV, pure)
            results.append((union_per_group(group, start, end, num_groups).tolist(),
                            union_sorted(group, start, end, num_groups).tolist()))
        assert results[0] == results[1]


def test_the_environment_picks_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PURE_STEPS_ENV, "1")
    assert not compiled_sweep()
    assert not compiled_sweep(pure=False) or BUILT
    monkeypatch.delenv(PURE_STEPS_ENV)
    assert compiled_sweep() == BUILT
    assert not compiled_sweep(pure=True)


@needs_sweep
def test_the_sweep_refuses_bad_input() -> None:
    """Types, groups or rows out of range are errors, not wrong figures."""
    columns = (np.array([3, 20], np.int8), np.array([0, 0], np.int32),
               np.array([0, 5], np.int64), np.array([4, 9], np.int64))
    spans = (np.zeros(1, np.int64), np.full(1, 10, np.int64), np.ones(1, bool))
    out = np.zeros(NUM_TYPES + 1, np.int64)
    with pytest.raises(ValueError, match="type"):
        sweep().type_unions(*columns, np.array([0, 1]), *spans, out)
    with pytest.raises(ValueError, match="row"):
        sweep().type_unions(columns[0] % 4, *columns[1:], np.array([1, 2]),
                                        *spans, out)
    with pytest.raises(ValueError, match="group"):
        sweep().group_unions(np.array([0, 3], np.int32), columns[2], columns[3],
                                         None, np.zeros(2, np.int64))


@needs_sweep
@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(DATA_DIR)))
def test_the_compiled_sweep_equals_numpy_on_real_captures(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every committed real capture (TensorFlow, JAX on CPU, AMD and NVIDIA GPUs, PyTorch):
    the same step database either way, whole host and per device core."""
    forest = profile_forest(decode_xspace(path.read_bytes()))
    classified = classify(forest)
    databases = []
    for pure in ("1", "0"):
        monkeypatch.setenv(PURE_STEPS_ENV, pure)
        databases.append([build_step_db(forest, classified),
                          build_step_db(forest, classified, host_ranges=True)])
    for numpy_db, compiled in zip(*databases, strict=True):
        _same(numpy_db, compiled)


@needs_sweep
def test_counted_events_match_numpy() -> None:
    """The events the database counts: the compiled two passes and the numpy chunks, with and
    without the nesting, for every parent dtype."""
    rng = np.random.default_rng(44)
    for _ in range(200):
        n = int(rng.integers(0, 200))
        types, group, _, _ = _events(rng, n, int(rng.integers(1, 6)), np.int32)
        parent = _parents(rng, n).astype(rng.choice(np.array([np.int32, np.int64])))
        for up in (parent, None):
            numpy_rows = step_db._counted_events(types, group, up, pure=True)
            compiled = step_db._counted_events(types, group, up, pure=False)
            assert compiled.dtype == np.int64
            assert compiled.tolist() == numpy_rows.tolist()
    with pytest.raises(ValueError, match="parent"):
        step_db._counted_events(np.zeros(2, np.int8), np.zeros(2, np.int32),
                                np.array([-1, 2], np.int32), pure=False)


@needs_sweep
def test_device_markers_match_numpy() -> None:
    """Each group's longest per-core span: the compiled (group, plane) table and the numpy
    keys, with ties of length and begin across planes and events on host planes."""
    rng = np.random.default_rng(45)
    for _ in range(200):
        n = int(rng.integers(0, 200))
        num_groups = int(rng.integers(1, 8))
        types, group, start, end = _events(rng, n, num_groups, np.int32)
        plane = rng.integers(0, int(rng.integers(1, 6)), n).astype(np.int8)
        on_device = rng.random(n) < 0.7
        spans = [step_db._device_markers(types, on_device, group, plane, start, end,
                                         num_groups, pure=pure) for pure in (True, False)]
        assert [c.tolist() for c in spans[0]] == [c.tolist() for c in spans[1]]
