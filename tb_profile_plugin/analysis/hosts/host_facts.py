"""What one host's profile holds, cheaply: its planes, event names, event count and messages.

`HostFacts` is what the server needs of a host to say which views a run offers (the `run_tools`
and `hosts` routes, tools/registry.py `RunFacts`) and to report the profiler's own errors and
warnings, without keeping the decoded host. For ALL_HOSTS the facts of every host come from the
executor's workers (`host_facts_file`, analysis/hosts/host_pool.py), so the server never decodes
the hosts of a pod itself; a few kB per host come back.

A file that cannot be read gives facts whose `failure` is the `ProfileError` saying why
(unreadable, or gone), so one bad host does not hide the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tb_profile_plugin import fs
from tb_profile_plugin.analysis.events.profile_cache import per_profile
from tb_profile_plugin.errors import NotFound, ProfileError, UnreadableProfile
from tb_profile_plugin.xspace.model import Profile


@dataclass(frozen=True)
class HostFacts:
    plane_names: frozenset[str]
    #: Every event metadata name of every plane (not the events themselves).
    event_names: frozenset[str]
    num_events: int
    #: The XSpace's own errors and warnings, in the profile's order, without repeats.
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: Why the file could not be read (UnreadableProfile or NotFound); None when it could.
    failure: ProfileError | None = None

    @property
    def readable(self) -> bool:
        return self.failure is None


def _facts(plane_names: Iterable[str], event_names: Iterable[str], num_events: int,
           errors: Iterable[str], warnings: Iterable[str]) -> HostFacts:
    """HostFacts from what a decode or an outline read (messages in order, without repeats)."""
    return HostFacts(frozenset(plane_names), frozenset(event_names), num_events,
                     tuple(dict.fromkeys(errors)), tuple(dict.fromkeys(warnings)))


def _host_facts(profile: Profile) -> HostFacts:
    """The facts of a decoded profile (metadata tables only, never a pass over events)."""
    return _facts((plane.name for plane in profile.planes),
                  (name for plane in profile.planes
                   for name in plane.event_metadata.names.tolist()),
                  profile.num_events, profile.errors, profile.warnings)


#: The facts of a decoded profile, built once and kept with it (every request asks for them).
host_facts = per_profile(_host_facts)


def unreadable_facts(failure: ProfileError) -> HostFacts:
    """The facts of a host that cannot be read. They are kept (per file), so they keep a copy
    of the error without its traceback, whose frames would hold the file's bytes and whatever
    the decode had built."""
    return HostFacts(frozenset(), frozenset(), 0, failure=type(failure)(str(failure)))


def host_facts_file(path: str) -> HostFacts:
    """The facts of one host file from an outline of it (xspace/decode.py `outline_xspace`):
    its metadata tables and an event count, never its event columns (a pure function for the
    executor's workers). On a 1M-event host that is 0.03 s instead of a decode and a disk-cache
    write (0.3 + 0.27 s); the analysis that follows decodes the host once, in its worker. A
    fault inside an event is found by that decode and reported for that host there."""
    from tb_profile_plugin.xspace.store import open_profile, outline_profile

    try:
        with open_profile(path, ranges=True) as data:  # (a local file: read as it is walked)
            try:
                outline = outline_profile(path, data)  # (a PyTorch trace: its decode)
            except UnreadableProfile as exc:
                raise UnreadableProfile(f"{fs.basename(path)}: {exc}") from exc
    except (UnreadableProfile, NotFound) as exc:
        return unreadable_facts(exc)
    return _facts((plane.name for plane in outline.planes),
                  (entry.name for plane in outline.planes
                   for entry in plane.event_metadata.values()),
                  outline.num_events, outline.errors, outline.warnings)
