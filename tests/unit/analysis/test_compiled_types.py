"""`classify`'s per-event rules in one compiled pass (analysis/steps/compiled_types.py) against
the numpy masks (`pure=True`, TB_PROFILE_PURE_STEPS=1): the same type for every event of every
committed capture (GPU kernels by shape or HLO precision, TPU transfers and their waits,
collectives by name, HLO op or category, launches, markers, CPU-only profiles), grouped or
not, and of a synthetic two-GPU layout; bad tables raise, never give a wrong type."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.steps.compiled_sweep import sweep
from tb_profile_plugin.analysis.steps.step_db import PURE_STEPS_ENV, EventType, classify
from tb_profile_plugin.xspace.decode import decode_xspace
from tb_profile_plugin.xspace.model import Profile
from tests.fixtures import xplane_files
from tests.unit.analysis import test_tpu_transfer_steps as tpu_transfers
from tests.unit.analysis.test_gpu_step_breakdown import gpu_profile
from tests.unit.analysis.test_per_core_producer_steps import _layout

needs_sweep = pytest.mark.skipif(sweep() is None,
                                 reason="the compiled sweep is not built")


def _captures() -> list[tuple[str, Profile]]:
    found = [("tf24_two_gpus", decode_xspace(_layout(groups=8))),
             ("nccl", decode_xspace(gpu_profile())),
             ("tpu_transfers", decode_xspace(tpu_transfers._layout()))]
    found += [(str(path), decode_xspace(path.read_bytes())) for path in xplane_files()]
    return found


@needs_sweep
def test_every_capture_gets_the_numpy_types(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: set[int] = set()
    for name, profile in _captures():
        forest = profile_forest(profile)
        for grouped_only in (False, True):
            compiled = classify(forest, grouped_only)
            numpy_types = classify(forest, grouped_only, pure=True)
            assert compiled[0].dtype == numpy_types[0].dtype == np.int8, name
            mismatch = np.flatnonzero(compiled[0] != numpy_types[0])
            assert len(mismatch) == 0, (name, mismatch[:5])
            assert compiled[2] == numpy_types[2]
            seen.update(np.unique(compiled[0]).tolist())
        monkeypatch.setenv(PURE_STEPS_ENV, "1")  # the environment picks numpy too
        np.testing.assert_array_equal(classify(forest)[0], numpy_types[0])
        monkeypatch.delenv(PURE_STEPS_ENV)
    # The captures reach the rules that differ by device: launches, 16/32-bit compute,
    # collectives, transfers and their waits, markers.
    for kind in (EventType.HOST_PREPARE, EventType.DEVICE_COMPUTE_16,
                 EventType.DEVICE_COMPUTE_32, EventType.DEVICE_COLLECTIVES,
                 EventType.DEVICE_TO_DEVICE, EventType.DEVICE_WAIT_DEVICE, -2):
        assert int(kind) in seen, kind


@needs_sweep
def test_bad_tables_raise() -> None:
    module = sweep()
    one = np.zeros(1, np.int8)
    names = np.array([EventType.HOST_COMPUTE], np.int8)
    args = [np.zeros(1, np.int32), one, np.zeros(2, np.uint8), None, None,
            np.zeros(1, np.uint8), None, None, None, np.zeros(1, np.uint8), names, names,
            np.zeros(1, np.uint8), True, np.empty(1, np.int8)]
    module.event_types(*args)
    assert args[-1][0] == EventType.HOST_COMPUTE
    with pytest.raises(ValueError, match="outside"):  # a name past the tables
        module.event_types(np.ones(1, np.int32), *args[1:])
    with pytest.raises(ValueError, match="outside"):  # a device event's HLO code past them
        module.event_types(args[0], one, np.ones(2, np.uint8), None, None, args[5], None,
                          np.full(1, 3, np.int16), *args[8:])
