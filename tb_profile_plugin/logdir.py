"""Runs, sessions and hosts of a logdir, and safe resolution of request parameters to files.

Layout (as TensorFlow, Keras and the Capture Profile dialog write it):

    <logdir>/plugins/profile/<session>/<host>.xplane.pb            run "<session>"
    <logdir>/<tb_run>/plugins/profile/<session>/<host>.xplane.pb   run "<tb_run>/<session>"

`<tb_run>` may be any depth (Keras writes `<logdir>/train/...`). Safety: a run name is only
ever looked up among the runs found by walking the logdir, and a host among the files of that
run; request text is never joined onto a path, so nothing outside the logdir is opened.
"""

from __future__ import annotations

import os
import posixpath
import re
import threading
import time
from dataclasses import dataclass

from tb_profile_plugin import fs
from tb_profile_plugin.errors import BadRequest, NotFound

PLUGIN_SUBDIR = ("plugins", "profile")
XPLANE_SUFFIX = ".xplane.pb"
ALL_HOSTS = "ALL_HOSTS"
#: How long a walk of the logdir is reused before runs are looked for again.
RESCAN_AFTER_S = 2.0

_SAFE_NAME = re.compile(r"^[^\x00-\x1f\\]+$")


@dataclass(frozen=True)
class Run:
    """One profiling session: a directory holding `<host>.xplane.pb` files."""

    name: str
    directory: str
    hosts: tuple[str, ...]

    def xplane_path(self, host: str) -> str:
        return fs.join(self.directory, host + XPLANE_SUFFIX)


def check_name(value: str, what: str) -> str:
    """Reject parameter text that could only be an attempt to leave the logdir."""
    if not value:
        raise BadRequest(f"the {what} parameter is missing")
    parts = value.split("/")
    if (
        not _SAFE_NAME.match(value)
        or value.startswith("/")
        or any(part in ("", ".", "..") for part in parts)
        or re.match(r"^[A-Za-z]:", value)
        or "://" in value
    ):
        raise BadRequest(
            f"{what} {value!r} is not a valid name: names are relative, without '..', '.', "
            "empty parts, backslashes or control characters"
        )
    return value


def check_host_name(host: str) -> str:
    """A host is a file stem: no separators, no '.' or '..', no control characters."""
    if not host or "/" in host or "\\" in host or host in (".", "..") or "\x00" in host:
        raise BadRequest(f"host {host!r} is not a valid host name (a file stem, no '/')")
    return host


class LogDir:
    """Finds the profile runs below one logdir (local or remote) and resolves names safely."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}
        self._scanned_at = float("-inf")

    def runs(self) -> list[Run]:
        """Runs that hold at least one host file, newest session first."""
        runs = [run for run in self._scan(force=False).values() if run.hosts]
        return sorted(runs, key=lambda r: (r.name.rsplit("/", 1)[-1], r.name), reverse=True)

    def run(self, name: str) -> Run:
        """The run called `name`; BadRequest for unsafe text, NotFound for unknown runs."""
        check_name(name, "run")
        run = self._scan(force=False).get(name) or self._scan(force=True).get(name)
        if run is None:
            raise NotFound(
                f"no run {name!r} under the logdir; runs are <tb_run>/<session> directories "
                "holding plugins/profile/<session>/<host>.xplane.pb"
            )
        if not run.hosts:
            raise NotFound(
                f"run {name!r} holds no <host>{XPLANE_SUFFIX} file: the capture failed or is "
                "still being written; capture again, or wait and reload"
            )
        return run

    def host_path(self, run: Run, host: str) -> str:
        """The xplane file of `host` in `run`; BadRequest for unsafe text, NotFound if absent."""
        check_host_name(host)
        if host not in run.hosts:
            raise NotFound(f"run {run.name!r} has no host {host!r}; it has {', '.join(run.hosts)}")
        return run.xplane_path(host)

    def _scan(self, force: bool) -> dict[str, Run]:
        with self._lock:
            if force or time.monotonic() - self._scanned_at > RESCAN_AFTER_S:
                self._runs = {run.name: run for run in _find_runs(self.root)}
                self._scanned_at = time.monotonic()
            return self._runs


def _find_runs(root: str) -> list[Run]:
    """Walk the logdir once; every `plugins/profile/<session>/` is a run."""
    runs: list[Run] = []
    if not root or not fs.isdir(root):
        return runs
    seen: set[str] = set()
    for directory, subdirs, _ in fs.walk(root):
        if not fs.is_remote(directory):
            real = os.path.realpath(directory)
            if real in seen:  # a symlink loop: do not descend again
                subdirs[:] = []
                continue
            seen.add(real)
        if _parts(directory)[-2:] != list(PLUGIN_SUBDIR):
            continue
        subdirs_here = list(subdirs)
        subdirs[:] = []  # sessions are leaves: do not descend into them again
        tb_run = _relative(root, _parent(_parent(directory)))
        for session in sorted(subdirs_here):
            session_dir = fs.join(directory, session)
            name = session if tb_run in ("", ".") else f"{tb_run}/{session}"
            runs.append(Run(name=name, directory=session_dir, hosts=hosts_in(session_dir)))
    return runs


def hosts_in(directory: str) -> tuple[str, ...]:
    """The hosts of the `<host>.xplane.pb` files directly in `directory`, sorted."""
    return tuple(sorted(
        name[: -len(XPLANE_SUFFIX)]
        for name in fs.listdir(directory)
        if name.endswith(XPLANE_SUFFIX) and len(name) > len(XPLANE_SUFFIX)
    ))


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p]


def _parent(path: str) -> str:
    return posixpath.dirname(path.rstrip("/")) if fs.is_remote(path) else os.path.dirname(path)


def _relative(root: str, path: str) -> str:
    if fs.is_remote(root):
        return posixpath.relpath(path.rstrip("/"), root.rstrip("/"))
    return os.path.relpath(path, root).replace(os.sep, "/")
