"""On-disk cache of decoded profiles, so a second open of the same file costs milliseconds.

Where: `$TB_PROFILE_CACHE_DIR` if set, else `$XDG_CACHE_HOME/tb_profile_plugin`, else
`~/.cache/tb_profile_plugin`; never the user's logdir. Set `TB_PROFILE_CACHE_DIR=off` to disable.

Key: the source's path, size and modification time, and `schema.FORMAT_VERSION`; any change to
one of them is a miss, and the stale entry is simply overwritten later.

File format (one file per profile, written to a temporary name and renamed into place):

    b"TBPCOLS1" | header length (uint64 LE) | header (JSON) | arrays, each 64-byte aligned

The header holds the profile's structure as a small JSON tree in which every numpy array is a
reference `{"@a": index}` into the array list `[dtype, shape, offset]`. Loading maps the file
and wraps each array with `numpy.frombuffer` on the map: no copy, no parsing of the columns.
Nothing is unpickled; a damaged or foreign cache file is a miss.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import mmap
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tb_profile_plugin.xspace import model
from tb_profile_plugin.xspace.schema import FORMAT_VERSION

logger = logging.getLogger(__name__)

CACHE_DIR_ENV = "TB_PROFILE_CACHE_DIR"
_MAGIC = b"TBPCOLS1"
_ALIGN = 64
_TYPES = {
    cls.__name__: cls
    for cls in (
        model.Profile, model.Plane, model.Line, model.EventColumns, model.StatColumns,
        model.EventMetadataTable, model.StatMetadataTable, model.StringTable,
    )
}


def cache_dir() -> Path | None:
    """The cache directory, or None when caching is switched off."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return None if configured.lower() in ("off", "0", "none") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tb_profile_plugin"


def cache_key(source: str, size_bytes: int, mtime_ns: int) -> str:
    text = json.dumps([source, size_bytes, mtime_ns, FORMAT_VERSION])
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _flatten(obj: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        arrays.append(obj)
        return {"@a": len(arrays) - 1}
    if dataclasses.is_dataclass(obj):
        return {
            "@t": type(obj).__name__,
            "f": {f.name: _flatten(getattr(obj, f.name), arrays) for f in dataclasses.fields(obj)},
        }
    if isinstance(obj, list):
        return [_flatten(item, arrays) for item in obj]
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    raise TypeError(f"cannot cache a {type(obj).__name__}")


def _unflatten(tree: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(tree, dict):
        if "@a" in tree:
            return arrays[tree["@a"]]
        cls = _TYPES[tree["@t"]]
        return cls(**{k: _unflatten(v, arrays) for k, v in tree["f"].items()})
    if isinstance(tree, list):
        return [_unflatten(item, arrays) for item in tree]
    return tree


def save(profile: model.Profile, key: str, directory: Path | None = None) -> Path | None:
    """Write `profile` under `key`; returns the file, or None when it could not be written."""
    directory = directory or cache_dir()
    if directory is None:
        return None
    arrays: list[np.ndarray] = []
    tree = _flatten(dataclasses.replace(profile, decoder="cache"), arrays)
    table: list[tuple[str, list[int], int]] = []
    offset = 0
    for array in arrays:
        table.append((array.dtype.str, list(array.shape), offset))
        offset += -(-array.nbytes // _ALIGN) * _ALIGN
    header = json.dumps({"version": FORMAT_VERSION, "tree": tree, "arrays": table}).encode()
    data_start = -(-(len(_MAGIC) + 8 + len(header)) // _ALIGN) * _ALIGN
    tmp_name = ""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".tbpc")
        with os.fdopen(fd, "wb") as out:
            out.write(_MAGIC + len(header).to_bytes(8, "little") + header)
            out.write(b"\0" * (data_start - out.tell()))
            for array, (_, _, array_offset) in zip(arrays, table, strict=True):
                out.seek(data_start + array_offset)
                out.write(np.ascontiguousarray(array).tobytes())
            out.truncate(data_start + offset)
        final = directory / f"{key}.tbpc"
        os.replace(tmp_name, final)
        return final
    except OSError as exc:
        logger.warning("profile cache not written in %s: %s", directory, exc)
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        return None


def load(key: str, directory: Path | None = None) -> model.Profile | None:
    """The cached profile for `key`, or None on a miss (absent, old format, or damaged)."""
    directory = directory or cache_dir()
    if directory is None:
        return None
    path = directory / f"{key}.tbpc"
    try:
        with open(path, "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        if mapped[: len(_MAGIC)] != _MAGIC:
            return None
        header_len = int.from_bytes(mapped[8:16], "little")
        header = json.loads(mapped[16 : 16 + header_len])
        if header.get("version") != FORMAT_VERSION:
            return None
        data_start = -(-(16 + header_len) // _ALIGN) * _ALIGN
        arrays = []
        for dtype_str, shape, offset in header["arrays"]:
            dtype = np.dtype(dtype_str)
            count = int(np.prod(shape)) if shape else 1
            arrays.append(
                np.frombuffer(mapped, dtype, count, data_start + offset).reshape(shape)
            )
        return _unflatten(header["tree"], arrays)
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        logger.warning("ignoring damaged profile cache %s: %s", path, exc)
        return None
