"""Big cache entries read lazily (xspace/cache/lookup.py `load_entry_lazily`, xspace/cache/lazy.py):
the header is checked when the entry is opened, each array when it is first read. Here every
entry counts as big (`LAZY_MIN_BYTES` 0). A reopened profile answers as a fresh decode; its
lines' columns are read only when used; an array damaged or truncated after the open, or
whose sums were forged, is never served: the part comes from the file decoded again, and the
entry is removed and written again; damage to the header or its array sums is a miss at open."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace import cache
from tb_profile_plugin.xspace.cache import entry as cache_entry
from tb_profile_plugin.xspace.cache import lazy as cache_lazy
from tb_profile_plugin.xspace.cache import lookup as cache_lookup
from tb_profile_plugin.xspace.store import ProfileStore

DATA = Path(__file__).resolve().parents[2] / "data"
CAPTURE = next((DATA / "keras_fit").glob("**/*.xplane.pb"))
VIEWS = ("overview_page", "tensorflow_stats", "trace_viewer")
PREFIX = 48  # magic, MAC, header length


@pytest.fixture
def lazy_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cache_lookup, "LAZY_MIN_BYTES", 0)
    monkeypatch.setenv(cache.CACHE_DIR_ENV, str(tmp_path))
    return tmp_path


def _docs(store: ProfileStore) -> str:
    profile = store.open(str(CAPTURE))
    return json_text({view: registry.VIEWS[view].build(
        registry.ViewRequest("r", "h", {"h": profile}, {})) for view in VIEWS})


def _written(directory: Path) -> tuple[str, Path]:
    """(documents of a first decode, its profile entry), the entries written."""
    store = ProfileStore()
    expected = _docs(store)
    cache.flush()
    assert store.decode_count == 1
    (entry,) = directory.glob("*.tbpc")
    return expected, entry


def _parts(profile: Any) -> list[Any]:
    return [part for plane in profile.planes for line in plane.lines
            for part in (line.events, line.stats)]


def _layout(entry: Path) -> tuple[dict[str, Any], int]:
    data = entry.read_bytes()
    header_len = int.from_bytes(data[40:PREFIX], "little")
    header = json.loads(data[PREFIX:PREFIX + header_len])
    return header, -(-(PREFIX + header_len) // 64) * 64


def _line_arrays(tree: Any, inside: bool = False) -> list[int]:
    """Positions of the arrays of the lines' events and stats in a profile entry's tree."""
    if isinstance(tree, list):
        return [k for item in tree for k in _line_arrays(item, inside)]
    if not isinstance(tree, dict):
        return []
    if "@a" in tree:
        return [tree["@a"]] if inside else []
    return [k for name, value in tree["f"].items() for k in _line_arrays(
        value, inside or (tree["@t"] == "Line" and name in ("events", "stats")))]


def _biggest_array(entry: Path) -> tuple[int, int, int]:
    """(position, file offset, bytes) of the entry's biggest array of a line's columns."""
    header, start = _layout(entry)
    sizes = {k: np.dtype(header["arrays"][k][0]).itemsize * int(np.prod(header["arrays"][k][1]))
             for k in _line_arrays(header["tree"])}
    k = max(sizes, key=sizes.__getitem__)
    return k, start + header["arrays"][k][2], sizes[k]


def test_reopen_reads_no_line_until_used_and_answers_the_same(lazy_cache: Path) -> None:
    expected, _ = _written(lazy_cache)
    store = ProfileStore()
    profile = store.open(str(CAPTURE))
    assert profile.decoder == "cache" and store.decode_count == 0
    parts = _parts(profile)
    assert parts and all(cache_lazy.is_unread(p) for p in parts)
    assert profile.num_events == sum(len(p) for p in parts[::2])  # lengths without reading
    assert profile.nbytes > 0 and all(cache_lazy.is_unread(p) for p in parts)
    first = profile.planes[0].lines[0].events if profile.planes[0].lines else parts[0]
    first.start_ps  # noqa: B018 - reads this part only
    assert not cache_lazy.is_unread(first)
    assert sum(cache_lazy.is_unread(p) for p in parts) == len(parts) - 1
    assert _docs(store) == expected and store.decode_count == 0


@pytest.mark.parametrize("damage", ["flip_in_array", "truncated_after_open", "forged_sums"])
def test_an_array_damaged_after_the_open_comes_from_the_file(
    damage: str, lazy_cache: Path
) -> None:
    expected, entry = _written(lazy_cache)
    k, offset, size = _biggest_array(entry)
    if damage == "forged_sums":  # re-signed with the right secret: sums that do not match
        header, _ = _layout(entry)
        sums = bytearray(bytes.fromhex(header["checks"]))
        sums[16 * k] ^= 1
        loaded = cache.load_entry(entry.stem, ".tbpc", lambda h, a: (h, a), lazy_cache)
        assert loaded is not None
        forged = {k: v for k, v in loaded[0].items() if k not in ("arrays", "checks")}
        cache.save_entry(entry.stem, ".tbpc", forged, loaded[1], lazy_cache)
        data = bytearray(entry.read_bytes())
        new_header, start = _layout(entry)
        new_header["checks"] = sums.hex()
        text = json.dumps(new_header).encode()
        assert len(text) == int.from_bytes(data[40:PREFIX], "little")
        data[PREFIX:PREFIX + len(text)] = text
        rest = bytes(data[40:start])
        mac = cache_entry._mac((lazy_cache / ".secret").read_bytes(), entry.stem)
        mac.update(rest)
        mac.update(cache_entry._digest(len(data) - start,
                                       np.frombuffer(bytes(sums), "<u8").reshape(-1, 2)))
        data[8:40] = mac.digest()
        entry.write_bytes(bytes(data))
    store = ProfileStore()
    profile = store.open(str(CAPTURE))
    assert profile.decoder == "cache" and store.decode_count == 0  # the header is fine
    if damage == "flip_in_array":
        with open(entry, "r+b") as f:
            f.seek(offset + size // 2)
            byte = f.read(1)
            f.seek(offset + size // 2)
            f.write(bytes([byte[0] ^ 0x20]))
    elif damage == "truncated_after_open":
        os.truncate(entry, offset + size // 2)
    assert _docs(store) == expected
    assert store.decode_count == 1  # the damaged part came from the file
    cache.flush()
    again = ProfileStore()  # the entry was written again, valid
    assert again.open(str(CAPTURE)).decoder == "cache"
    assert _docs(again) == expected and again.decode_count == 0


@pytest.mark.parametrize("where", ["mac", "header", "checks", "length"])
def test_damage_to_the_header_or_its_sums_is_a_miss_at_open(where: str,
                                                             lazy_cache: Path) -> None:
    expected, entry = _written(lazy_cache)
    data = bytearray(entry.read_bytes())
    header, _ = _layout(entry)
    if where == "mac":
        data[20] ^= 1
    elif where == "header":
        data[PREFIX + 5] ^= 1
    elif where == "checks":
        at = data.index(header["checks"].encode(), PREFIX)
        data[at] = ord("0") if data[at] != ord("0") else ord("1")
    else:
        data += b"\0" * 64  # an array table that no longer covers the file
    entry.write_bytes(bytes(data))
    store = ProfileStore()
    assert _docs(store) == expected
    assert store.decode_count == 1
