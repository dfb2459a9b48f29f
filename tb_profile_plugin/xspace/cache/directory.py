"""Where the disk cache is, whether it is safe to use, its secret, and the entries' keys.

Where: `$TB_PROFILE_CACHE_DIR` if set, else `$XDG_CACHE_HOME/tb_profile_plugin`, else
`~/.cache/tb_profile_plugin`; never the user's logdir. Set `TB_PROFILE_CACHE_DIR=off` to disable.
The directory must belong to the user running the plugin and must not be world-writable;
otherwise caching is switched off with a warning (it is created with mode 0700).

Key: the source's path, size, modification time, the rest of its identity (inode, ctime, a
fingerprint of its first and last 64 KiB: `fs.identity`) and `schema.FORMAT_VERSION`; any change
to one of them is a miss, and the stale entry is simply overwritten later (or left to age).

The directory's own secret (`.secret`, 32 random bytes, mode 0600, made on first use) keys the
MAC of every entry in it (cache/entry.py); a secret that is changed, damaged or readable by
others is replaced, and every entry keyed by the old one becomes a miss. Temporary files
(`.tmp-*`) left by a killed writer are removed after an hour (checked once per process).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import stat
import tempfile
import threading
import time
from pathlib import Path

from tb_profile_plugin.xspace.cache.files import _read_all, open_regular
from tb_profile_plugin.xspace.schema import FORMAT_VERSION

logger = logging.getLogger(__name__)


CACHE_DIR_ENV = "TB_PROFILE_CACHE_DIR"
_SECRET_NAME = ".secret"
_SECRET_BYTES = 32
_TMP_PREFIX = ".tmp-"
#: A temporary file older than this was left by a writer that died.
STALE_TMP_S = 3600.0


def cache_dir() -> Path | None:
    """The cache directory, or None when caching is switched off."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return None if configured.lower() in ("off", "0", "none") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tb_profile_plugin"


class _Refused(Exception):
    """The cache directory is unsafe or unusable: caching is off for it."""


_state_lock = threading.Lock()
_secrets: dict[str, bytes] = {}  # checked directory -> its secret
_warned: set[str] = set()


def _warn_once(directory: Path, message: str) -> None:
    with _state_lock:
        if str(directory) in _warned:
            return
        _warned.add(str(directory))
    logger.warning("%s; the profile cache is off for this directory", message)


def _checked_dir(directory: Path) -> bytes:
    """The directory's secret, after checking that the directory is safe (owned by this user,
    not world-writable, a real directory); raises _Refused otherwise. Creates the directory
    (0700) and its secret on first use, and removes stale temporary files once per process."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(directory)
    except OSError as exc:
        raise _Refused(f"profile cache directory {directory} is unusable: {exc}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise _Refused(f"profile cache directory {directory} is not a directory")
    if info.st_uid != os.geteuid():
        raise _Refused(f"profile cache directory {directory} belongs to another user "
                       f"(uid {info.st_uid}); set {CACHE_DIR_ENV} to a directory of your own")
    if info.st_mode & stat.S_IWOTH:
        raise _Refused(f"profile cache directory {directory} is world-writable (mode "
                       f"{stat.S_IMODE(info.st_mode):o}); run chmod 700 on it or set "
                       f"{CACHE_DIR_ENV} to a private directory")
    with _state_lock:
        known = _secrets.get(str(directory))
    if known is not None and _read_secret(directory) == known:
        return known
    _remove_stale_tmp(directory)
    secret = _read_secret(directory) or _new_secret(directory)
    with _state_lock:
        _secrets[str(directory)] = secret
    return secret


def _read_secret(directory: Path) -> bytes | None:
    fd = open_regular(directory / _SECRET_NAME)
    if fd is None:
        return None
    try:
        info = os.fstat(fd)
        if info.st_size != _SECRET_BYTES or stat.S_IMODE(info.st_mode) & 0o077:
            return None  # damaged, or readable by others: replaced
        data = _read_all(fd, _SECRET_BYTES)
        return bytes(data) if data is not None else None
    finally:
        os.close(fd)


def _new_secret(directory: Path) -> bytes:
    """Writes a new secret (entries keyed by an old one become misses); the first of two
    racing writers wins and both use its secret."""
    path = directory / _SECRET_NAME
    try:
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=_TMP_PREFIX, suffix=".secret")
        try:
            os.write(fd, secrets.token_bytes(_SECRET_BYTES))
        finally:
            os.close(fd)
        if os.path.lexists(path):
            with contextlib.suppress(FileNotFoundError):
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)
        with contextlib.suppress(FileExistsError):
            os.link(tmp_name, path)
        os.unlink(tmp_name)
    except OSError as exc:
        raise _Refused(f"cannot write the profile cache's secret in {directory}: {exc}") from exc
    secret = _read_secret(directory)
    if secret is None:
        raise _Refused(f"the profile cache's secret {path} cannot be read back")
    return secret


def _remove_stale_tmp(directory: Path) -> None:
    cutoff = time.time() - STALE_TMP_S
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if not entry.name.startswith(_TMP_PREFIX):
                continue
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)


def cache_key(source: str, size_bytes: int, mtime_ns: int, version: str = "") -> str:
    """The entry's key; `version` is the rest of the source's identity (`fs.identity`: inode,
    ctime and content fingerprint, xspace/store.py `disk_key`)."""
    fields: list[object] = [source, size_bytes, mtime_ns, FORMAT_VERSION]
    if version:
        fields.append(version)
    text = json.dumps(fields)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _writable(directory: Path | None) -> tuple[Path, bytes] | None:
    """(directory, its secret), or None when caching is off or the directory is unsafe."""
    directory = directory or cache_dir()
    if directory is None:
        return None
    try:
        return directory, _checked_dir(directory)
    except _Refused as exc:
        _warn_once(directory, str(exc))
        return None
