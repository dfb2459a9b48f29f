"""Poisoned disk-cache entries: each is a miss that rebuilds the right document, never a 500.

A real profile file is opened once through the plugin (which caches it), then its cache entry
(or the cache directory, or its secret) is damaged in one of the ways below, and a fresh
plugin serves `profile_info`, `trace_viewer` and `tensorflow_stats` again. Every answer must be
200 and equal to the documents of the clean decode; the profile must have been decoded again
(a miss), and, where the directory is safe, the entry must be valid again afterwards (replaced).

Variants: truncations at every boundary of the format; bit flips in the magic, the MAC, the
header length, the header, the padding and the arrays; forged entries with a valid layout but
the wrong data (another user's secret, another key's entry, the previous format); entries whose
MAC is right but whose contents are malformed (as if the secret had leaked: deep nesting,
references out of range, unknown types, columns of different lengths, offsets outside the
file...); special files at the entry's path (FIFO, socket, directory, links to devices and to
valid entries, a file of another user); and unsafe directories and secrets.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_profile_plugin.plugin import ProfilePlugin
from tb_profile_plugin.trace.index_cache import INDEX_FORMAT_VERSION
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.cache import directory as cache_directory
from tb_profile_plugin.xspace.cache import entry as cache_entry
from tb_profile_plugin.xspace.store import ProfileStore, disk_key
from tests.pod_runs import HostPlan, host_xspace

VIEWS = ("profile_info", "trace_viewer", "tensorflow_stats")
OTHER_UID = 65534  # nobody
MAGIC_AND_MAC = 40
PREFIX = 48  # magic, MAC, header length


@dataclass
class Setup:
    logdir: Path
    cache_dir: Path
    profile: Path
    key: str

    @property
    def entry(self) -> Path:
        return self.cache_dir / f"{self.key}.tbpc"

    def secret(self) -> bytes:
        return (self.cache_dir / ".secret").read_bytes()


def _make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(cache_dir))
    run = tmp_path / "logs" / "plugins" / "profile" / "s1"
    run.mkdir(parents=True)
    profile = run / "worker.xplane.pb"
    profile.write_bytes(host_xspace(HostPlan("worker", 0, 6, 0, slow_steps=frozenset({2}))))
    return Setup(tmp_path / "logs", cache_dir, profile, disk_key(str(profile)))


def _serve(setup: Setup) -> tuple[dict[str, Any], int]:
    """The three documents from a fresh plugin (fresh memory cache), and its decode count."""
    plugin = ProfilePlugin(base_plugin.TBContext(logdir=str(setup.logdir)))
    app = plugin.get_plugin_apps()["/data"]
    docs = {}
    for view in VIEWS:
        query = urllib.parse.urlencode({"run": "s1", "tag": view, "host": "worker"})
        response = Client(app).get("/?" + query)  # type: ignore[arg-type]
        assert response.status_code == 200, (view, response.get_data(as_text=True))
        docs[view] = json.loads(response.get_data())
    cache.flush()  # the entries are written off the requests' path
    return docs, plugin._store.decode_count


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """`call()`, failing the test if it takes longer than `seconds` (a hang)."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"hung for more than {seconds} s"
    if errors:
        raise errors[0]
    return result[0]


# --- the variants ------------------------------------------------------------------------


