"""PATH on the command line -> a run and its host files, and opening them with progress.

PATH is a logdir (its newest run is used), a run directory (`.../plugins/profile/<session>`,
holding `<host>.xplane.pb` files) or one `.xplane.pb`. Errors say what was searched and what
to do: NotFound (exit 3) when there is no profile, UnreadableProfile (exit 4) when a file is not
a readable XSpace.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tb_profile_plugin.commands.progress import Progress
from tb_profile_plugin.errors import NotFound
from tb_profile_plugin.logdir import ALL_HOSTS, XPLANE_SUFFIX, LogDir, Run, hosts_in
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.model import Profile
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
    if not target.exists():
        raise NotFound(
            f"{path} does not exist; give a logdir, a run directory "
            f"(.../plugins/profile/<session>) or a <host>{XPLANE_SUFFIX} file"
        )
    if target.is_file():
        if not target.name.endswith(XPLANE_SUFFIX):
            raise NotFound(
                f"{path} is a file but not a <host>{XPLANE_SUFFIX}; give a profile file, a run "
                "directory or a logdir"
            )
        located = Located(target.parent.name, {target.name[: -len(XPLANE_SUFFIX)]: str(target)})
    else:
        direct = Run(target.name, str(target), hosts_in(str(target)))
        if direct.hosts:
            located = Located(direct.name, {h: direct.xplane_path(h) for h in direct.hosts})
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
    """The request views build from: every located file opened (`open_profiles`), shown as
    `host`, else as the run's one host, else as ALL_HOSTS."""
    shown = host or (located.hosts[0] if len(located.files) == 1 else ALL_HOSTS)
    profiles = open_profiles(located.files, ProfileStore(), progress)
    return registry.ViewRequest(located.run, shown, profiles, params, paths=dict(located.files))
