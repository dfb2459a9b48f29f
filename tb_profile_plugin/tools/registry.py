"""The views a run can offer, and which of them have data for a given run.

A `View` says, from cheap `RunFacts` (plane names and event names, read from the profiles'
metadata tables, never from events: analysis/hosts/host_facts.py, computed by the executor's workers
for ALL_HOSTS), whether it has something to show, and builds its
document from the decoded profiles of the requested host (or of every host for ALL_HOSTS).
Views register themselves in `VIEWS`; `run_tools` lists them in the order design/api.md fixes,
and `hosts_offering` says which hosts of a run a view answers for (the `hosts` route), by the
same test the `data` route applies to the requested host.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tb_profile_plugin.analysis.hosts.host_facts import HostFacts, host_facts
from tb_profile_plugin.errors import BadRequest
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.producers import PlaneKind, is_accelerator_plane, plane_kind

#: The order of design/api.md; views added beyond it come after, in registration order.
VIEW_ORDER = (
    "overview_page", "input_pipeline_analyzer", "tensorflow_stats", "trace_viewer",
    "kernel_stats", "memory_profile", "pod_viewer", "tf_data_bottleneck_analysis",
)


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


VIEWS: dict[str, View] = {}


def register(view: View) -> View:
    VIEWS[view.name] = view
    return view


def readable_only(
    paths: Mapping[str, str], facts: Mapping[str, HostFacts]
) -> tuple[dict[str, str], dict[str, HostFacts], dict[str, str]]:
    """The readable hosts' paths and facts, and {host: why} for the others (left out of an
    ALL_HOSTS view); the first host's error (a 422) when no host can be read."""
    left_out = {h: str(f.failure) for h, f in facts.items() if f.failure is not None}
    readable = {h: f for h, f in facts.items() if f.failure is None}
    if not readable:
        failure = next(f.failure for f in facts.values() if f.failure is not None)
        raise type(failure)(str(failure))  # a fresh copy: the cached one stays clean
    return {h: paths[h] for h in readable}, readable, left_out


def build_document(view: View, request: ViewRequest) -> dict[str, Any]:
    """`view`'s document; hosts left out of ALL_HOSTS (unreadable files) are named in its
    error diagnostics and its `hosts_left_out` key."""
    doc = view.build(request)
    if not request.left_out:
        return doc
    diagnostics = {kind: list(messages) for kind, messages in doc["diagnostics"].items()}
    diagnostics["errors"][:0] = [
        f"{host}: left out of {ALL_HOSTS} because its file cannot be read: {why}"
        for host, why in request.left_out.items()]
    return {**doc, "diagnostics": diagnostics, "hosts_left_out": list(request.left_out)}


def ordered_views() -> list[View]:
    known = [VIEWS[name] for name in VIEW_ORDER if name in VIEWS]
    return known + [v for name, v in VIEWS.items() if name not in VIEW_ORDER]


def views_for(facts: RunFacts) -> list[str]:
    return [view.name for view in ordered_views() if view.available(facts)]


def hosts_offering(
    view: View, hosts: Sequence[str], profiles: Mapping[str, Profile | HostFacts]
) -> list[str]:
    """The hosts of a run whose `data` answer for `view` is a document, in the run's order.

    `hosts` are the run's hosts; `profiles` the readable ones (decoded, or their `HostFacts`).
    A host is offered when the view is available on that host's profile alone (what `data`
    checks for a host); `ALL_HOSTS` comes first when the view combines hosts, the run has
    several, and the view is available on its readable hosts together (unreadable ones are
    left out of it, named in its diagnostics). An unreadable host is offered only by the views
    that show any file (available with no facts at all: profile_info), whose answer, a 422,
    says why the file cannot be read.
    """
    shows_any_file = view.available(_NO_FACTS)
    facts = {h: as_facts(p) for h, p in profiles.items()}
    offered = [
        host for host in hosts
        if (view.available(RunFacts.combine({host: facts[host]})) if host in facts
            else shows_any_file)
    ]
    if (view.combines_hosts and len(hosts) > 1 and facts
            and view.available(RunFacts.combine(facts))):
        offered.insert(0, ALL_HOSTS)
    return offered


_NO_FACTS = RunFacts(hosts=(), plane_names=frozenset(), event_names=frozenset(), num_events=0)


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


def _register_builtin_views() -> None:
    from tb_profile_plugin.tools import (  # noqa: F401  (each registers itself)
        input_pipeline_analyzer,
        kernel_stats,
        memory_profile,
        overview_page,
        pod_viewer,
        profile_info,
        tensorflow_stats,
        tf_data_bottleneck_analysis,
        trace_viewer,
    )


_register_builtin_views()
