"""Zero-length events in the step breakdown (analysis/steps/instant_spans.py): exact spans."""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.steps.instant_spans import instant_spans
from tb_profile_plugin.analysis.steps.step_db import EventType, StepSpans, step_db_from_spans

HC = int(EventType.HOST_COMPUTE)
WAIT = int(EventType.HOST_WAIT_INPUT)


def _spans(rows: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """instant_spans of (type, group, start, end) rows, as sorted rows."""
    t, g, s, e = (np.array(col, np.int64) for col in zip(*rows, strict=True))
    out = instant_spans(t, g, s, e)
    return sorted(zip(*(col.tolist() for col in out), strict=True))


def test_an_instant_in_a_gap_lasts_until_the_next_end_of_its_type() -> None:
    # Group 0: dispatch [0, 10), instant at 20, await [90, 95): the gap 20..95 is host compute.
    rows = [(HC, 0, 0, 10), (HC, 0, 20, 20), (HC, 0, 90, 95)]
    assert _spans(rows) == [(HC, 0, 20, 95)]


def test_a_covered_instant_adds_nothing() -> None:
    rows = [(HC, 0, 0, 50), (HC, 0, 20, 20), (HC, 0, 90, 95)]
    assert _spans(rows) == []
    # An event that starts at the instant covers it; one that ends there does not.
    assert _spans([(HC, 0, 20, 30), (HC, 0, 20, 20), (HC, 0, 90, 95)]) == []
    assert _spans([(HC, 0, 10, 20), (HC, 0, 20, 20), (HC, 0, 90, 95)]) == [(HC, 0, 20, 95)]


def test_a_higher_type_ends_the_span_and_a_lower_one_does_not_cover() -> None:
    # Input wait starting at 60 ends the host-compute span; the open lower type does not count.
    rows = [(HC, 0, 20, 20), (WAIT, 0, 60, 70), (HC, 0, 80, 95)]
    assert _spans(rows) == [(HC, 0, 20, 60)]
    # A zero-length input wait inside host compute keeps input wait until input wait ends.
    rows = [(HC, 0, 0, 100), (WAIT, 0, 30, 30), (WAIT, 0, 40, 45)]
    assert _spans(rows) == [(WAIT, 0, 30, 45)]


def test_spans_stay_in_their_group_and_end_at_its_last_boundary() -> None:
    rows = [(HC, 0, 0, 10), (HC, 0, 20, 20), (HC, 0, 30, 30), (HC, 1, 50, 60), (HC, 1, 55, 55)]
    # Group 0 has no later host-compute end: the span stops at its last boundary (30); the
    # second instant (30) is not covered by the first's span either (spans are not events).
    assert _spans(rows) == [(HC, 0, 20, 30)]
    # Events outside every group and uncounted types are ignored.
    assert _spans([(HC, -1, 5, 5), (-1, 0, 5, 5), (HC, 0, 0, 1)]) == []


def test_step_breakdown_counts_the_instant_span_as_host_compute() -> None:
    # One CPU-only step [0, 100): dispatch [0, 10), instant at 20, await [90, 95).
    types = np.array([HC, HC, HC], np.int64)
    groups = np.zeros(3, np.int64)
    start = np.array([0, 20, 90], np.int64)
    end = np.array([10, 20, 95], np.int64)
    spans = StepSpans(np.array([0]), np.array([100]), np.array([True]), np.array([7]))
    db = step_db_from_spans(spans, types, groups, start, end, has_device=False)
    assert db.type_ps[0, EventType.HOST_COMPUTE] == 10 + 75
    assert db.type_ps[0, EventType.UNKNOWN_TIME] == 10 + 5
