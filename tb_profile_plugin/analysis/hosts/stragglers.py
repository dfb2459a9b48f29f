"""Stragglers: per common step, the slowest host, how far it lags, and which category explains it.

For step i of H hosts with step times T[h, i] and category times C[h, i, c]:

    slowest       s = argmax_h T[h, i]                   (ties: the first host)
    lag           T[s, i] - median_h T[h, i]             (the median host: the middle of the
                                                          sorted times, the mean of the two
                                                          middle ones for an even H)
    category      argmax_c (C[s, i, c] - median_h C[h, i, c])   the category in which the
                                                          slowest host spent the most time
                                                          beyond the median host
    significant   H >= 2 and lag >= STRAGGLER_LAG_FRACTION * median step time

One numpy pass over all steps; nothing loops per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: A step's slowest host is a straggler when it lags the median host by this share of its time.
STRAGGLER_LAG_FRACTION = 0.10


@dataclass(frozen=True)
class Stragglers:
    """Per step (arrays of length steps): see the module docstring."""

    slowest: np.ndarray  # int64 host index
    step_ps: np.ndarray  # float64, the slowest host's step time
    median_ps: np.ndarray  # float64
    lag_ps: np.ndarray  # float64
    category: np.ndarray  # int64 category index
    category_lag_ps: np.ndarray  # float64
    significant: np.ndarray  # bool


def find_stragglers(step_ps: np.ndarray, category_ps: np.ndarray) -> Stragglers:
    """`step_ps[h, i]`: host h's time in step i; `category_ps[h, i, c]`: its category c time."""
    num_hosts, num_steps = step_ps.shape
    columns = np.arange(num_steps)
    times = step_ps.astype(np.float64)
    slowest = np.argmax(times, axis=0) if num_hosts else np.zeros(num_steps, np.int64)
    median = np.median(times, axis=0) if num_hosts else np.zeros(num_steps)
    lag = times[slowest, columns] - median if num_hosts else np.zeros(num_steps)
    cats = category_ps.astype(np.float64)
    if num_hosts and cats.shape[2]:
        excess = cats[slowest, columns, :] - np.median(cats, axis=0)
        category = np.argmax(excess, axis=1)
        category_lag = excess[columns, category]
    else:
        category = np.zeros(num_steps, np.int64)
        category_lag = np.zeros(num_steps)
    significant = (num_hosts >= 2) & (lag > 0) & (lag >= STRAGGLER_LAG_FRACTION * median)
    return Stragglers(slowest.astype(np.int64), times[slowest, columns] if num_hosts
                      else np.zeros(num_steps), median, lag, category.astype(np.int64),
                      category_lag, significant)
