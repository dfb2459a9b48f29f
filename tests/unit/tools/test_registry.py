"""registry.hosts_offering: the hosts whose `data` answer for a view is a document."""

from __future__ import annotations

from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.xspace_builder import XSpaceBuilder


def _profile(host: str, *, events: bool = True, iterator: bool = False) -> Profile:
    b = XSpaceBuilder(hostnames=[host])
    line = b.plane("/host:CPU").line("python", line_id=1, timestamp_ns=1_000)
    if events:
        line.event("train", 0, 1_000_000, step_num=1, _r=1)
    if iterator:
        line.event("Iterator::Root::Map", 0, 500_000)
    return decode_xspace(b.serialize())


def _offering(view: str, hosts: list[str], profiles: dict[str, Profile]) -> list[str]:
    return registry.hosts_offering(registry.VIEWS[view], hosts, profiles)


def test_one_host_run_offers_its_host_to_every_view_it_has() -> None:
    profiles = {"vm": _profile("vm")}
    assert _offering("pod_viewer", ["vm"], profiles) == ["vm"]
    assert _offering("overview_page", ["vm"], profiles) == ["vm"]
    assert _offering("memory_profile", ["vm"], profiles) == ["vm"]
    assert _offering("kernel_stats", ["vm"], profiles) == []  # no GPU plane
    assert _offering("tf_data_bottleneck_analysis", ["vm"], profiles) == []


def test_several_hosts_offer_all_hosts_only_to_combining_views() -> None:
    profiles = {"a": _profile("a"), "b": _profile("b")}
    assert _offering("pod_viewer", ["a", "b"], profiles) == ["ALL_HOSTS", "a", "b"]
    assert _offering("memory_profile", ["a", "b"], profiles) == ["a", "b"]


def test_a_host_is_offered_only_the_views_its_own_profile_has() -> None:
    profiles = {"a": _profile("a", iterator=True), "b": _profile("b"),
                "quiet": _profile("quiet", events=False)}
    hosts = ["a", "b", "quiet"]
    assert _offering("tf_data_bottleneck_analysis", hosts, profiles) == ["ALL_HOSTS", "a"]
    assert _offering("overview_page", hosts, profiles) == ["ALL_HOSTS", "a", "b"]
    assert _offering("profile_info", hosts, profiles) == ["ALL_HOSTS", "a", "b", "quiet"]


def test_an_unreadable_host_is_offered_only_by_profile_info_and_left_out_of_all_hosts() -> None:
    profiles = {"a": _profile("a"), "b": _profile("b")}  # "broken" could not be read
    hosts = ["a", "broken", "b"]
    assert _offering("overview_page", hosts, profiles) == ["ALL_HOSTS", "a", "b"]
    assert _offering("memory_profile", hosts, profiles) == ["a", "b"]
    assert _offering("profile_info", hosts, profiles) == ["ALL_HOSTS", "a", "broken", "b"]
    assert _offering("profile_info", ["broken"], {}) == ["broken"]
    assert _offering("profile_info", ["broken", "gone"], {}) == ["broken", "gone"]
