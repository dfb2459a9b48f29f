"""Files that cost more than their bytes are refused before they are read
(xspace/file_check.py), and a file that is no profile is remembered under its identity by the
store (xspace/store.py): a 4,000,000,000-byte sparse file, two links to it, a zero-filled file,
and a plane header followed by zeros."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest

from tb_profile_plugin import fs
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace import file_check
from tb_profile_plugin.xspace.store import ProfileStore
from tests.fixtures import session_dir

SPARSE_BYTES = 4_000_000_000  # under the 4 GiB limit


def _sparse(path: Path, size: int = SPARSE_BYTES) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def _holes_supported(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return fs.hole_bytes(fd, path.stat().st_size, 0) > 0
    finally:
        os.close(fd)


def _max_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_a_sparse_file_is_refused_at_once_and_remembered_by_any_link(tmp_path: Path) -> None:
    sparse = _sparse(tmp_path / "sparse.xplane.pb")
    if not _holes_supported(sparse):
        pytest.skip("this filesystem does not report holes")
    (tmp_path / "link.xplane.pb").symlink_to(sparse)
    store = ProfileStore(disk_cache_dir=None)
    rss_before = _max_rss_bytes()
    started = time.monotonic()
    for name in ("sparse.xplane.pb", "link.xplane.pb", "sparse.xplane.pb"):
        with pytest.raises(UnreadableProfile, match=r"is not an \.xplane\.pb written by a "
                           r"profiler \(at least [\d,]+ of its 4,000,000,000 bytes are holes"):
            store.open(str(tmp_path / name))
    took_s = time.monotonic() - started
    assert took_s < 1.0, f"three refusals took {took_s:.2f} s"
    assert _max_rss_bytes() - rss_before < 64 << 20  # nothing of its 4 GB was read
    assert store.decode_count == 0
    assert len(store._failures) == 1  # one file, by its identity, whatever the link


def test_a_remembered_failure_is_forgotten_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(bytes(4096))  # zeros: no XSpace field
    store = ProfileStore(disk_cache_dir=None)
    with pytest.raises(UnreadableProfile, match="byte 0 holds no XSpace field"):
        store.open(str(path))
    real = next(session_dir("custom_loop").glob("*.xplane.pb")).read_bytes()
    path.write_bytes(real)
    assert store.open(str(path)).planes
    assert store.decode_count == 1


@pytest.mark.parametrize("head, why", [
    (b"", "byte 0 holds no XSpace field"),  # zeros only
    (b"\x0a\x80\x80\x80\x01", "the plane at byte 0 starts with no XPlane field"),  # plane + 0s
    (b"\x0a\xff\xff\xff\xff\x0f", "runs past the end of the file"),
    (b"\x2a\x00", "byte 0 holds no XSpace field"),  # field 5: no XSpace field
])
def test_the_envelope_is_checked_from_a_few_bytes(tmp_path: Path, head: bytes, why: str) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(head + bytes(2 << 20))
    with pytest.raises(UnreadableProfile, match=why):
        file_check.check_local(str(path))


def test_every_committed_capture_passes_the_checks() -> None:
    captures = sorted(Path(session_dir("custom_loop")).parents[3].glob("*/**/*.xplane.pb"))
    assert len(captures) > 10
    for capture in captures:
        file_check.check_local(str(capture))
