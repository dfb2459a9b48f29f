"""A profile decoded events first (xspace/stats_later.py): its lines' stats, walked from the file
on first use, are the ones a whole decode gives; walked once, whoever reads; refused, for every
reader, when the file changed or a stat is malformed; and the store writes the disk cache entry
only with them."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin import column_threads, fs
from tb_profile_plugin.errors import NotFound, UnreadableProfile
from tb_profile_plugin.xspace import cache, stats_later, store
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.file_fields import FileBytes, pure_path
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.store import ProfileStore
from tests.fixtures import xplane_files
from tests.xspace_builder import XSpaceBuilder

pytestmark = pytest.mark.skipif(pure_path(None),
                                reason="the events-only walk is the compiled decoder's")

DATA = Path(__file__).resolve().parents[2] / "data"
GPU = next((DATA / "jax_nvidia_train_nograph").glob("**/*.xplane.pb"))


def _reopen(path: Path, opened: list[int] | None = None) -> Any:
    @contextlib.contextmanager
    def reopen() -> Iterator[fs.LocalFile]:
        if opened is not None:
            opened.append(1)
        with fs.LocalFile(str(path)) as local:
            yield local
    return reopen


def _events_first(path: Path, opened: list[int] | None = None) -> Profile:
    with fs.LocalFile(str(path)) as local:
        return decode_xspace(local, stats_later=_reopen(path, opened))


def _a_line(profile: Profile) -> Any:
    return next(line for plane in profile.planes for line in plane.lines)


def _assert_same_columns(a: Profile, b: Profile) -> None:
    """Every line's events and stats equal, field by field, dtype included."""
    for plane_a, plane_b in zip(a.planes, b.planes, strict=True):
        for line_a, line_b in zip(plane_a.lines, plane_b.lines, strict=True):
            for part in ("events", "stats"):
                got, want = getattr(line_a, part), getattr(line_b, part)
                for f in dataclasses.fields(want):
                    x, y = getattr(got, f.name), getattr(want, f.name)
                    if isinstance(y, np.ndarray):
                        assert isinstance(x, np.ndarray) and x.dtype == y.dtype, (part, f.name)
                        assert np.array_equal(x, y), (plane_a.name, line_a.name, part, f.name)
                    else:
                        assert x == y, (plane_a.name, line_a.name, part, f.name)


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(DATA)))
def test_the_events_only_walk_gives_the_whole_walks_events_and_no_stat(path: Path) -> None:
    from tb_profile_plugin.xspace import _wire  # type: ignore[attr-defined]
    from tb_profile_plugin.xspace.decode import _plane_heads, _structure

    source = FileBytes(path.read_bytes())
    _, plane_spans = _structure(source, False)
    _, line_spans = _plane_heads(source, plane_spans, False)
    stats = 0
    for lo, hi in (span for plane in line_spans for span in plane):
        line = source.read(lo, hi)
        whole, events = _wire.decode_line(line), _wire.decode_line(line, True)
        assert whole[:6] == events[:6]  # the header
        for k in (6, 7, 8):  # metadata ids, offsets, durations
            assert bytes(whole[k]) == bytes(events[k])
        assert (whole[9] is None) == (events[9] is None)
        assert all(len(bytes(events[k])) == 0 for k in range(10, 15))  # no stat row
        stats += len(bytes(whole[12]))
    assert stats > 0  # (every committed capture has stats: the walk had some to pass over)


@pytest.mark.parametrize("path", xplane_files(), ids=lambda p: str(p.relative_to(DATA)))
def test_stats_walked_later_are_the_whole_decodes(path: Path) -> None:
    whole = decode_xspace(path.read_bytes())
    profile = _events_first(path)
    later = stats_later.pending(profile)
    assert later is not None and not later.loaded
    assert profile.nbytes == sum(ln.events.nbytes for p in profile.planes for ln in p.lines) + sum(
        p.nbytes - sum(ln.nbytes for ln in p.lines) for p in profile.planes)  # no stats yet
    assert profile.nbytes < whole.nbytes
    _assert_same_columns(profile, whole)  # (the first read walks every line's stats)
    assert later.loaded and stats_later.pending(profile) is None
    assert profile.nbytes == whole.nbytes


