"""memory_release: heavy requests give freed heap memory back, at most once per interval."""

from __future__ import annotations

import os
import subprocess
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_an_analysis_gives_its_freed_heap_back_without_taking_the_requests_turn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_release, "_last_s", 0.0)
    blocks = [bytearray(4000) for _ in range(50_000)]
    keep = blocks[-1]
    del blocks
    before = _rss_bytes()
    memory_release.release_now()
    assert _rss_bytes() <= before - 50 * 2**20
    assert memory_release.release_free_memory(1.0)  # the request's own trim still runs
    assert keep is not None


_FAULTS_CHILD = r"""
import resource, sys
import numpy as np
from tb_profile_plugin import memory_release

def faults_of_temporaries():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(200):
        a = np.ones(1 << 17)  # 1 MiB, freed at once: what the analysis does all the time
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

untuned = faults_of_temporaries()
changed = memory_release.tune_worker_allocator()
again = memory_release.tune_worker_allocator()
print(untuned, faults_of_temporaries(), changed, again)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_worker_whose_environment_fixed_the_trim_threshold_gets_glibcs_dynamic_one_back(
) -> None:
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536: each 1 MiB temporary is
    then a fresh mmap, zero-filled page by page (256 faults). Tuned, the heap reuses it."""
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    out = subprocess.run([sys.executable, "-c", _FAULTS_CHILD], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    untuned, tuned, changed, again = int(out[0]), int(out[1]), out[2], out[3]
    assert untuned >= 200 * 200, untuned  # about 256 faults per temporary
    assert tuned < untuned / 20, (untuned, tuned)
    assert (changed, again) == ("True", "False")  # once per process

