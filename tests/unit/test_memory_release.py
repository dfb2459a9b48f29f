"""memory_release: heavy requests give freed heap memory back, at most once per interval."""

from __future__ import annotations

import sys

import pytest

from tb_profile_plugin import memory_release


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_heavy_request_trims_and_the_next_within_the_interval_does_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_release, "_last_s", 0.0)
    assert not memory_release.release_free_memory(0.01)  # light: nothing to give back
    # Many small blocks freed out of order stay in glibc's heap until trimmed.
    blocks = [bytearray(4000) for _ in range(50_000)]
    keep = blocks[-1]
    del blocks
    before = _rss_bytes()
    assert memory_release.release_free_memory(1.0)
    after = _rss_bytes()
    assert after <= before - 50 * 2**20, (before, after)  # ~190 MB freed, most returned
    assert not memory_release.release_free_memory(1.0)  # within MIN_INTERVAL_SECONDS
    assert keep is not None