def test_every_line_is_walked_once_whoever_reads_first() -> None:
    opened: list[int] = []
    profile = _events_first(GPU, opened)
    lines = [ln for plane in profile.planes for ln in plane.lines]
    barrier = threading.Barrier(len(lines))
    rows: dict[int, int] = {}

    def read(k: int) -> None:
        barrier.wait()
        rows[k] = len(lines[k].stats.row)

    threads = [threading.Thread(target=read, args=(k,)) for k in range(len(lines))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(rows) == len(lines) and opened == [1]
    _assert_same_columns(profile, decode_xspace(GPU.read_bytes()))


def test_readers_on_the_column_threads_never_wait_for_those_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk has threads of its own: readers on every column thread (the pool's threads
    all waiting for it) do not stop it."""
    monkeypatch.setenv(column_threads.THREADS_ENV, "2")
    profile = _events_first(GPU)
    lines = [ln for plane in profile.planes for ln in plane.lines]
    done = threading.Event()
    result: list[list[int]] = []

    def run() -> None:
        result.append(column_threads.map_lines(lambda ln: len(ln.stats.kind), lines,
                                               column_threads.MIN_WORK))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(60), "readers on the column threads waited forever"
    whole = decode_xspace(GPU.read_bytes())
    assert result[0] == [len(ln.stats.kind) for plane in whole.planes for ln in plane.lines]


def _stats_later_store(monkeypatch: pytest.MonkeyPatch, directory: str = "off") -> ProfileStore:
    monkeypatch.setenv(store.STATS_LATER_MIN_BYTES_ENV, "0")
    monkeypatch.setenv(cache.CACHE_DIR_ENV, directory)
    return ProfileStore()


def test_a_file_changed_between_the_walks_is_refused_to_every_reader(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    shutil.copyfile(GPU, path)
    profiles = _stats_later_store(monkeypatch)
    profile = profiles.open(str(path), stats_later=True)
    assert stats_later.pending(profile) is not None
    other = next((DATA / "jax_nvidia_train").glob("**/*.xplane.pb"))
    shutil.copyfile(other, path)  # (another capture, under the same name)
    line = _a_line(profile)
    for _ in range(2):  # the same answer each time, never a half-read profile
        with pytest.raises(UnreadableProfile, match=r"^h\.xplane\.pb: .*changed on disk"):
            line.stats.row  # noqa: B018
    # The store sees the new file and decodes it for the next request.
    again = profiles.open(str(path), stats_later=True)
    assert again is not profile
    _assert_same_columns(again, decode_xspace(other.read_bytes()))


def test_a_file_gone_before_its_stats_are_read_is_named_not_found(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    shutil.copyfile(GPU, path)
    profile = _stats_later_store(monkeypatch).open(str(path), stats_later=True)
    path.unlink()
    with pytest.raises(NotFound, match="h.xplane.pb does not exist") as raised:
        _a_line(profile).stats.row  # noqa: B018
    assert str(tmp_path) not in str(raised.value)  # (names the file, not the server's folders)


def _malformed_stat(path: Path) -> Path:
    """A GPU stream whose second event carries a stat of a wire type no protobuf has (7):
    its events walk, its stats do not."""
    b = XSpaceBuilder()
    line = b.plane("/device:GPU:0").line("Stream #1", timestamp_ns=1000)
    marker = "MALFORMED-STAT-VALUE"
    line.event("fusion.1", offset_ps=0, duration_ps=10, correlation_id=1)
    line.event("fusion.2", offset_ps=20, duration_ps=10, tf_op=marker)
    data = bytearray(b.serialize())
    at = data.find(marker.encode())
    assert data[at - 2] == (5 << 3 | 2)  # str_value, length-delimited
    data[at - 2] = 5 << 3 | 7
    path.write_bytes(bytes(data))
    return path


def test_a_malformed_stat_is_refused_when_the_stats_are_read(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = _malformed_stat(tmp_path / "h.xplane.pb")
    with pytest.raises(UnreadableProfile, match="malformed"):
        decode_xspace(path.read_bytes())  # a whole decode refuses the file at once
    profile = _stats_later_store(monkeypatch).open(str(path), stats_later=True)
    assert profile.num_events == 2  # the events were read
    for _ in range(2):  # (each reader its own exception, naming the file)
        with pytest.raises(UnreadableProfile, match=r"^h\.xplane\.pb: .*malformed") as raised:
            _a_line(profile).stats.row  # noqa: B018
        assert raised.value.__traceback__ is not None and raised.value.__context__ is None
    later = stats_later.pending(profile)
    assert later is not None and later._error is not None
    assert later._error.__traceback__ is None  # (no frame of the walk kept with the profile)


def test_a_line_that_fails_stops_the_walk_of_the_lines_not_begun(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(column_threads.THREADS_ENV, "1")
    profile = _events_first(GPU)
    later = stats_later.pending(profile)
    assert later is not None
    walked: list[int] = []

    def failing(data: Any) -> Any:
        def one(k: int) -> Any:
            walked.append(k)
            raise UnreadableProfile("a crafted stat")
        return one

    monkeypatch.setattr(later, "_walker", failing)
    with pytest.raises(UnreadableProfile, match="a crafted stat"):
        later.load()
    lines = sum(len(plane.lines) for plane in profile.planes)
    assert lines > 1 and len(walked) == 1


def test_the_store_decodes_events_first_only_when_asked_and_big_enough(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_DIR_ENV, "off")
    monkeypatch.setenv(store.STATS_LATER_MIN_BYTES_ENV, str(GPU.stat().st_size + 1))
    assert stats_later.pending(ProfileStore().open(str(GPU), stats_later=True)) is None
    monkeypatch.setenv(store.STATS_LATER_MIN_BYTES_ENV, str(GPU.stat().st_size))
    assert stats_later.pending(ProfileStore().open(str(GPU))) is None
    assert stats_later.pending(ProfileStore().open(str(GPU), stats_later=True)) is not None


def test_the_disk_cache_entry_is_written_with_the_stats(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    profiles = _stats_later_store(monkeypatch, str(tmp_path / "cache"))
    profile = profiles.open(str(GPU), stats_later=True)
    key = store.disk_key(str(GPU))
    cache.flush(30)
    assert not cache.lookup.entry_exists(key, ".tbpc")  # not without its stats
    counted = profiles.cached_bytes
    _a_line(profile).stats.row  # noqa: B018 - walks every line's stats
    assert stats_later.pending(profile) is None
    deadline = time.monotonic() + 30  # (written and counted once the walk is done)
    while not (cache.lookup.entry_exists(key, ".tbpc") and profiles.cached_bytes > counted):
        assert time.monotonic() < deadline, "the entry was not written, or not counted"
        time.sleep(0.01)
    cache.flush(30)
    reopened = ProfileStore()
    from_disk = reopened.open(str(GPU))
    assert reopened.decode_count == 0
    _assert_same_columns(from_disk, decode_xspace(GPU.read_bytes()))
