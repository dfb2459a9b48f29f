"""The trace index's build drops the analyses it made for its derived tracks (trace/derived.py
`forget_analyses`): the event table, nesting, forest, XLA executions and steps are not held
beside the index for as long as the store keeps the profile; those an earlier view built stay,
and a view that reads them later builds them again, with the same answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tb_profile_plugin.analysis.events.profile_cache import (
    built,
    profile_forest,
    profile_nested,
)
from tb_profile_plugin.analysis.steps.profile_steps import profile_steps
from tb_profile_plugin.analysis.steps.xla_executions import profile_executions
from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import registry
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
    assert {a: built(profile, a) for a in ANALYSES} == before  # the same objects, kept


def test_the_derived_tracks_are_the_same_whichever_view_came_first() -> None:
    alone, after = _profile("jax_nvidia_train"), _profile("jax_nvidia_train")
    _overview(after)
    a, b = build_index(alone), build_index(after)
    assert a.num_derived_events == b.num_derived_events > 0
    for name in ("start_ps", "end_ps", "name_id", "source_row"):
        assert (getattr(a, name) == getattr(b, name)).all()
    assert a.names == b.names
