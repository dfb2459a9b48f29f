"""Runs, sessions and hosts of a logdir, and safe resolution of request parameters to files.

Layout (as TensorFlow, Keras and the Capture Profile dialog write it):

    <logdir>/plugins/profile/<session>/<host>.xplane.pb            run "<session>"
    <logdir>/<tb_run>/plugins/profile/<session>/<host>.xplane.pb   run "<tb_run>/<session>"

`<tb_run>` may be any depth (Keras writes `<logdir>/train/...`).

PyTorch (docs/pytorch.md): any directory holding `<worker>.<timestamp>.pt.trace.json[.gz]`
files (`torch.profiler.tensorboard_trace_handler(<logdir>/<run>)`) is a run named by its path
from the logdir (files directly in the logdir: the logdir's own directory name); each file is a
host named by its worker. Where a worker has several files (one per capture), the directory's
runs are `<run>/capture<k>`: the k-th file of every worker, by timestamp. Safety: a run name is only
ever looked up among the runs found by walking the logdir, and a host among the files of that
run; request text is never joined onto a path, so nothing outside the logdir is opened.

Symbolic links: the walk does not descend into linked directories, and a linked session
directory or host file is listed only when it resolves inside the logdir (checked again when a
host file is opened), unless `TB_PROFILE_FOLLOW_LINKS=1` (`fs.follow_links`), which follows
every link (loops are detected). Host files are read only if regular (fs.read_bytes). The
links a walk left out are counted (`LogDir.links_left_out`, `links_message`), so a logdir of
linked runs says why it looks empty instead of "no profiles".

Scans: a walk is reused for `RESCAN_AFTER_S`; while one thread walks, others are answered from
the last walk instead of waiting. An unknown run name triggers a rescan at most
`FORCED_RESCANS` times in a burst, then once per `FORCED_RESCAN_INTERVAL_S` (or ten times the
last walk's duration, if longer); otherwise it is answered from the last walk, so requests for
unknown names cannot keep the logdir busy or delay the others.
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
from tb_profile_plugin.xspace.producers.pytorch import is_kineto_file, kineto_worker

PLUGIN_SUBDIR = ("plugins", "profile")
XPLANE_SUFFIX = ".xplane.pb"
ALL_HOSTS = "ALL_HOSTS"
#: How long a walk of the logdir is reused before runs are looked for again.
RESCAN_AFTER_S = 2.0
#: Unknown run names may force this many walks at once, then one per interval (token bucket).
FORCED_RESCANS = 3
FORCED_RESCAN_INTERVAL_S = 1.0

_SAFE_NAME = re.compile(r"^[^\x00-\x1f\\]+$")


@dataclass(frozen=True)
class Run:
    """One profiling session: a directory holding `<host>.xplane.pb` files."""

    name: str
    directory: str
    hosts: tuple[str, ...]
    #: The logdir, links resolved, that the run's files must stay in ("": not checked).
    root_real: str = ""
    #: Host files left out because they are links leading outside the logdir.
    outside_links: int = 0
    #: The host files' names, parallel to `hosts`, where they are not `<host>.xplane.pb`
    #: (PyTorch traces); empty for XPlane runs.
    files: tuple[str, ...] = ()

    def xplane_path(self, host: str) -> str:
        """The host's file; NotFound if it has become a link leading outside the logdir."""
        name = self.files[self.hosts.index(host)] if self.files else host + XPLANE_SUFFIX
        path = fs.join(self.directory, name)
        if self.root_real and not fs.is_remote(path) and not fs.follow_links() \
                and not fs.inside(path, self.root_real):
            raise NotFound(
                f"host file {fs.basename(path)} of run {self.name!r} is a link leading "
                f"outside the logdir, which is not read; set {fs.FOLLOW_LINKS_ENV}=1 to follow "
                "such links")
        return path


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
        self._scanned = threading.Condition(self._lock)
        self._runs: dict[str, Run] = {}
        self._links_left_out = 0  # of the last walk (links_left_out)
        self._scanned_at = float("-inf")  # when the last walk started (monotonic s)
        self._scan_duration_s = 0.0
        self._scanning = False
        self._forced_tokens = float(FORCED_RESCANS)
        self._tokens_at = time.monotonic()
        #: Walks done (tests read it).
        self.scan_count = 0

    def links_left_out(self) -> int:
        """Symbolic links leading outside the logdir that the last walk left out: linked
        directories not descended into, linked sessions and linked host files (0 when
        TB_PROFILE_FOLLOW_LINKS=1 or the logdir is remote)."""
        self._scan(force=False)
        with self._lock:
            return self._links_left_out

    def runs(self) -> list[Run]:
        """Runs that hold at least one host file, newest session first."""
        runs = [run for run in self._scan(force=False).values() if run.hosts]
        return sorted(runs, key=lambda r: (r.name.rsplit("/", 1)[-1], r.name), reverse=True)

    def run(self, name: str) -> Run:
        """The run called `name`; BadRequest for unsafe text, NotFound for unknown runs."""
        check_name(name, "run")
        run = self._scan(force=False).get(name)
        if run is None and self._take_forced_rescan():
            run = self._scan(force=True).get(name)
        if run is None:
            raise NotFound(
                f"no run {name!r} under the logdir; runs are <tb_run>/<session> directories "
                "holding plugins/profile/<session>/<host>.xplane.pb"
            )
        if not run.hosts:
            links = (f" ({run.outside_links} link(s) leading outside the logdir were left out; "
                     f"{fs.FOLLOW_LINKS_ENV}=1 follows them)" if run.outside_links else "")
            raise NotFound(
                f"run {name!r} holds no <host>{XPLANE_SUFFIX} file{links}: the capture failed "
                "or is still being written; capture again, or wait and reload"
            )
        return run

    def refresh(self) -> None:
        """Walk the logdir now (after this process wrote a run: a capture)."""
        self._scan(force=True, wait=True)

    def check_writable(self, relative: str) -> None:
        """BadRequest unless writing `<logdir>/<relative>/plugins/profile/...` stays inside the
        logdir: no existing directory on the way may be a link leading out of it."""
        if relative:
            check_name(relative, "run")
        if not self.root or fs.is_remote(self.root) or fs.follow_links():
            return
        root_real = os.path.realpath(self.root)
        target = os.path.join(self.root, *[p for p in relative.split("/") if p], *PLUGIN_SUBDIR)
        current = target
        while not os.path.lexists(current) and current != self.root:
            current = os.path.dirname(current)
        if not fs.inside(current, root_real):
            raise BadRequest(
                f"run {relative!r} leads outside the logdir through a symbolic link, so nothing "
                f"is written there; choose another run name, or set {fs.FOLLOW_LINKS_ENV}=1")

    def host_path(self, run: Run, host: str) -> str:
        """The xplane file of `host` in `run`; BadRequest for unsafe text, NotFound if absent."""
        check_host_name(host)
        if host not in run.hosts:
            raise NotFound(f"run {run.name!r} has no host {host!r}; it has {', '.join(run.hosts)}")
        return run.xplane_path(host)

    def _take_forced_rescan(self) -> bool:
        """Whether an unknown run name may walk the logdir now (token bucket, module doc)."""
        with self._lock:
            now = time.monotonic()
            interval = max(FORCED_RESCAN_INTERVAL_S, 10 * self._scan_duration_s)
            self._forced_tokens = min(
                float(FORCED_RESCANS), self._forced_tokens + (now - self._tokens_at) / interval)
            self._tokens_at = now
            if self._forced_tokens < 1 or self._scanning:
                return False
            self._forced_tokens -= 1
            return True

    def _scan(self, force: bool, wait: bool = False) -> dict[str, Run]:
        """The runs of the last walk, walking first if it is stale (or `force`). One thread
        walks at a time; the others are answered from the last walk (or, the first time or
        with `wait`, wait for the walk in progress and then walk again if still stale)."""
        with self._lock:
            while True:
                stale = force or time.monotonic() - self._scanned_at > RESCAN_AFTER_S
                if not stale:
                    return self._runs
                if not self._scanning:
                    break
                if self.scan_count > 0 and not wait:
                    return self._runs  # another thread is walking: the last walk answers
                self._scanned.wait()
            self._scanning = True
        started = time.monotonic()
        runs: dict[str, Run] | None = None
        links = 0
        try:
            found = _find_runs(self.root)
            runs = {run.name: run for run in found}
            links = getattr(found, "links_left_out", 0)
        finally:
            with self._lock:
                if runs is not None:
                    self._runs = runs
                    self._links_left_out = links
                    self._scanned_at = started
                    self._scan_duration_s = time.monotonic() - started
                    self.scan_count += 1
                self._scanning = False
                self._scanned.notify_all()
        return runs


