"""The window scan reads the candidates a few whole (track, depth) segments at a time, with
int32 ids and segments (trace/window.py `_scan`, `_overlapping`): every answer equals the
one-part scan's, at several zooms of the committed real captures, for parts of one event and
of a few, and its ids and segments are int64 as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_profile_plugin.analysis.events import column_sizes
from tb_profile_plugin.trace.index import TraceIndex, build_index
from tb_profile_plugin.trace.window import _capped_visible_events
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import xplane_files

_FIELDS = ("ids", "num_filtered", "start_ps", "end_ps", "name_id", "block_name_id", "segment")


def _answers(index: TraceIndex) -> list[dict[str, object]]:
    """The uncached window answer at a full zoom-out and two zoomed-in windows, resolution
    1000 and no unfiltered allowance (every window is scanned)."""
    if len(index) == 0:
        return []
    a, b = int(index.start_ps.min()), int(index.end_ps.max())
    out: list[dict[str, object]] = []
    for lo, hi in ((a, b), (a, a + (b - a) // 7), (a + (b - a) // 3, a + (b - a) // 2)):
        got = _capped_visible_events(index, lo, hi, 1000, 0, 10**9)
        assert got.ids.dtype == np.int64 and got.segment.dtype == np.int64
        answer = {f: np.asarray(getattr(got, f)).tolist() for f in _FIELDS}
        answer["blocks"] = [np.asarray(getattr(got.blocks, f)).tolist()
                            for f in ("segment", "start_ps", "end_ps", "count", "first_id")]
        out.append(answer)
    return out


@pytest.mark.parametrize("path", xplane_files(),
                         ids=lambda p: str(p.parent.parent.parent.parent.name))
def test_scan_in_parts_equals_one_part(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = build_index(decode_xspace(path.read_bytes()))
    whole = _answers(index)
    for events_per_part in (1, 23):  # (the index built once: only the window in parts)
        monkeypatch.setattr(column_sizes, "CHUNK_EVENTS", events_per_part)
        try:
            assert _answers(index) == whole
        finally:
            monkeypatch.undo()
