"""File access for local paths and, through TensorBoard's own file layer, remote ones.

Local paths use the os module directly. Paths with a scheme (`gs://`, `s3://`, any fsspec
protocol the user has installed) go through `tensorboard.compat.tensorflow_stub.io.gfile`,
TensorBoard's TensorFlow-free file layer, so the plugin never imports TensorFlow. Remote
files report no modification time; their cache key is path and size.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator


def is_remote(path: str) -> bool:
    return "://" in path


def _gfile():  # imported lazily: only remote paths need it
    from tensorboard.compat.tensorflow_stub.io import gfile

    return gfile


def join(base: str, *parts: str) -> str:
    return posixpath.join(base, *parts) if is_remote(base) else os.path.join(base, *parts)


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/")) if is_remote(path) else os.path.basename(path)


def stat(path: str) -> tuple[int, int]:
    """(size in bytes, modification time in ns; 0 for remote files). FileNotFoundError if absent."""
    if not is_remote(path):
        info = os.stat(path)
        return info.st_size, info.st_mtime_ns
    gfile = _gfile()
    try:
        return gfile.stat(path).length, 0
    except Exception as exc:  # the stub raises its own NotFoundError
        raise FileNotFoundError(path) from exc


def read_bytes(path: str) -> bytes:
    if not is_remote(path):
        with open(path, "rb") as handle:
            return handle.read()
    with _gfile().GFile(path, "rb") as handle:
        return handle.read()


def write_bytes(path: str, data: bytes) -> None:
    """Write whole or not at all: a local reader never sees half a file under its final name."""
    if is_remote(path):
        with _gfile().GFile(path, "wb") as handle:
            handle.write(data)
        return
    partial = path + ".partial"
    with open(partial, "wb") as handle:
        handle.write(data)
    os.replace(partial, path)


def makedirs(path: str) -> None:
    """Create `path` and its parents; nothing if it exists."""
    if is_remote(path):
        _gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def isdir(path: str) -> bool:
    return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def listdir(path: str) -> list[str]:
    if is_remote(path):
        return [name.rstrip("/") for name in _gfile().listdir(path)]
    return os.listdir(path)


def walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk for both kinds of path (symlinked directories are followed locally)."""
    if is_remote(top):
        yield from _gfile().walk(top)
    else:
        yield from os.walk(top, followlinks=True)
