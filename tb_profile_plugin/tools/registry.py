"""The views a run can offer, in their order, and which of them have data for a given run.

`VIEWS` lists every view (`tools/<view>.py` defines its `VIEW`; the types are `tools/view.py`):
this module imports the views and no view imports it back. `ordered_views` / `views_for` give
them in the order design/api.md fixes (`run_tools`), `hosts_offering` says which hosts of a
run a view answers for (the `hosts` route), by the same test the `data` route applies to the
requested host, and `build_document` builds one view's document for a request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tb_profile_plugin.analysis.hosts.host_facts import HostFacts
from tb_profile_plugin.logdir import ALL_HOSTS
from tb_profile_plugin.tools import (
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
from tb_profile_plugin.tools.view import (  # noqa: F401  (the view types, for the registry's callers)
    LazyProfiles,
    RunFacts,
    Table,
    View,
    ViewRequest,
    as_facts,
    float_param,
    int_param,
)
from tb_profile_plugin.xspace.model import Profile

#: The order of design/api.md; views added beyond it come after, in registration order.
VIEW_ORDER = (
    "overview_page", "input_pipeline_analyzer", "tensorflow_stats", "trace_viewer",
    "kernel_stats", "memory_profile", "pod_viewer", "tf_data_bottleneck_analysis",
)


def ordered_views() -> list[View]:
    known = [VIEWS[name] for name in VIEW_ORDER if name in VIEWS]
    return known + [v for name, v in VIEWS.items() if name not in VIEW_ORDER]


#: Every view by name (this dict's order is the registration order `ordered_views` ends with).
VIEWS: dict[str, View] = {
    view.name: view
    for view in (
        overview_page.VIEW,
        input_pipeline_analyzer.VIEW,
        kernel_stats.VIEW,
        memory_profile.VIEW,
        pod_viewer.VIEW,
        profile_info.VIEW,
        tensorflow_stats.VIEW,
        tf_data_bottleneck_analysis.VIEW,
        trace_viewer.VIEW,
    )
}


profile_info.report_on(ordered_views)  # what every view needs, itself included


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
