"""The synthetic memory profile (tests/memory_builder.py) as the browser tests' run `memory/`.

Two allocators (`GPU_0_bfc` with a hand-computed peak and breakdown, `cpu` with one
allocation), so the memory id selector has a choice; the real CPU fixtures have one each.
"""

from __future__ import annotations

from pathlib import Path

from tests.memory_builder import memory_profile_bytes

SESSION = "2026_01_01_00_00_00"
MEMORY_RUN = f"memory/{SESSION}"
MEMORY_HOST = "mem-host"


def write_memory_run(logdir: Path) -> None:
    session_dir = logdir / "memory" / "plugins" / "profile" / SESSION
    session_dir.mkdir(parents=True, exist_ok=True)
    (session_dir / f"{MEMORY_HOST}.xplane.pb").write_bytes(memory_profile_bytes())
