"""Per-GPU step databases (issue 31): `profile_steps`' `core_steps` are, for every GPU plane,
what `build_step_db` gives on the host's events with only that plane's device events (the
others' types -1; a GPU with every device event shares the host's), and the trace's Steps
tracks of a several-GPU host build no host step database (`ProfileSteps.steps` is built on
first read). `group_time_order` is `lexsort`'s permutation.

Inputs: the 2-GPU TF 2.4 layout of test_per_core_producer_steps.py (a copy of a real 8-GPU
BERT capture's planes, lines and stats) and the committed NVIDIA captures, each GPU plane and
the host plane (a plane whose database keeps no device event at all).
"""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.events.sort_order import group_time_order
from tb_profile_plugin.analysis.steps.profile_steps import profile_steps
from tb_profile_plugin.analysis.steps.step_db import StepDb, build_step_db, classify
from tb_profile_plugin.trace.derived import derive_tracks
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.schema import is_gpu_plane
from tests.fixtures import DATA_DIR
from tests.unit.analysis.test_per_core_producer_steps import _layout

_FIELDS = ("step_num", "group_id", "begin_ps", "duration_ps", "type_ps")


def _same(a: StepDb, b: StepDb) -> None:
    for name in _FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.has_device, a.num_dropped, a.num_partial_dropped) == (
        b.has_device, b.num_dropped, b.num_partial_dropped)


def _profiles() -> list[tuple[str, Profile]]:
    out = [("tf24_two_gpus", decode_xspace(_layout(groups=8)))]
    for name in ("jax_nvidia_device_bound", "jax_nvidia_train", "jax_nvidia_train_nograph"):
        path = next((DATA_DIR / name).glob("plugins/profile/*/*.xplane.pb"))
        out.append((name, decode_xspace(path.read_bytes())))
    return out


def test_each_gpus_database_is_the_hosts_events_with_its_own() -> None:
    checked = 0
    for name, profile in _profiles():
        forest = profile_forest(profile)
        every, on_device, has_device = classify(forest, grouped_only=False)
        types = np.where(forest.group_id >= 0, every, -1)
        found = profile_steps(profile)
        gpus = [(i, p.name) for i, p in enumerate(profile.planes) if is_gpu_plane(p.name)]
        assert [plane for plane, _ in found.core_steps] == [plane for _, plane in gpus], name
        for (index, _), (_, db) in zip(gpus, found.core_steps, strict=True):
            own = types.copy()
            own[on_device & (forest.table.plane_index != index)] = -1
            _same(db, build_step_db(forest, (own, on_device, has_device)))
            checked += len(db)
    assert checked > 0  # some GPU of some capture has steps


def test_each_gpu_has_its_own_steps_and_the_host_database_waits() -> None:
    profile = decode_xspace(_layout(groups=8))
    found = profile_steps(profile)
    assert [name for name, _ in found.core_steps] == ["/device:GPU:4", "/device:GPU:6"]
    gpu4, gpu6 = (db for _, db in found.core_steps)
    assert len(gpu4) == len(gpu6) == 6  # 8 groups, the first and last dropped as partial
    assert not np.array_equal(gpu4.begin_ps, gpu6.begin_ps)  # each core's own step spans
    for index, plane in enumerate(profile.planes):
        if is_gpu_plane(plane.name):
            assert any(t.name == "Steps" for t in derive_tracks(profile, index))
    # The trace's Steps tracks read the GPUs' databases only: the host's is not built yet.
    assert found.build_steps.cache_info().currsize == 0  # type: ignore[attr-defined]
    forest = profile_forest(profile)
    every, on_device, has_device = classify(forest, grouped_only=False)
    _same(found.steps, build_step_db(
        forest, (np.where(forest.group_id >= 0, every, -1), on_device, has_device)))
    assert found.build_steps.cache_info().currsize == 1  # type: ignore[attr-defined]
    assert found.steps is found.steps  # built once


@pytest.mark.parametrize("seed", range(4))
def test_group_time_order_is_lexsorts_permutation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n, groups, times in ((0, 1, 1), (1, 1, 1), (50, 3, 5), (5000, 40, 10**12),
                             (5000, 2**40, 2**40)):  # the last: key past int64, lexsort
        group = rng.integers(-3, groups, n)
        time = rng.integers(-times, times, n)
        np.testing.assert_array_equal(group_time_order(group, time), np.lexsort((time, group)))
    # Runs already in order (a line's events in time), ties kept in row order.
    group = np.repeat(np.arange(5), 4)[::-1].copy()
    time = np.tile(np.array([7, 7, 3, 9]), 5)
    np.testing.assert_array_equal(group_time_order(group, time), np.lexsort((time, group)))
