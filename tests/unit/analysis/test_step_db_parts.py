"""The step database works a few whole groups at a time where a host has millions of counted
events (`column_sizes.CHUNK_EVENTS`): its instant spans and unions then equal those of one pass
over every event. Random steps with instants, nested events of every type and groups spread
over lines, with parts of a few events, against the same inputs in one part."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.analysis.steps import step_db
from tb_profile_plugin.analysis.steps.instant_spans import instant_spans
from tb_profile_plugin.analysis.steps.step_db import NUM_TYPES, StepSpans, step_db_from_spans


def _events(rng: np.random.Generator, n: int, groups: int) -> tuple[np.ndarray, ...]:
    types = rng.integers(-1, NUM_TYPES, n).astype(np.int8)
    group = rng.integers(-1, groups, n).astype(np.int32)
    start = rng.integers(0, 1000, n).astype(np.int64)
    length = np.where(rng.random(n) < 0.3, 0, rng.integers(1, 200, n))
    return types, group, start, start + length


def _rows(spans: tuple[np.ndarray, ...]) -> list[tuple[int, ...]]:
    return sorted(zip(*(np.asarray(c).tolist() for c in spans), strict=True))


def test_instant_spans_in_parts_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(31)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        types, group, start, end = _events(rng, n, int(rng.integers(1, 12)))
        counted = (types >= 0) & (group >= 0)
        t, g, s, e = types[counted], group[counted], start[counted], end[counted]
        whole = instant_spans(t, g, s, e)
        monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", int(rng.integers(1, 20)))
        parts = step_db._instant_spans_in_parts(t, g, s, e)
        monkeypatch.undo()
        assert _rows(parts) == _rows(whole)


def test_the_step_database_in_parts_equals_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(32)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        num_groups = int(rng.integers(1, 12))
        types, group, start, end = _events(rng, n, num_groups)
        begin = rng.integers(0, 500, num_groups).astype(np.int64)
        spans = StepSpans(begin, begin + rng.integers(1, 600, num_groups),
                          rng.random(num_groups) < 0.9, np.arange(num_groups, dtype=np.int64))
        has_device = bool(rng.random() < 0.5)
        whole = step_db_from_spans(spans, types, group, start, end, has_device)
        monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", int(rng.integers(1, 20)))
        parts = step_db_from_spans(spans, types, group, start, end, has_device)
        monkeypatch.undo()
        assert parts.group_id.tolist() == whole.group_id.tolist()
        assert parts.type_ps.tolist() == whole.type_ps.tolist()
        assert parts.duration_ps.tolist() == whole.duration_ps.tolist()


def test_unions_of_many_groups_over_a_long_capture_do_not_wrap() -> None:
    """Groups laid end to end by their span: 100 groups over 2^57 ps pass 2^63 (10M events
    "longer": 208,899 steps over 193 s wrapped from the 47,919th step on, so later steps'
    host compute came out longer than the steps). Each group's union is its own."""
    rng = np.random.default_rng(33)
    num_groups = 100
    group = np.repeat(np.arange(num_groups), 5).astype(np.int32)
    base = np.where(group == num_groups - 1, 2**57, 0) + group.astype(np.int64) * 1000
    start = base + rng.integers(0, 500, len(group))
    end = start + rng.integers(1, 300, len(group))
    order = np.lexsort((start, group))
    got = step_db.union_sorted(group[order], start[order], end[order], num_groups)
    for k in range(num_groups):
        covered: set[int] = set()
        for s, e in zip(start[group == k].tolist(), end[group == k].tolist(), strict=True):
            covered.update(range(s - int(base[group == k][0]), e - int(base[group == k][0])))
        assert got[k] == len(covered)
