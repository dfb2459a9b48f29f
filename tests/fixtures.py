"""Where the committed real captures are (see tests/data/README.md)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"


def xplane_files() -> list[Path]:
    """Every committed real .xplane.pb, sorted."""
    return sorted(DATA_DIR.glob("**/*.xplane.pb"))
