"""CUDA-graph replays on a stream grouped for pairing (producers/columns.py `_replays`): the
rows of each (module, buffer, correlation id) in start order, whichever way they are found
(runs kept as they are, or sorted), equal to a lexsort of the four columns."""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.xspace.producers.columns import _replays


def _by_lexsort(rows: np.ndarray, which: np.ndarray, hlo: np.ndarray, corr: np.ndarray,
                start: np.ndarray) -> list[list[int]]:
    order = np.lexsort((start[rows], corr[rows], hlo[rows], which[rows]))
    out: dict[tuple[int, int, int], list[int]] = {}
    for r in rows[order].tolist():
        out.setdefault((int(which[r]), int(hlo[r]), int(corr[r])), []).append(r)
    return sorted(out.values())


def _grouped(rows: np.ndarray, first: np.ndarray) -> list[list[int]]:
    bounds = np.r_[first, len(rows)]
    return sorted(rows[bounds[k]:bounds[k + 1]].tolist() for k in range(len(first)))


def test_replays_equal_a_lexsort_of_their_keys() -> None:
    rng = np.random.default_rng(5)
    kept = 0
    for trial in range(300):
        n = int(rng.integers(1, 400))
        replays = int(rng.integers(1, 30))
        replay = np.sort(rng.integers(0, replays, n))  # runs, as a stream writes them
        if trial % 3 == 1:  # interleaved replays (two streams' rows on one line)
            rng.shuffle(replay)
        which = (replay % 3).astype(np.int64)
        hlo = (replay % 2).astype(np.int64) + 5
        corr = replay.astype(np.int64) * 7919 + 2**40
        if trial % 5 == 2:  # one correlation id in two runs: not one run per replay
            corr[n // 2:] = corr[0]
        start = np.sort(rng.integers(0, 10**6, n))
        if trial % 4 == 3:  # events out of start order
            start = rng.permutation(start)
        rows = np.flatnonzero(rng.random(n) < 0.9)
        if not len(rows):
            continue
        got_rows, first = _replays(rows, which, hlo, corr, start)
        kept += got_rows is rows
        assert _grouped(got_rows, first) == _by_lexsort(rows, which, hlo, corr, start)
    assert 0 < kept < 300  # both ways were taken
