"""PATH on the command line -> a run and its host files, and opening them with progress.

PATH is a logdir (its newest run is used), a run directory (`.../plugins/profile/<session>`,
holding `<host>.xplane.pb` files, or a directory of PyTorch `*.pt.trace.json[.gz]` files: its
newest capture) or one `.xplane.pb` / `.pt.trace.json[.gz]`. Errors say what was searched and what
to do: NotFound (exit 3) when there is no profile, UnreadableProfile (exit 4) when a file is not
a readable XSpace.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tb_profile_plugin.analysis.hosts import executors, host_pool
from tb_profile_plugin.commands.progress import Progress
from tb_profile_plugin.errors import NotFound
from tb_profile_plugin.logdir import (
    ALL_HOSTS,
    XPLANE_SUFFIX,
    LogDir,
    Run,
    hosts_in,
    kineto_runs,
)
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import is_kineto_file, kineto_worker
from tb_profile_plugin.xspace.store import ProfileStore

_HOW_TO_CAPTURE = (
    "capture one with the Keras TensorBoard callback (profile_batch=...), "
    "tf.profiler.experimental.start/stop or tb-profile capture"
)


@dataclass(frozen=True)
class Located:
    """A run found from PATH: its name, its host files, and what else PATH held."""

    run: str
    files: Mapping[str, str]  # host -> .xplane.pb path
    other_runs: int = 0  # runs under a logdir PATH besides the one shown (the newest)

    @property
    def hosts(self) -> list[str]:
        return list(self.files)

    def size_bytes(self) -> int:
        return sum(os.path.getsize(p) for p in self.files.values() if os.path.isfile(p))


def locate(path: str, host: str | None = None) -> Located:
    """The run at PATH; with `host` (not ALL_HOSTS) only that host's file."""
    target = Path(path)
    kineto = is_kineto_file(target.name)  # a PyTorch trace (docs/pytorch.md)
    named_as_profile = (target.name.endswith(XPLANE_SUFFIX) or kineto) and os.path.lexists(
        target)
    if not target.exists() and not named_as_profile:
        raise NotFound(
            f"{path} does not exist; give a logdir, a run directory "
            f"(.../plugins/profile/<session>) or a <host>{XPLANE_SUFFIX} file"
        )
    # A <host>.xplane.pb is opened as a profile whatever it is (a FIFO, a device, a link loop,
    # a directory): the store refuses what is not a regular file, with a sentence (exit 4).
    if target.is_file() or named_as_profile:
        if not target.name.endswith(XPLANE_SUFFIX) and not kineto:
            raise NotFound(
                f"{path} is a file but not a <host>{XPLANE_SUFFIX} nor a PyTorch "
                "<worker>.<time>.pt.trace.json[.gz]; give a profile file, a run directory or a "
                "logdir"
            )
        host = kineto_worker(target.name)[0] if kineto else target.name[: -len(XPLANE_SUFFIX)]
        located = Located(target.parent.name, {host: str(target)})
    else:
        direct = Run(target.name, str(target), hosts_in(str(target)))
        pytorch = kineto_runs(str(target), target.name) if not direct.hosts else []
        if direct.hosts:
            located = Located(direct.name, {h: direct.xplane_path(h) for h in direct.hosts})
        elif any(run.hosts for run in pytorch):  # the newest capture of the directory
            run = pytorch[-1]
            located = Located(run.name, {h: run.xplane_path(h) for h in run.hosts},
                              other_runs=len(pytorch) - 1)
        else:
            runs = LogDir(str(target)).runs()
            if not runs:
                raise NotFound(
                    f"no profile under {path}: looked for <host>{XPLANE_SUFFIX} files in it and "
                    f"for plugins/profile/<session>/<host>{XPLANE_SUFFIX} at any depth below it; "
                    + _HOW_TO_CAPTURE
                )
            run = runs[0]
            located = Located(
                run.name, {h: run.xplane_path(h) for h in run.hosts}, other_runs=len(runs) - 1
            )
    if host and host != ALL_HOSTS:
        if host not in located.files:
            raise NotFound(f"no host {host!r} in {path}; its hosts: {', '.join(located.files)}")
        located = Located(located.run, {host: located.files[host]}, located.other_runs)
    return located


def open_profiles(
    files: Mapping[str, str], store: ProfileStore, progress: Progress
) -> dict[str, Profile]:
    """Decode (or load from the cache) each host's file, one progress stage each."""
    profiles = {}
    for host, file in files.items():
        progress.stage(f"reading {host}")
        profiles[host] = store.open(file)
    return profiles


def view_request(
    located: Located, host: str | None, params: Mapping[str, str], progress: Progress
) -> registry.ViewRequest:
    """The request views build from, shown as `host`, else as the run's one host, else as
    ALL_HOSTS. One file is opened here (`open_profiles`); several are read by the executor's
    workers (their facts now, their analyses when the view asks), and decoded here only if
    the view reads them itself (registry.LazyProfiles)."""
    shown = host or (located.hosts[0] if len(located.files) == 1 else ALL_HOSTS)
    store = ProfileStore()
    if len(located.files) == 1:
        profiles = open_profiles(located.files, store, progress)
        return registry.ViewRequest(located.run, shown, profiles, params,
                                    paths=dict(located.files))
    facts = host_pool.facts_of_files(
        located.files, store, on_host=lambda host: progress.stage(f"reading {host}"))
    paths, facts, left_out = registry.readable_only(located.files, facts)
    return registry.ViewRequest(
        located.run, shown, registry.LazyProfiles(paths, store.open), params,
        paths=paths, facts=facts, left_out=left_out)


def add_scheduler_argument(parser: argparse.ArgumentParser) -> None:
    """`--scheduler tcp://HOST:8786`: analyse several hosts on a Dask cluster."""
    parser.add_argument(
        "--scheduler", default=None, metavar="tcp://HOST:8786",
        help="analyse the hosts of a several-host run on this Dask scheduler's workers "
        f"(default: ${executors.SCHEDULER_ENV}, else a local process pool); needs "
        'pip install "tb-profile[dask]"')


def use_scheduler(args: argparse.Namespace) -> None:
    executors.configure(getattr(args, "scheduler", None))
