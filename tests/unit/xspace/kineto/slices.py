"""The Kineto reader's slice sizes made small for a test (split.py): a text is parsed a slice
of events at a time, its bytes looked at a window at a time."""

from __future__ import annotations

import pytest

from tb_profile_plugin.xspace.kineto import split


def small_slices(monkeypatch: pytest.MonkeyPatch, slice_bytes: int,
                 window_bytes: int | None = None) -> None:
    """Slices of `slice_bytes`, windows of `window_bytes` (the same, unless given)."""
    monkeypatch.setattr(split, "SLICE_BYTES", slice_bytes)
    monkeypatch.setattr(split, "_WINDOW", slice_bytes if window_bytes is None else window_bytes)
