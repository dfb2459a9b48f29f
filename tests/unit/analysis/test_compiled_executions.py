"""XLA executions (analysis/steps/xla_executions.py) with the compiled sweep's one-pass kernel
calls, execution walk and run starts (`_step_sweep.kernel_calls`, `assign`, `run_starts`)
against numpy (TB_PROFILE_PURE_STEPS=1): the same executions, busy times and per-event
execution on every committed capture; the walk equals the binary search on random starts,
rising or not; the run starts equal numpy's column by column comparison."""

from __future__ import annotations

import numpy as np
import pytest

from tb_profile_plugin.analysis.events.profile_cache import profile_forest
from tb_profile_plugin.analysis.steps.compiled_sweep import sweep
from tb_profile_plugin.analysis.steps.step_db import PURE_STEPS_ENV
from tb_profile_plugin.analysis.steps.xla_executions import xla_executions
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import xplane_files

needs_sweep = pytest.mark.skipif(sweep() is None,
                                 reason="the compiled sweep is not built")
_FIELDS = ("plane_index", "module", "begin_ps", "end_ps", "busy_ps", "event_execution")


@needs_sweep
def test_every_capture_gets_the_numpy_executions(monkeypatch: pytest.MonkeyPatch) -> None:
    with_executions = 0
    for path in xplane_files():
        table = profile_forest(decode_xspace(path.read_bytes())).table
        compiled = xla_executions(table)
        with monkeypatch.context() as numpy_only:
            numpy_only.setenv(PURE_STEPS_ENV, "1")
            reference = xla_executions(table)
        for field in _FIELDS:
            np.testing.assert_array_equal(getattr(compiled, field), getattr(reference, field),
                                          err_msg=f"{path}: {field}")
        assert compiled.names == reference.names
        with_executions += len(compiled) > 0
    assert with_executions >= 2  # (JAX on GPU and CPU captures)


@needs_sweep
def test_the_walk_equals_the_search() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        e, n = int(rng.integers(0, 12)), int(rng.integers(0, 80))
        begin = np.sort(rng.integers(0, 100, e)).astype(np.int64)
        end = begin + rng.integers(0, 30, e)
        start = rng.integers(-5, 140, n).astype(np.int64)
        if rng.random() < 0.6:  # a line's starts rise (ties included)
            start = np.sort(start)
        first = int(rng.integers(0, 50))
        out = np.full(n, -1, np.int32)
        sweep().assign(start, begin, end, first, out)
        found = np.searchsorted(begin, start, side="right") - 1
        inside = (found >= 0) & (start < end[np.maximum(found, 0)]) if e else found >= 0
        expected = np.full(n, -1, np.int32)
        expected[inside] = first + found[inside]
        np.testing.assert_array_equal(out, expected)


@needs_sweep
def test_run_starts_equal_the_numpy_runs() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        columns = tuple(rng.integers(-1, 3, n).astype(dtype)
                        for dtype in rng.choice([np.int8, np.int16, np.int32, np.int64],
                                                int(rng.integers(1, 4))))
        order = rng.permutation(n)[: int(rng.integers(1, n + 1))].astype(np.int64)
        out = np.empty(len(order), bool)
        sweep().run_starts(order, out, columns)
        expected = np.zeros(len(order), bool)
        expected[0] = True
        for column in columns:
            expected[1:] |= column[order][1:] != column[order][:-1]
        np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError, match="outside"):
        sweep().run_starts(np.array([0, 5]), np.empty(2, bool),
                                       (np.zeros(3, np.int16),))


@needs_sweep
def test_kernel_calls_refuse_a_call_past_the_table_without_overflow() -> None:
    """A module's code times the id range past the table is refused, even where the product
    passes 2^63 (it wrapped to a negative index before); ids far from `low` do not overflow."""
    out, table = np.full(1, -1, np.int64), np.arange(4, dtype=np.int64)
    ids, device = np.zeros(1, np.int64), np.ones(1, np.uint8)
    module, code_of = np.zeros(1, np.int32), np.array([1], np.int32)
    with pytest.raises(ValueError, match="outside"):
        sweep().kernel_calls(out, table, -(2**62), 2**62 + 1, ids, device, module, code_of)
    sweep().kernel_calls(out, table, -(2**63) + 1, 3, ids, device, module, code_of)
    assert out.tolist() == [-1]  # (an id far past the range: not a call)
