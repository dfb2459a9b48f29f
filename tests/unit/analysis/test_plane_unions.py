"""Every GPU's step database at once, and the host's (analysis/steps/core_step_dbs.py, the
compiled sweep's `plane_unions`) against the numpy reference built plane by plane.

For each GPU plane, its database is `build_step_db` on the host's events and that plane's
device events (the other planes' types -1); the host's holds every plane's. Built together,
the events are counted once into (group, host or GPU) cells and each group's host events
sorted once: the same figures, field for field, on random events (instants, ties, nesting
within and across planes, planes without a database, databases of several planes, every
group dtype), on every committed GPU capture (host ranges too), and a GPU at a time; the
host's database from the markers found on the way, or from its own, is the numpy one. Where
a host event nested in a device event would be enclosed in one GPU's database and not in
another's, the caller is told to build them one by one."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.steps import core_step_dbs as together
from tb_profile_plugin.analysis.steps.compiled_sweep import sweep
from tb_profile_plugin.analysis.steps.core_step_dbs import core_step_dbs, host_step_db
from tb_profile_plugin.analysis.steps.step_db import (
    NUM_TYPES,
    PURE_STEPS_ENV,
    StepSpans,
    build_step_db,
    classify,
    step_db_from_spans,
    step_db_of_unions,
)
from tb_profile_plugin.xspace.schema import is_gpu_plane
from tests.unit.analysis.test_core_step_dbs import _profiles
from tests.unit.analysis.test_step_sweep import _same, _spans

needs_sweep = pytest.mark.skipif(sweep() is None,
                                 reason="the compiled sweep is not built")


def _random_profile(rng: np.random.Generator, n: int, num_groups: int, num_planes: int,
                    group_dtype: type[np.signedinteger]) -> tuple[np.ndarray, ...]:
    """Events on a coarse clock (equal starts, a third zero-length) on random planes (plane 0
    the host's), with parents among the earlier events (of their own plane, or any where
    `across`)."""
    types = rng.integers(-2, NUM_TYPES, n).astype(np.int8)
    group = rng.integers(-1, num_groups, n).astype(group_dtype)
    plane = rng.integers(0, num_planes, n).astype(np.int8)
    start = rng.integers(0, 60, n).astype(np.int64) * 10
    end = start + np.where(rng.random(n) < 0.3, 0, rng.integers(1, 25, n) * 10)
    across = rng.random() < 0.3
    parent = np.full(n, -1, np.int32)
    for i in range(n):
        same = np.arange(i) if across else np.flatnonzero(plane[:i] == plane[i])
        if len(same) and rng.random() < 0.7:
            parent[i] = same[int(rng.integers(0, len(same)))]
    return types, group, plane, start, end, parent


def _plane_unions(types: np.ndarray, group: np.ndarray, plane: np.ndarray,
                  device: np.ndarray, parent: np.ndarray | None, start: np.ndarray,
                  end: np.ndarray, dbs: list[list[int]], spans: list[StepSpans]
                  ) -> np.ndarray | None:
    """`plane_unions` of databases `dbs` (each the host's events and those of its planes)."""
    num_groups = len(spans[0].begin_ps)
    slot = np.full(max(int(plane.max(initial=0)), *(max(d) for d in dbs)) + 1, -1, np.int64)
    for k, planes in enumerate(dbs):
        slot[planes] = k
    out = np.zeros((len(dbs), NUM_TYPES + 1, num_groups), np.int64)
    ok = sweep().plane_unions(
        types, group, plane, device, parent, start, end, slot, len(dbs),
        np.concatenate([s.begin_ps for s in spans]), np.concatenate([s.finish_ps for s in spans]),
        np.concatenate([s.valid for s in spans]), out)
    return out if ok else None


def _own(types: np.ndarray, device: np.ndarray, plane: np.ndarray,
         planes: list[int]) -> np.ndarray:
    """The types a database of `planes` reads: other device planes' events -1."""
    return np.where(device & ~np.isin(plane, planes), -1, types).astype(np.int8)


def _host_parent_on_device(parent: np.ndarray | None, device: np.ndarray) -> bool:
    if parent is None:
        return False
    has = parent >= 0
    return bool(np.any(has & ~device & device[np.maximum(parent, 0)]))


@needs_sweep
@pytest.mark.parametrize("group_dtype", [np.int8, np.int16, np.int32, np.int64])
def test_random_planes_match_numpy_plane_by_plane(group_dtype: type[np.signedinteger]) -> None:
    rng = np.random.default_rng(31)
    compared = 0
    for _ in range(160):
        n = int(rng.integers(1, 200))
        num_groups, num_planes = int(rng.integers(1, 8)), int(rng.integers(2, 6))
        types, group, plane, start, end, parent = _random_profile(rng, n, num_groups,
                                                                  num_planes, group_dtype)
        device = plane > 0
        chosen = rng.choice(np.arange(1, num_planes), int(rng.integers(1, num_planes)),
                            replace=False).tolist()  # (planes without one: nowhere)
        # A database per plane, or one of several planes (the host's own: every plane).
        dbs = [[p] for p in sorted(chosen)] if rng.random() < 0.7 else [sorted(chosen)]
        spans = [_spans(rng, num_groups) for _ in dbs]
        with_parent = parent if rng.random() < 0.7 else None
        out = _plane_unions(types, group, plane, device, with_parent, start, end, dbs, spans)
        if out is None:  # only a host event nested in a device event, several databases
            assert len(dbs) > 1 and _host_parent_on_device(with_parent, device)
            continue
        has_device, drop_partial, keep_empty = (bool(x) for x in rng.random(3) < 0.5)
        for k, planes in enumerate(dbs):
            own = _own(types, device, plane, planes)
            _same(step_db_of_unions(spans[k], out[k], has_device, drop_partial, keep_empty),
                  step_db_from_spans(spans[k], own, group, start, end, has_device,
                                     drop_partial, with_parent, keep_empty, pure=True))
            compared += 1
    assert compared > 200


@needs_sweep
def test_a_host_event_in_a_gpu_event_asks_for_one_by_one() -> None:
    # Event 2 (host) nests in event 0 (GPU plane 1) of its group and a higher type: it is
    # enclosed in plane 1's database and not in plane 2's. Event 1 (plane 2) nests in event 0
    # too, which is in plane 1's database alone: it is enclosed nowhere it counts.
    types = np.array([11, 10, 1], np.int8)
    group = np.zeros(3, np.int32)
    plane = np.array([1, 2, 0], np.int8)
    start, end = np.array([0, 10, 5], np.int64), np.array([100, 20, 50], np.int64)
    device = np.array([True, True, False])
    spans = [StepSpans(np.zeros(1, np.int64), np.full(1, 100, np.int64), np.ones(1, bool),
                       np.zeros(1, np.int64))] * 2
    host_in_gpu, gpu_in_gpu = np.array([-1, -1, 0], np.int32), np.array([-1, 0, -1], np.int32)
    assert _plane_unions(types, group, plane, device, host_in_gpu, start, end, [[1], [2]],
                         spans) is None
    for parent, dbs in ((gpu_in_gpu, [[1], [2]]), (host_in_gpu, [[1]]), (host_in_gpu, [[2]]),
                        (host_in_gpu, [[1, 2]]), (gpu_in_gpu, [[1, 2]])):
        out = _plane_unions(types, group, plane, device, parent, start, end, dbs,
                            spans[:len(dbs)])
        assert out is not None
        for k, planes in enumerate(dbs):
            _same(step_db_of_unions(spans[k], out[k], True),
                  step_db_from_spans(spans[k], _own(types, device, plane, planes), group,
                                     start, end, True, parent=parent, pure=True))


@needs_sweep
def test_the_sweep_refuses_bad_input() -> None:
    types, group = np.array([20], np.int8), np.zeros(1, np.int32)
    start, end = np.zeros(1, np.int64), np.ones(1, np.int64)
    spans = [StepSpans(start, end, np.ones(1, bool), start)]
    with pytest.raises(ValueError, match="type"):
        _plane_unions(types, group, np.ones(1, np.int8), np.ones(1, bool), None, start, end,
                      [[1]], spans)
    with pytest.raises(ValueError, match="group"):
        _plane_unions(np.ones(1, np.int8), np.full(1, 3, np.int32), np.ones(1, np.int8),
                      np.ones(1, bool), None, start, end, [[1]], spans)
    out = np.zeros((1, NUM_TYPES + 1, 1), np.int64)
    with pytest.raises(ValueError, match="slot"):  # a plane's database past num_dbs
        sweep().plane_unions(np.ones(1, np.int8), group, np.ones(1, np.int8), np.ones(1, bool),
                             None, start, end, np.array([-1, 5], np.int64), 1, start, end,
                             np.ones(1, bool), out)


@needs_sweep
@pytest.mark.parametrize("host_ranges", [False, True])
@pytest.mark.parametrize("one_at_a_time", [False, True])
def test_captures_match_numpy_plane_by_plane(monkeypatch: pytest.MonkeyPatch,
                                             host_ranges: bool, one_at_a_time: bool) -> None:
    if one_at_a_time:  # a batch of one GPU per run, as with hundreds of thousands of steps
        monkeypatch.setattr(together, "_UNION_CELLS_PER_EVENT", 0)
        monkeypatch.setattr(together, "_UNION_CELLS_FLOOR", 1)
    checked = 0
    for name, profile in _profiles():
        forest = profile_forest(profile)
        every, on_device, has_device = classify(forest, grouped_only=False)
        types = np.where(forest.group_id >= 0, every, -1)
        gpus = [i for i, p in enumerate(profile.planes) if is_gpu_plane(p.name)]
        core = core_step_dbs(forest, (types, on_device, has_device), gpus, host_ranges)
        assert core is not None, name
        found = core.dbs
        # The host's database from the markers found on the way is the one it finds itself.
        _same(build_step_db(forest, (types, on_device, has_device), host_ranges,
                            markers=core.host_markers),
              build_step_db(forest, (types, on_device, has_device), host_ranges))
        assert core_step_dbs(forest, (types, on_device, has_device), gpus, host_ranges,
                             pure=True) is None
        hosts = [host_step_db(forest, (types, on_device, has_device), host_ranges, markers)
                 for markers in (core.host_markers, None)]
        with monkeypatch.context() as numpy_only:
            numpy_only.setenv(PURE_STEPS_ENV, "1")
            numpy_host = build_step_db(forest, (types, on_device, has_device), host_ranges)
            for host in hosts:  # the host's database: one of every device plane
                assert host is not None
                _same(host, numpy_host)
            for index, db in zip(gpus, found, strict=True):
                own = types.copy()
                own[on_device & (forest.table.plane_index != index)] = -1
                _same(db, build_step_db(forest, (own, on_device, has_device), host_ranges))
                checked += len(db)
    assert checked > 0
