"""The trace index's build drops the analyses it made for its derived tracks (trace/derived.py
`prepare`, then `profile_cache.forget_made`): the event table, nesting, forest, XLA executions
and steps are not held beside the index for as long as the store keeps the profile, nor after
a build that failed; those an earlier view built stay, and so do these while another thread
builds a result of the profile; a view that reads them later builds them again, with the same
answer."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tb_profile_plugin.analysis.events.profile_cache import (
    built,
    per_profile,
    profile_forest,
    profile_nested,
)
from tb_profile_plugin.analysis.steps.profile_steps import profile_steps
from tb_profile_plugin.analysis.steps.xla_executions import profile_executions
from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
from tb_profile_plugin.trace import index as index_module
from tb_profile_plugin.trace.index import build_index
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile, result_nbytes

DATA = Path(__file__).resolve().parents[2] / "data"
ANALYSES = (profile_nested, profile_forest, profile_executions, profile_steps)


def _profile(capture: str) -> Profile:
    return decode_xspace(next((DATA / capture).glob("**/*.xplane.pb")).read_bytes())


def _overview(profile: Profile) -> str:
    view = registry.VIEWS["overview_page"]
    return json_text(view.build(registry.ViewRequest("run", "host", {"host": profile}, {})))


@pytest.mark.parametrize("capture", ["jax_nvidia_train", "jax_nvidia_device_bound"])
def test_a_gpu_index_keeps_none_of_the_analyses_it_made(capture: str) -> None:
    profile = _profile(capture)
    index = build_index(profile)
    assert index.num_derived_events > 0
    assert [built(profile, a) for a in ANALYSES] == [None] * len(ANALYSES)
    # What the store counts for the profile's results no longer has the event table's bytes
    # (a profile whose overview came first holds them, and its index keeps them).
    held = _profile(capture)
    _overview(held)
    build_index(held)
    table_nbytes = result_nbytes(built(held, profile_nested), set())
    assert table_nbytes > 0
    assert held.derived.nbytes - profile.derived.nbytes >= table_nbytes
    # A view that reads them builds them again: the same overview as on a fresh profile.
    assert _overview(profile) == _overview(_profile(capture))
    assert built(profile, profile_forest) is not None


def test_the_analyses_an_earlier_view_built_stay() -> None:
    profile = _profile("jax_nvidia_train")
    _overview(profile)
    before = {a: built(profile, a) for a in ANALYSES}
    assert all(result is not None for result in before.values())
    build_index(profile)
    assert all(built(profile, a) is before[a] for a in ANALYSES)  # the same objects, kept


def test_the_derived_tracks_are_the_same_whichever_view_came_first() -> None:
    alone, after = _profile("jax_nvidia_train"), _profile("jax_nvidia_train")
    _overview(after)
    a, b = build_index(alone), build_index(after)
    assert a.num_derived_events == b.num_derived_events > 0
    for name in ("start_ps", "end_ps", "name_id", "source_row"):
        assert (getattr(a, name) == getattr(b, name)).all()
    assert a.names == b.names


def test_a_build_that_fails_keeps_none_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = _profile("jax_nvidia_train")
    tables = []

    def failing(profile: Profile, *args: Any) -> Any:
        table = profile_nested(profile).table  # what prepare made, its columns read
        assert table._canonical is not None
        tables.append(table)
        raise RuntimeError("stopped while the tracks were made")

    monkeypatch.setattr(index_module, "derive_tracks", failing)
    with pytest.raises(RuntimeError, match="stopped"):
        build_index(profile)
    assert [built(profile, a) for a in ANALYSES] == [None] * len(ANALYSES)
    # The table the build read let its scratch columns go too.
    assert tables[0]._canonical is None and not tables[0]._stat_cache


_gate = threading.Event()
_entered = threading.Event()


def _another_view(profile: Profile) -> int:
    _entered.set()
    assert _gate.wait(30)
    return 1


_another_view_cached = per_profile(_another_view)


def test_they_stay_while_another_thread_builds_for_the_profile() -> None:
    profile = _profile("jax_nvidia_train")
    _gate.clear()
    _entered.clear()
    other = threading.Thread(target=_another_view_cached, args=(profile,))
    other.start()
    try:
        assert _entered.wait(30)
        build_index(profile)  # another view's build of this profile runs meanwhile
        assert all(built(profile, a) is not None for a in ANALYSES)
    finally:
        _gate.set()
        other.join(30)
    # With no other build running, the next trace build of a fresh profile drops its own.
    fresh = _profile("jax_nvidia_train")
    build_index(fresh)
    assert [built(fresh, a) for a in ANALYSES] == [None] * len(ANALYSES)
