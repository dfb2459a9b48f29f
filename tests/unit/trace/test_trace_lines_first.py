"""The index of a profile's lines alone is the whole index's prefix (trace/index.py, "Storage"):
every line event has the same id, columns and name in both, and the derived tracks' events
come after them. What lets a first window be answered before the derived tracks are made."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.xspace.decode import decode_xspace

DATA = Path(__file__).resolve().parents[2] / "data"
GPU_CAPTURES = ["jax_gpu_conv", "jax_nvidia_train", "jax_nvidia_train_nograph"]


@pytest.mark.parametrize("capture", GPU_CAPTURES)
def test_the_lines_index_is_the_whole_index_prefix(capture: str) -> None:
    path = next((DATA / capture).glob("**/*.xplane.pb"))
    whole = build_index(decode_xspace(path.read_bytes()))
    lines = build_index(decode_xspace(path.read_bytes()), derived=False)
    n = len(lines)
    assert whole.num_derived_events > 0 and lines.num_derived_events == 0
    assert len(whole) == n + whole.num_derived_events
    for name in ("start_ps", "end_ps", "source_row"):
        assert np.array_equal(getattr(whole, name)[:n], getattr(lines, name))
    assert whole.names[: len(lines.names)] == lines.names
    assert np.array_equal(whole.name_id[:n], lines.name_id)
    assert np.array_equal(whole.track_bounds[: len(lines.tracks) + 1], lines.track_bounds)
    assert whole.line_refs == lines.line_refs
    # The same tracks of lines, at the same storage positions; the derived ones after them.
    assert [(t.name, t.track) for t in whole.tracks[: len(lines.tracks)]] == [
        (t.name, t.track) for t in lines.tracks]
    assert all(t.derived for t in whole.tracks[len(lines.tracks):])
    assert [p.name for p in whole.processes] == [p.name for p in lines.processes]
    for full, alone in zip(whole.processes, lines.processes, strict=True):
        assert [t.name for t in full.threads if not t.derived] == [t.name for t in alone.threads]
