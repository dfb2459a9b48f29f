"""What a view is: its request, the run's facts it is offered on, and its document's tables.

Every view module (`tools/<view>.py`) defines `VIEW = View(...)` from these types; the
registry (`tools/registry.py`) lists the views and is the only module that imports them, so
arrows run registry -> views -> this module, never back.

A `View` says, from cheap `RunFacts` (plane names and event names, read from the profiles'
metadata tables, never from events: analysis/hosts/host_facts.py, computed by the executor's
workers for ALL_HOSTS), whether it has something to show, and builds its document from the
decoded profiles of the requested host (or of every host for ALL_HOSTS).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tb_profile_plugin.analysis.hosts.host_facts import HostFacts, host_facts
from tb_profile_plugin.errors import BadRequest
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import PlaneKind, is_accelerator_plane, plane_kind


@dataclass(frozen=True)
class RunFacts:
    """What a run holds, cheaply: per host, its planes and the event names they define."""

    hosts: tuple[str, ...]
    plane_names: frozenset[str]
    event_names: frozenset[str]
    num_events: int

    @property
    def has_device_planes(self) -> bool:
        """An accelerator plane (GPU, TPU, other device); a `/device:CUSTOM:*` trace is none."""
        return any(is_accelerator_plane(name) for name in self.plane_names)

    @property
    def has_gpu_planes(self) -> bool:
        return any(plane_kind(name) == PlaneKind.GPU for name in self.plane_names)

    @staticmethod
    def of(profiles: Mapping[str, Profile | HostFacts]) -> RunFacts:
        """The facts of decoded profiles, or of hosts' `HostFacts` (from the workers)."""
        return RunFacts.combine({h: as_facts(p) for h, p in profiles.items()})

    @staticmethod
    def combine(hosts: Mapping[str, HostFacts]) -> RunFacts:
        if len(hosts) == 1:  # one host: its sets as they are (no copy of every name per request)
            (facts,) = hosts.values()
            return RunFacts(hosts=tuple(hosts), plane_names=facts.plane_names,
                            event_names=facts.event_names, num_events=facts.num_events)
        planes: set[str] = set()
        events: set[str] = set()
        for facts in hosts.values():
            planes |= facts.plane_names
            events |= facts.event_names
        return RunFacts(
            hosts=tuple(hosts), plane_names=frozenset(planes), event_names=frozenset(events),
            num_events=sum(f.num_events for f in hosts.values()),
        )


def as_facts(profile: Profile | HostFacts) -> HostFacts:
    return profile if isinstance(profile, HostFacts) else host_facts(profile)


class LazyProfiles(Mapping[str, Profile]):
    """{host: Profile} that decodes (through `open_profile`, the store) only the hosts a view
    reads, when it reads them, and holds none: ALL_HOSTS views that combine per-host results
    computed on the executor never decode a host in the server."""

    def __init__(self, paths: Mapping[str, str], open_profile: Callable[[str], Profile]) -> None:
        self._paths = dict(paths)
        self._open = open_profile

    def __getitem__(self, host: str) -> Profile:
        return self._open(self._paths[host])

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


@dataclass(frozen=True)
class ViewRequest:
    """Everything a view builds from: the decoded profiles by host, and the query."""

    run: str
    host: str  # a host name, or ALL_HOSTS
    profiles: Mapping[str, Profile]
    params: Mapping[str, str]
    #: The xplane file of each host, where known: lets ALL_HOSTS views analyse the hosts on
    #: the executor with a per-file cache (analysis/hosts/host_pool.py).
    paths: Mapping[str, str] = field(default_factory=dict)
    #: Each host's facts, where already known (the plugin's ALL_HOSTS requests: from the
    #: workers); else `host_facts` reads them from the profiles.
    facts: Mapping[str, HostFacts] = field(default_factory=dict)
    #: ALL_HOSTS: the run's hosts whose file could not be read, and why; they are left out
    #: of `profiles` and named in the document's diagnostics (`build_document`).
    left_out: Mapping[str, str] = field(default_factory=dict)

    def host_facts(self) -> dict[str, HostFacts]:
        """Every requested host's facts, in host order."""
        if set(self.facts) >= set(self.profiles):
            return {h: self.facts[h] for h in self.profiles}
        return {h: host_facts(p) for h, p in self.profiles.items()}

    def run_facts(self) -> RunFacts:
        return RunFacts.combine(self.host_facts())


Table = tuple[list[str], list[list[Any]]]


@dataclass(frozen=True)
class View:
    name: str
    version: int
    build: Callable[[ViewRequest], dict[str, Any]]
    available: Callable[[RunFacts], bool]
    #: Whether the view accepts ALL_HOSTS (combines the hosts of a run).
    combines_hosts: bool = False
    #: CSV tables: name -> function from the view document to (header, rows).
    tables: Mapping[str, Callable[[dict[str, Any]], Table]] = field(default_factory=dict)
    #: Whether the plugin may answer a repeated request from the finished document
    #: (document_cache.py): the document is a function of the host files and the query alone.
    keeps_documents: bool = True
    #: Whether the view's first document reads the events alone (the trace viewer's first
    #: window): a big profile it opens first is decoded with its lines' stats walked when first
    #: used (ProfileStore.open `stats_later`, xspace/stats_later.py).
    events_first: bool = False


def float_param(params: Mapping[str, str], key: str) -> float | None:
    """A query parameter as a finite number; None when absent or empty."""
    text = params.get(key)
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise BadRequest(f"{key}={text!r} is not a number") from None
    if not math.isfinite(value):
        raise BadRequest(f"{key}={text!r} is not a finite number")
    return value


def int_param(params: Mapping[str, str], key: str, default: int | None) -> int | None:
    """A query parameter as a non-negative integer; `default` when absent or empty."""
    text = params.get(key)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"{key}={text!r} is not an integer") from None
    if value < 0:
        raise BadRequest(f"{key}={value} is negative")
    return value