class FoundRuns(list[Run]):
    """The runs of one walk, and how many links leading outside the logdir it left out."""

    links_left_out: int = 0


def _find_runs(root: str) -> FoundRuns:
    """Walk the logdir once; every `plugins/profile/<session>/` is a run. Counts the links
    leading outside the logdir that are left out (`FoundRuns.links_left_out`)."""
    runs = FoundRuns()
    if not root or not fs.isdir(root):
        return runs
    remote = fs.is_remote(root)
    follow = fs.follow_links() and not remote
    root_real = "" if remote or follow else os.path.realpath(root)
    seen: set[str] = set()
    for directory, subdirs, files in fs.walk(root, followlinks=follow):
        if follow:
            real = os.path.realpath(directory)
            if real in seen:  # a symlink loop: do not descend again
                subdirs[:] = []
                continue
            seen.add(real)
        if any(is_kineto_file(name) for name in files):
            found = kineto_runs(directory, _kineto_run_name(root, directory), root_real,
                                [name for name in files if is_kineto_file(name)])
            runs.extend(found)
            runs.links_left_out += sum(run.outside_links for run in found[:1])
        if _parts(directory)[-2:] != list(PLUGIN_SUBDIR):
            if root_real:  # linked directories leading out: os.walk does not descend
                runs.links_left_out += sum(
                    1 for d in subdirs if os.path.islink(os.path.join(directory, d))
                    and not fs.inside(os.path.join(directory, d), root_real))
            continue
        subdirs_here = list(subdirs)
        subdirs[:] = []  # sessions are leaves: do not descend into them again
        tb_run = _relative(root, _parent(_parent(directory)))
        for session in sorted(subdirs_here):
            session_dir = fs.join(directory, session)
            if root_real and not fs.inside(session_dir, root_real):
                runs.links_left_out += 1  # a linked session directory leading outside
                continue
            name = session if tb_run in ("", ".") else f"{tb_run}/{session}"
            hosts, outside = _hosts_and_outside_links(session_dir, root_real)
            runs.links_left_out += outside
            runs.append(Run(name=name, directory=session_dir, hosts=hosts, root_real=root_real,
                            outside_links=outside))
    return runs


