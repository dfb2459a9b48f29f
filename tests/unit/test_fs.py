"""Profile files are read only when regular and within the size limit, and never block."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tb_profile_plugin import fs


def _within(seconds: float, work: object) -> object:
    """work() run in a thread that must finish within `seconds` (a blocking open would not)."""
    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["value"] = work()  # type: ignore[operator]
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked"
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result.get("value")


def test_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"abc" * 1000)
    assert fs.read_bytes(str(path)) == b"abc" * 1000
    assert fs.stat(str(path))[0] == 3000
    (tmp_path / "empty.xplane.pb").write_bytes(b"")
    assert fs.read_bytes(str(tmp_path / "empty.xplane.pb")) == b""


def test_fifo_is_refused_without_opening(tmp_path: Path) -> None:
    fifo = tmp_path / "h.xplane.pb"
    os.mkfifo(fifo)
    with pytest.raises(fs.FileRefused, match="named pipe"):
        _within(5, lambda: fs.read_bytes(str(fifo)))
    with pytest.raises(fs.FileRefused, match="named pipe"):
        fs.stat(str(fifo))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_links_to_devices_are_refused(tmp_path: Path, device: str) -> None:
    link = tmp_path / "h.xplane.pb"
    link.symlink_to(device)
    with pytest.raises(fs.FileRefused, match="character device, not a regular file"):
        _within(5, lambda: fs.read_bytes(str(link)))


def test_directory_and_link_loop(tmp_path: Path) -> None:
    (tmp_path / "d.xplane.pb").mkdir()
    with pytest.raises(fs.FileRefused, match="a directory"):
        fs.read_bytes(str(tmp_path / "d.xplane.pb"))
    loop = tmp_path / "loop.xplane.pb"
    loop.symlink_to(loop.name)
    with pytest.raises(OSError) as raised:
        fs.read_bytes(str(loop))
    assert not isinstance(raised.value, FileNotFoundError)


def test_size_limit_is_configurable_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fs.max_file_bytes() == fs.DEFAULT_MAX_FILE_BYTES == 4 * 2**30
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(b"x" * 11)
    monkeypatch.setenv(fs.MAX_FILE_BYTES_ENV, "10")
    with pytest.raises(fs.FileRefused, match=r"11 bytes, more than the 10-byte limit.*"
                                             + fs.MAX_FILE_BYTES_ENV):
        fs.read_bytes(str(path))
    monkeypatch.setenv(fs.MAX_FILE_BYTES_ENV, "11")
    assert fs.read_bytes(str(path)) == b"x" * 11
    monkeypatch.setenv(fs.MAX_FILE_BYTES_ENV, "not a number")
    assert fs.max_file_bytes() == fs.DEFAULT_MAX_FILE_BYTES


def test_sparse_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    with open(path, "wb") as handle:
        handle.truncate(fs.DEFAULT_MAX_FILE_BYTES + 1)
    with pytest.raises(fs.FileRefused, match="4,294,967,296-byte limit"):
        _within(5, lambda: fs.read_bytes(str(path)))


def test_zero_size_regular_files_are_read_up_to_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files that say 0 bytes but have content (/proc) are read, never past the limit."""
    link = tmp_path / "h.xplane.pb"
    link.symlink_to("/proc/self/status")
    assert b"Name:" in fs.read_bytes(str(link))
    monkeypatch.setenv(fs.MAX_FILE_BYTES_ENV, "16")
    with pytest.raises(fs.FileRefused, match="16-byte limit"):
        fs.read_bytes(str(link))


def test_inside(tmp_path: Path) -> None:
    root = tmp_path / "logdir"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f").write_bytes(b"")
    (root / "in").symlink_to(root / "a" / "f")
    (root / "out").symlink_to(tmp_path)
    (tmp_path / "logdir2").mkdir()
    (root / "sibling").symlink_to(tmp_path / "logdir2")
    real = os.path.realpath(root)
    assert fs.inside(str(root / "in"), real) and fs.inside(str(root), real)
    assert not fs.inside(str(root / "out"), real)
    assert not fs.inside(str(root / "sibling"), real)


def test_follow_links_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fs.FOLLOW_LINKS_ENV, raising=False)
    assert not fs.follow_links()
    monkeypatch.setenv(fs.FOLLOW_LINKS_ENV, "1")
    assert fs.follow_links()
    monkeypatch.setenv(fs.FOLLOW_LINKS_ENV, "0")
    assert not fs.follow_links()
