"""The trace's derived Steps track draws each step as the overview counts it (issue 29 item 4).

On jax_nvidia_train the Steps bars were the device-busy part of each step (~4 ms) where the
overview's step table says ~38.9 ms per step. Now every Steps bar is one row of the overview's
step table: same number, same duration (ms), and its start is the step's begin on the trace's
clock; the device-busy part is the separate "Steps: device busy" track, inside its step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.hosts.clock import time_zero_ps
from tb_profile_plugin.analysis.hosts.host_analysis import analyze
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace.derived import STEP_BUSY, STEPS
from tb_profile_plugin.trace.window import trace_set
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import DATA_DIR

PS_PER_MS = 10**9


def _bars(index, process_name: str, track: str) -> list[tuple[str, int, int]]:  # noqa: ANN001
    process = next(p for p in index.processes if p.name == process_name)
    thread = next(t for t in process.threads if t.name == track)
    lo, hi = index.track_bounds[thread.track], index.track_bounds[thread.track + 1]
    order = lo + np.argsort(index.start_ps[lo:hi], kind="stable")
    return [(index.names[int(index.name_id[i])], int(index.start_ps[i]), int(index.end_ps[i]))
            for i in order]


@pytest.mark.parametrize("fixture", ["jax_nvidia_train", "jax_nvidia_device_bound",
                                     "jax_gpu_conv"])
def test_every_step_bar_is_the_overviews_step(fixture: str) -> None:
    path = next((DATA_DIR / fixture).glob("plugins/profile/*/*.xplane.pb"))
    profile = decode_xspace(path.read_bytes())
    host = path.name.removesuffix(".xplane.pb")
    overview = registry.VIEWS["overview_page"].build(
        registry.ViewRequest("run", host, {host: profile}, {}))
    table = {row["step_num"]: row["step_time_ms"] for row in overview["steps"]}
    assert table, fixture
    trace = trace_set({host: profile})
    h = trace.hosts[0]
    index = h.index
    analysis = analyze(profile)
    gpus = [p.name for p in index.processes if p.name.startswith("/device:GPU:")]
    assert gpus
    for gpu in gpus:
        bars = _bars(index, gpu, STEPS)
        # The overview's step table (per GPU, its own steps: the overview shows the host's,
        # which on one GPU are the same).
        steps = dict(analysis.core_steps).get(gpu, analysis.steps)
        assert [name for name, _, _ in bars] == [str(n) for n in steps.step_num.tolist()]
        shown_begin = (steps.begin_ps - time_zero_ps(profile)).tolist()
        for (name, start, end), begin in zip(bars, shown_begin, strict=True):
            assert start + h.shift_ps == begin, (gpu, name)
            if len(gpus) == 1 or steps is analysis.steps:
                assert (end - start) / PS_PER_MS == table[int(name)], (gpu, name)
        # The device's busy part of each step lies inside some step bar.
        for name, start, end in _bars(index, gpu, STEP_BUSY):
            assert any(s <= start and end <= e for _, s, e in bars) or name not in {
                n for n, _, _ in bars}, (gpu, name)


def test_jax_nvidia_train_step_bars_are_the_overviews_38_9_ms() -> None:
    """The issue's figures: the overview's ~38.9 ms steps, not ~4 ms device-busy blocks."""
    path = next(Path(DATA_DIR / "jax_nvidia_train").glob("plugins/profile/*/*.xplane.pb"))
    profile = decode_xspace(path.read_bytes())
    host = path.name.removesuffix(".xplane.pb")
    overview = registry.VIEWS["overview_page"].build(
        registry.ViewRequest("run", host, {host: profile}, {}))
    index = trace_set({host: profile}).hosts[0].index
    bars = _bars(index, "/device:GPU:0", STEPS)
    durations = [(e - s) / PS_PER_MS for _, s, e in bars]
    assert durations == [row["step_time_ms"] for row in overview["steps"]]
    busy = [(e - s) / PS_PER_MS for _, s, e in _bars(index, "/device:GPU:0", STEP_BUSY)]
    assert np.mean(durations) > 5 * np.mean(busy)
