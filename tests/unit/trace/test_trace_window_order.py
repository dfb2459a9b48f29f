"""A window's events in the order the document lists them, (track, start, id)
(`window.by_track_and_start`), as numpy's lexsort gives it: ties of start across depths and
within a depth, tracks of one event, and starts far enough apart that the shifted key could
overflow (then the lexsort itself)."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.trace.window import by_track_and_start


def _events(rng: np.random.Generator, spread: int) -> tuple[np.ndarray, np.ndarray]:
    """Starts and tracks of events in (segment, id) order: per track a few depths, each
    sorted by start, with repeated starts."""
    starts, tracks = [], []
    for track in range(int(rng.integers(1, 12))):
        for _depth in range(int(rng.integers(1, 5))):
            n = int(rng.integers(1, 50))
            starts.append(np.sort(rng.integers(0, 40, n) * spread - spread // 3))
            tracks.append(np.full(n, track))
    return np.concatenate(starts).astype(np.int64), np.concatenate(tracks).astype(np.int64)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("spread", [1, 10**6, 2**56 // 40])
def test_order_is_the_lexsort(seed: int, spread: int) -> None:
    start, track = _events(np.random.default_rng(seed), spread)
    ids = np.arange(len(start))
    expected = np.lexsort((ids, start, track))
    assert by_track_and_start(start, track).tolist() == expected.tolist()


def test_no_events() -> None:
    assert by_track_and_start(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []


def test_starts_too_far_apart_for_a_shifted_key() -> None:
    start = np.array([2**62 + 9, -(2**61), 2**62, 2**62, 5, -3], np.int64)
    track = np.array([0, 1, 1, 1, 2, 2], np.int64)
    start[1:4] = np.sort(start[1:4])
    start[4:] = np.sort(start[4:])
    expected = np.lexsort((np.arange(len(start)), start, track))
    assert by_track_and_start(start, track).tolist() == expected.tolist()