def _kineto_run_name(root: str, directory: str) -> str:
    relative = _relative(root, directory)
    if relative in ("", "."):
        return _parts(root)[-1] if _parts(root) else "run"
    return relative


def kineto_runs(directory: str, name: str, root_real: str = "",
                names: list[str] | None = None) -> list[Run]:
    """The PyTorch runs of the `*.pt.trace.json[.gz]` files directly in `directory` (module
    doc: one run, or `<name>/capture<k>` where a worker has several files); links leading
    outside `root_real` are left out (counted on each run as `outside_links`)."""
    if names is None:
        try:
            names = [n for n in fs.listdir(directory) if is_kineto_file(n)]
        except OSError:
            return []
    outside = 0
    if root_real and not fs.is_remote(directory):
        kept = []
        for n in names:
            path = os.path.join(directory, n)
            if os.path.islink(path) and not fs.inside(path, root_real):
                outside += 1
            else:
                kept.append(n)
        names = kept
    by_worker: dict[str, list[tuple[int, str]]] = {}
    for n in sorted(names):
        worker, stamp = kineto_worker(n)
        by_worker.setdefault(worker, []).append((stamp, n))
    if not by_worker:
        return [Run(name, directory, (), root_real, outside)] if outside else []
    captures = max(len(files) for files in by_worker.values())
    runs = []
    for k in range(captures):
        hosts = sorted(w for w, files in by_worker.items() if len(files) > k)
        files = tuple(sorted(by_worker[w])[k][1] for w in hosts)
        run_name = name if captures == 1 else f"{name}/capture{k + 1}"
        runs.append(Run(run_name, directory, tuple(hosts), root_real, outside, files))
    return runs


def hosts_in(directory: str, root: str | None = None) -> tuple[str, ...]:
    """The hosts of the `<host>.xplane.pb` files directly in `directory`, sorted; a link
    leading outside `root` (default: `directory`) is left out unless links are followed."""
    confine = "" if fs.is_remote(directory) or fs.follow_links() else os.path.realpath(
        root if root is not None else directory)
    return _hosts_and_outside_links(directory, confine)[0]


def _hosts_and_outside_links(directory: str, root_real: str) -> tuple[tuple[str, ...], int]:
    """(hosts, links left out): the `<host>.xplane.pb` entries of `directory`, sorted, less the
    symbolic links that resolve outside `root_real` (none left out when it is "")."""
    if fs.is_remote(directory):
        names = [n for n in fs.listdir(directory) if _is_host_file(n)]
        return tuple(sorted(n[: -len(XPLANE_SUFFIX)] for n in names)), 0
    hosts: list[str] = []
    outside = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:  # gone, or not a directory: no hosts
        return (), 0
    for entry in entries:
        if not _is_host_file(entry.name):
            continue
        if root_real and entry.is_symlink() and not fs.inside(entry.path, root_real):
            outside += 1
            continue
        hosts.append(entry.name[: -len(XPLANE_SUFFIX)])
    return tuple(sorted(hosts)), outside


def _is_host_file(name: str) -> bool:
    return name.endswith(XPLANE_SUFFIX) and len(name) > len(XPLANE_SUFFIX)


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p]


def _parent(path: str) -> str:
    return posixpath.dirname(path.rstrip("/")) if fs.is_remote(path) else os.path.dirname(path)


def _relative(root: str, path: str) -> str:
    if fs.is_remote(root):
        return posixpath.relpath(path.rstrip("/"), root.rstrip("/"))
    return os.path.relpath(path, root).replace(os.sep, "/")


def links_message(count: int) -> str | None:
    """What the empty run list says about `count` links left out (None when none)."""
    if count <= 0:
        return None
    what = "symbolic link leads" if count == 1 else "symbolic links lead"
    return (f"{count} {what} outside the logdir and {'was' if count == 1 else 'were'} left out: "
            f"linked runs are not followed by default. To read them, restart TensorBoard with "
            f"{fs.FOLLOW_LINKS_ENV}=1 in its environment (README, \"Settings\").")
