"""A local XSpace read a plane and a line at a time (decode.py `RangeSource`, fs.LocalFile):
the same profile as from its bytes, the same refusals, and never the whole file held."""

from __future__ import annotations

import contextlib
import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin import column_threads, fs
from tb_profile_plugin.errors import UnreadableProfile
from tb_profile_plugin.xspace import line_budget, stats_later
from tb_profile_plugin.xspace.decode import decode_xspace, outline_xspace
from tb_profile_plugin.xspace.file_fields import pure_path
from tb_profile_plugin.xspace.pb import xplane_pb2
from tb_profile_plugin.xspace.store import ProfileStore
from tests.fixtures import xplane_files
from tests.unit.xspace.test_decode import DECODERS, assert_same_as_protobuf
from tests.xspace_builder import Uint, XSpaceBuilder


@pytest.mark.parametrize("pure", DECODERS)
@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(p.parents[4])))
def test_real_captures_read_by_ranges_decode_like_protobuf(path: Path, pure: bool) -> None:
    data = path.read_bytes()
    with fs.LocalFile(str(path)) as local:
        profile = decode_xspace(local, pure=pure)
        outline = outline_xspace(local, pure=pure)
    assert_same_as_protobuf(data, profile)
    whole = outline_xspace(data, pure=pure)
    assert (outline.num_events, outline.hostnames, len(outline.planes)) == (
        whole.num_events, whole.hostnames, len(whole.planes))


def _planes_space(planes: int = 6, events: int = 20_000) -> bytes:
    b = XSpaceBuilder()
    for g in range(planes):
        line = b.gpu_plane(g).line("Stream #7", line_id=7, timestamp_ns=1_000)
        for i in range(events):
            line.event(f"k{i % 5}", offset_ps=i * 100, duration_ps=50, correlation_id=Uint(i))
    b.error("one error")
    return b.serialize()


def _peak_bytes(read: object) -> tuple[int, object]:
    tracemalloc.start()
    try:
        result = read()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("hostnames_first", [False, True])
def test_the_file_is_never_held_whole(tmp_path: Path, hostnames_first: bool,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Six GPU planes of 20,000 kernels: read by ranges, the decode's peak allocation is that
    of reading the file whole less most of the file (one plane is held while its lines are
    found, then a line per thread), whatever order the top-level fields come in (a streaming
    writer may put the hostnames first)."""
    data = _planes_space()
    if hostnames_first:  # (two serialized messages one after the other parse as one)
        space = xplane_pb2.XSpace.FromString(data)
        hosts = xplane_pb2.XSpace(hostnames=space.hostnames)
        del space.hostnames[:]
        data = hosts.SerializeToString() + space.SerializeToString()
    # One line at a time: with threads, how their lines overlap moves both peaks
    monkeypatch.setenv(column_threads.THREADS_ENV, "1")
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(data)
    whole_peak, _ = _peak_bytes(lambda: decode_xspace(fs.read_bytes(str(path))))
    with fs.LocalFile(str(path)) as local:
        peak, profile = _peak_bytes(lambda: decode_xspace(local))
    assert_same_as_protobuf(data, profile)  # type: ignore[arg-type]
    assert profile.errors == ["one error"]  # type: ignore[attr-defined]
    assert peak < whole_peak - 0.6 * len(data), (peak, whole_peak, len(data))


def test_a_file_cut_while_it_is_read_is_refused_with_its_name(tmp_path: Path) -> None:
    data = _planes_space(planes=2, events=2_000)
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(data)
    with fs.LocalFile(str(path)) as local:
        os.truncate(path, len(data) // 2)  # after the open: the ranges past it are gone
        with pytest.raises(OSError, match="shorter while it was read"):
            decode_xspace(local)
    path.write_bytes(data)
    store = ProfileStore(disk_cache_dir=None)
    real = fs.LocalFile.read_range

    def cut(self: fs.LocalFile, start: int, end: int) -> bytes:
        os.truncate(path, 10)
        return real(self, start, end)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fs.LocalFile, "read_range", cut)
        with pytest.raises(UnreadableProfile, match=r"h\.xplane\.pb cannot be read \(the file "
                                                    r"became shorter while it was read\)"):
            store.open(str(path))


@pytest.mark.parametrize("cut", [1, 7, 100, -3])
def test_truncated_files_read_by_ranges_are_refused(tmp_path: Path, cut: int) -> None:
    data = _planes_space(planes=2, events=500)
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(data[:cut])
    with fs.LocalFile(str(path)) as local, pytest.raises(UnreadableProfile):
        decode_xspace(local)


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(p.parents[4])))
def test_lines_read_into_reused_memory_decode_as_from_the_bytes(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line of the file read into the same memory (line_budget.LineBudget's spare memory,
    here one buffer for all), decoded whole or events first and its stats walked later: the
    profile holds nothing of that memory (each line overwrites the last), so it is the one
    decoded from the file's bytes."""
    from tests.unit.xspace.test_stats_later import _assert_same_columns, _events_first

    shared = np.empty(path.stat().st_size, np.uint8)
    lines = [0]

    @contextlib.contextmanager
    def walking(self: Any, size: int, reuse: bool = True) -> Iterator[np.ndarray | None]:
        if not reuse:  # (bytes in memory: read as views)
            yield None
            return
        shared[:] = 0xAB  # (what a line left is gone before the next is read)
        lines[0] += 1
        yield shared

    monkeypatch.setenv(column_threads.THREADS_ENV, "1")
    monkeypatch.setattr(line_budget.LineBudget, "walking", walking)
    want = decode_xspace(path.read_bytes())
    read = lines[0]
    with fs.LocalFile(str(path)) as local:
        whole = decode_xspace(local)
    assert lines[0] > read  # (every line read into the shared memory)
    shared[:] = 0xCD
    _assert_same_columns(whole, want)
    later = _events_first(path)
    pending = stats_later.pending(later)
    if not pure_path(None):  # (the numpy decoder walks each line whole: nothing later)
        assert pending is not None
        pending.load()  # (every line walked into the same memory, one after another)
    shared[:] = 0xEF
    _assert_same_columns(later, want)


def test_read_range_into_reads_the_range_in_pieces_and_refuses_a_cut_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytes(range(256)) * 40
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    monkeypatch.setattr(fs, "_MAX_PREAD_BYTES", 1000)  # several reads for one range
    with fs.LocalFile(str(path)) as local:
        out = memoryview(bytearray(7000))
        local.read_range_into(1234, 8234, out)
        assert bytes(out) == data[1234:8234]
        with pytest.raises(ValueError, match="outside a file"):
            local.read_range_into(9000, 11000, memoryview(bytearray(2000)))
        with pytest.raises(ValueError, match="not the size of its buffer"):
            local.read_range_into(0, 10, memoryview(bytearray(9)))
        os.truncate(path, 5000)
        with pytest.raises(OSError, match="shorter while it was read"):
            local.read_range_into(4000, 9000, memoryview(bytearray(5000)))