def _layout(data: bytes) -> tuple[int, int]:
    """(header length, data start) of a valid entry."""
    header_len = int.from_bytes(data[MAGIC_AND_MAC:PREFIX], "little")
    return header_len, -(-(PREFIX + header_len) // 64) * 64


def _truncate(where: Callable[[bytes], int]) -> Callable[[Setup], None]:
    def poison(s: Setup) -> None:
        data = s.entry.read_bytes()
        s.entry.write_bytes(data[: where(data)])
    return poison


def _flip(where: Callable[[bytes], int]) -> Callable[[Setup], None]:
    def poison(s: Setup) -> None:
        data = bytearray(s.entry.read_bytes())
        data[where(bytes(data))] ^= 0x10
        s.entry.write_bytes(bytes(data))
    return poison


def _signed(header_edit: Callable[[dict[str, Any]], Any] | None = None,
            body_edit: Callable[[bytearray, int], None] | None = None,
            raw_header: bytes | None = None) -> Callable[[Setup], None]:
    """An entry re-signed with the directory's real secret after its header or arrays were
    edited: the MAC is right, the contents malformed (a leaked secret, or a writer's bug)."""
    def poison(s: Setup) -> None:
        data = s.entry.read_bytes()
        header_len, start = _layout(data)
        header = json.loads(data[PREFIX:PREFIX + header_len])
        body = bytearray(data[start:])
        if header_edit is not None:
            header = header_edit(header) or header
        if body_edit is not None:
            body_edit(body, 0)
        text = raw_header if raw_header is not None else json.dumps(header).encode()
        new_start = -(-(PREFIX + len(text)) // 64) * 64
        rest = len(text).to_bytes(8, "little") + text + b"\0" * (new_start - PREFIX - len(text))
        rest += bytes(body)
        s.entry.write_bytes(cache_entry._MAGIC + _mac_of(s.secret(), s.key, rest) + rest)
    return poison


def _mac_of(secret: bytes, key: str, rest: bytes) -> bytes:
    """The entry's MAC, as the format defines it, over `rest` (all after the MAC): HMAC-SHA256
    of the key, the header part up to the data region, and the region's length, sum (mod 2^64)
    and XOR of its little-endian 64-bit words (the last one padded with zeros)."""
    header_len = int.from_bytes(rest[:8], "little")
    start = min(len(rest), -(-(PREFIX + header_len) // 64) * 64 - MAGIC_AND_MAC)
    region = rest[start:]
    whole = len(region) // 8 * 8
    words = [int(w) for w in np.frombuffer(region[:whole], np.uint64)]
    if whole < len(region):
        words.append(int.from_bytes(region[whole:].ljust(8, b"\0"), "little"))
    xor = 0
    for w in words:
        xor ^= w
    digest = b"".join(v.to_bytes(8, "little") for v in (len(region), sum(words) % 2**64, xor))
    return hmac.new(secret, key.encode() + b"\0" + rest[:start] + digest,
                    hashlib.sha256).digest()


def _other_profile() -> bytes:
    return host_xspace(HostPlan("worker", 0, 3, 7))  # other steps: wrong data if served


def _foreign_entry(same_profile: bool) -> Callable[[Setup], None]:
    """A valid entry for this key written by another user (another cache dir, its own
    secret), of the right profile or of another one."""
    def poison(s: Setup) -> None:
        from tb_profile_plugin.xspace.decode import decode_xspace

        other_dir = s.cache_dir.parent / "other_cache"
        data = s.profile.read_bytes() if same_profile else _other_profile()
        written = cache.save(decode_xspace(data), s.key, other_dir)
        assert written is not None
        os.replace(written, s.entry)
    return poison


def _entry_of_another_key(s: Setup) -> None:
    from tb_profile_plugin.xspace.decode import decode_xspace

    written = cache.save(decode_xspace(_other_profile()), "another-key", s.cache_dir)
    assert written is not None
    os.replace(written, s.entry)


def _previous_format(s: Setup) -> None:
    """The previous, unsigned format (TBPCOLS1) with a valid layout and another profile."""
    from tb_profile_plugin.xspace.decode import decode_xspace

    written = cache.save(decode_xspace(_other_profile()), "x", s.cache_dir)
    assert written is not None
    data = written.read_bytes()
    written.unlink()
    header_len, start = _layout(data)
    header = data[PREFIX:PREFIX + header_len]
    old_start = -(-(16 + header_len) // 64) * 64
    s.entry.write_bytes(b"TBPCOLS1" + header_len.to_bytes(8, "little") + header
                        + b"\0" * (old_start - 16 - header_len) + data[start:])


def _tree_edit(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def header_edit(header: dict[str, Any]) -> None:
        edit(header["tree"])
    return header_edit


def _first_line(tree: dict[str, Any]) -> dict[str, Any]:
    planes = tree["f"]["planes"]
    return next(line for plane in planes for line in plane["f"]["lines"]
                if line["f"]["events"]["f"]["metadata_id"])


def _array_of(tree: dict[str, Any], *path: str) -> int:
    node = _first_line(tree)
    for name in path:
        node = node["f"][name]
    return int(node["@a"])


def _shorten_array(*path: str) -> Callable[[dict[str, Any]], None]:
    def header_edit(header: dict[str, Any]) -> None:
        index = _array_of(header["tree"], *path)
        header["arrays"][index][1] = [max(0, header["arrays"][index][1][0] - 1)]
    return header_edit


def _set_array(locate: Callable[[dict[str, Any]], int], values: list[int]
               ) -> Callable[[Setup], None]:
    """Overwrites the first values of one array (the MAC right again)."""
    def poison(s: Setup) -> None:
        data = s.entry.read_bytes()
        header_len, _ = _layout(data)
        header = json.loads(data[PREFIX:PREFIX + header_len])
        dtype, _, offset = header["arrays"][locate(header["tree"])]
        raw = np.array(values, dtype=np.dtype(dtype)).tobytes()

        def body_edit(body: bytearray, _: int) -> None:
            body[offset:offset + len(raw)] = raw

        _signed(body_edit=body_edit)(s)
    return poison


def _last_name_offset(tree: dict[str, Any]) -> int:
    """The array of the first plane's event-name offsets."""
    names = tree["f"]["planes"][0]["f"]["event_metadata"]["f"]["names"]
    return int(names["f"]["offsets"]["@a"])


def _two_dimensional(header: dict[str, Any]) -> None:
    array = next(a for a in header["arrays"] if a[1] and a[1][0] > 1 and a[1][0] % 2 == 0)
    array[1] = [2, array[1][0] // 2]


def _fifo(s: Setup) -> None:
    s.entry.unlink()
    os.mkfifo(s.entry)


def _socket(s: Setup) -> None:
    s.entry.unlink()
    cwd = os.getcwd()
    os.chdir(s.cache_dir)  # a socket's path is limited to 108 bytes: bind the name
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(s.entry.name)
    finally:
        os.chdir(cwd)


def _directory(s: Setup) -> None:
    s.entry.unlink()
    s.entry.mkdir()


def _link_to(target: str) -> Callable[[Setup], None]:
    def poison(s: Setup) -> None:
        s.entry.unlink()
        s.entry.symlink_to(target)
    return poison


def _link_to_valid_entry(s: Setup) -> None:
    moved = s.cache_dir / "elsewhere.tbpc"
    os.replace(s.entry, moved)
    s.entry.symlink_to(moved)


def _other_owner(s: Setup) -> None:
    os.chown(s.entry, OTHER_UID, OTHER_UID)


def _recursion(s: Setup) -> None:
    depth = 100_000
    _signed(raw_header=b'{"version": 0, "tree": ' + b"[" * depth + b"]" * depth
            + b', "arrays": []}')(s)


def _header_length_beyond_file(s: Setup) -> None:
    data = bytearray(s.entry.read_bytes())
    data[MAGIC_AND_MAC:PREFIX] = (2**62).to_bytes(8, "little")
    rest = bytes(data[MAGIC_AND_MAC:])
    data[8:MAGIC_AND_MAC] = _mac_of(s.secret(), s.key, rest)
    s.entry.write_bytes(bytes(data))


VARIANTS: dict[str, Callable[[Setup], None]] = {
    # Truncated at every boundary of the format.
    "truncated_empty": _truncate(lambda d: 0),
    "truncated_in_magic": _truncate(lambda d: 5),
    "truncated_after_magic": _truncate(lambda d: 8),
    "truncated_in_mac": _truncate(lambda d: 20),
    "truncated_after_mac": _truncate(lambda d: MAGIC_AND_MAC),
    "truncated_in_header_length": _truncate(lambda d: 44),
    "truncated_after_header_length": _truncate(lambda d: PREFIX),
    "truncated_in_header": _truncate(lambda d: PREFIX + _layout(d)[0] // 2),
    "truncated_after_header": _truncate(lambda d: PREFIX + _layout(d)[0]),
    "truncated_at_arrays": _truncate(lambda d: _layout(d)[1]),
    "truncated_in_first_array": _truncate(lambda d: _layout(d)[1] + 3),
    "truncated_in_arrays": _truncate(lambda d: (_layout(d)[1] + len(d)) // 2),
    "truncated_by_one_byte": _truncate(lambda d: len(d) - 1),
    "extended_by_one_byte": lambda s: s.entry.write_bytes(s.entry.read_bytes() + b"\0"),
    # One bit flipped.
    "flip_magic": _flip(lambda d: 0),
    "flip_magic_version": _flip(lambda d: 7),
    "flip_mac_first": _flip(lambda d: 8),
    "flip_mac_last": _flip(lambda d: MAGIC_AND_MAC - 1),
    "flip_header_length_low": _flip(lambda d: MAGIC_AND_MAC),
    "flip_header_length_high": _flip(lambda d: PREFIX - 1),
    "flip_header_first": _flip(lambda d: PREFIX),
    "flip_header_middle": _flip(lambda d: PREFIX + _layout(d)[0] // 2),
    "flip_header_last": _flip(lambda d: PREFIX + _layout(d)[0] - 1),
    "flip_padding": _flip(lambda d: _layout(d)[1] - 1),
    "flip_first_array_byte": _flip(lambda d: _layout(d)[1]),
    "flip_array_middle": _flip(lambda d: (_layout(d)[1] + len(d)) // 2),
    "flip_last_byte": _flip(lambda d: len(d) - 1),
    "zeroed_arrays": lambda s: s.entry.write_bytes(
        (d := s.entry.read_bytes())[: _layout(d)[1]] + b"\0" * (len(d) - _layout(d)[1])),
    # Forged: a valid layout, the wrong writer or the wrong data.
    "forged_other_users_secret_other_profile": _foreign_entry(same_profile=False),
    "forged_other_users_secret_same_profile": _foreign_entry(same_profile=True),
    "forged_entry_of_another_key": _entry_of_another_key,
    "forged_previous_unsigned_format": _previous_format,
    # Right MAC, malformed contents.
    "signed_recursion_bomb": _recursion,
    "signed_header_not_json": _signed(raw_header=b"{not json"),
    "signed_header_a_list": _signed(raw_header=b"[1, 2, 3]"),
    "signed_wrong_version": _signed(header_edit=lambda h: {**h, "version": -1}),
    "signed_header_length_beyond_file": _header_length_beyond_file,
    "signed_array_index_out_of_range": _signed(header_edit=_tree_edit(
        lambda t: _first_line(t)["f"]["events"]["f"].update(start_ps={"@a": 10**6}))),
    "signed_array_index_not_int": _signed(header_edit=_tree_edit(
        lambda t: _first_line(t)["f"]["events"]["f"].update(start_ps={"@a": "0"}))),
    "signed_unknown_type": _signed(header_edit=_tree_edit(
        lambda t: t.update({"@t": "os.system"}))),
    "signed_tree_not_a_profile": _signed(header_edit=lambda h: {**h, "tree": [1, 2]}),
    "signed_missing_field": _signed(header_edit=_tree_edit(lambda t: t["f"].pop("planes"))),
    "signed_unknown_field": _signed(header_edit=_tree_edit(lambda t: t["f"].update(x=1))),
    "signed_int_field_a_string": _signed(header_edit=_tree_edit(
        lambda t: _first_line(t)["f"].update(id="7"))),
    "signed_columns_of_different_lengths": _signed(
        header_edit=_shorten_array("events", "duration_ps")),
    "signed_two_dimensional_column": _signed(header_edit=_two_dimensional),
    "signed_object_dtype": _signed(header_edit=lambda h: h["arrays"][0].__setitem__(0, "|O")),
    "signed_negative_shape": _signed(header_edit=lambda h: h["arrays"][0].__setitem__(1, [-1])),
    "signed_array_beyond_file": _signed(
        header_edit=lambda h: h["arrays"][-1].__setitem__(2, 10**9)),
    "signed_negative_offset": _signed(
        header_edit=lambda h: h["arrays"][-1].__setitem__(2, -64)),
    "signed_string_offsets_outside_blob": _set_array(_last_name_offset, values=[0, 10**6]),
    "signed_stat_row_out_of_range": _set_array(
        lambda t: _array_of(t, "stats", "row"), values=[10**6]),
    # Special files at the entry's path.
    "fifo": _fifo,
    "unix_socket": _socket,
    "directory": _directory,
    "link_to_dev_zero": _link_to("/dev/zero"),
    "link_to_dev_urandom": _link_to("/dev/urandom"),
    "link_to_valid_entry": _link_to_valid_entry,
    "dangling_link": _link_to("/nonexistent/entry.tbpc"),
    "other_users_file": _other_owner,
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_poisoned_entry_is_a_miss_and_is_replaced(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if name == "other_users_file" and os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    setup = _make(tmp_path, monkeypatch)
    expected, decoded = _serve(setup)
    assert decoded == 1 and setup.entry.is_file()
    assert _serve(setup) == (expected, 0)  # served from the entry while it is intact
    VARIANTS[name](setup)
    docs, decoded = _within(10, lambda: _serve(setup))
    assert decoded == 1  # a miss: decoded again
    assert docs == expected
    replaced = ProfileStore().open(str(setup.profile))
    assert replaced.decoder == "cache"  # the entry was written again, valid
    assert _serve(setup) == (expected, 0)


def test_there_are_at_least_forty_variants() -> None:
    assert len(VARIANTS) >= 40


# --- the directory and its secret -----------------------------------------------------------


def _world_writable(s: Setup) -> None:
    s.cache_dir.chmod(0o777)


def _world_writable_sticky(s: Setup) -> None:
    s.cache_dir.chmod(0o1777)


def _other_users_dir(s: Setup) -> None:
    os.chown(s.cache_dir, OTHER_UID, OTHER_UID)


def _pretend_another_user(monkeypatch: pytest.MonkeyPatch) -> Callable[[Setup], None]:
    def poison(_: Setup) -> None:
        real = os.geteuid()
        monkeypatch.setattr(cache_directory.os, "geteuid", lambda: real + 1)
    return poison


@pytest.mark.parametrize("name", ["world_writable", "world_writable_sticky", "other_users_dir",
                                  "pretend_another_user"])
def test_unsafe_cache_dir_is_refused_with_a_warning(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    if name == "other_users_dir" and os.geteuid() != 0:
        pytest.skip("needs root to give a directory to another user")
    setup = _make(tmp_path, monkeypatch)
    expected, _ = _serve(setup)
    before = setup.entry.stat().st_mtime_ns
    index_before = (setup.cache_dir / f"{setup.key}-index{INDEX_FORMAT_VERSION}.tbpi").stat(
        ).st_mtime_ns
    poison = {"world_writable": _world_writable, "world_writable_sticky": _world_writable_sticky,
              "other_users_dir": _other_users_dir,
              "pretend_another_user": _pretend_another_user(monkeypatch)}[name]
    poison(setup)
    for _ in range(2):  # not used, not written, whatever it holds
        with caplog.at_level("WARNING", logger=cache.__name__):
            assert _serve(setup) == (expected, 1)
    assert setup.entry.stat().st_mtime_ns == before
    index_entry = setup.cache_dir / f"{setup.key}-index{INDEX_FORMAT_VERSION}.tbpi"
    assert index_entry.stat().st_mtime_ns == index_before  # the trace index's, written first
    assert sorted(p.name for p in setup.cache_dir.iterdir()) == sorted([
        ".secret", setup.entry.name, index_entry.name])
    assert any("profile cache is off" in r.getMessage() and str(setup.cache_dir) in
               r.getMessage() for r in caplog.records)


def test_cache_dir_that_is_a_file_is_refused(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    setup = _make(tmp_path, monkeypatch)
    setup.cache_dir.write_bytes(b"not a directory")
    expected = _serve(setup)
    assert expected[1] == 1 and _serve(setup)[1] == 1
    assert setup.cache_dir.read_bytes() == b"not a directory"


def _replace_secret(s: Setup) -> None:
    (s.cache_dir / ".secret").write_bytes(os.urandom(32))


def _readable_secret(s: Setup) -> None:
    (s.cache_dir / ".secret").chmod(0o644)


def _fifo_secret(s: Setup) -> None:
    (s.cache_dir / ".secret").unlink()
    os.mkfifo(s.cache_dir / ".secret")


def _short_secret(s: Setup) -> None:
    (s.cache_dir / ".secret").write_bytes(b"short")


@pytest.mark.parametrize("poison", [_replace_secret, _readable_secret, _fifo_secret,
                                    _short_secret], ids=lambda f: f.__name__.strip("_"))
def test_changed_or_unsafe_secret_makes_every_entry_a_miss(
    poison: Callable[[Setup], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = _make(tmp_path, monkeypatch)
    expected, _ = _serve(setup)
    old_secret = setup.secret()
    poison(setup)
    cache_directory._secrets.clear()  # as in a new process
    assert _within(10, lambda: _serve(setup)) == (expected, 1)
    secret = setup.cache_dir / ".secret"
    assert secret.is_file() and secret.stat().st_mode & 0o077 == 0
    assert setup.secret() != old_secret and len(setup.secret()) == 32
    assert _serve(setup) == (expected, 0)


def test_stale_temporary_files_are_removed(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    setup = _make(tmp_path, monkeypatch)
    _serve(setup)
    stale = setup.cache_dir / ".tmp-killedwriter.tbpc"
    fresh = setup.cache_dir / ".tmp-writing-now.tbpc"
    for path in (stale, fresh):
        path.write_bytes(b"partial")
    old = time.time() - cache.STALE_TMP_S - 60
    os.utime(stale, (old, old))
    cache_directory._secrets.clear()  # as in a new process
    _serve(setup)
    assert not stale.exists() and fresh.exists()


_TRUNCATE_AFTER_LOAD = r"""
import os, sys
import numpy as np
from pathlib import Path
from tb_profile_plugin.xspace import cache
profile = cache.load(sys.argv[1], Path(sys.argv[2]))
assert profile is not None
os.truncate(Path(sys.argv[2]) / (sys.argv[1] + ".tbpc"), 0)
total = 0
for plane in profile.planes:
    for line in plane.lines:
        every = line.stats.sparse(len(line.events))
        total += int(np.sum(line.events.duration_ps)) + int(np.sum(every.value))
print("sum", total)
"""


def test_truncating_a_loaded_entry_cannot_crash_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = _make(tmp_path, monkeypatch)
    _serve(setup)
    result = subprocess.run(
        [sys.executable, "-c", _TRUNCATE_AFTER_LOAD, setup.key, str(setup.cache_dir)],
        capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[3])
    assert result.returncode == 0, result.stderr  # -7 would be SIGBUS
    assert result.stdout.startswith("sum ")
