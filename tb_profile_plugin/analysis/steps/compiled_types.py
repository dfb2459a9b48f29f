"""`classify`'s per-event rules (analysis/steps/step_db.py) in one compiled pass.

The numpy rules (`_numpy_types`, the reference, kept under TB_PROFILE_PURE_STEPS=1) take a
dozen masks and gathers over every event: a device event's type by its name, then its shape's
or its HLO instruction's 16-bit compute, XLA's transfers and their waits, collectives by name,
HLO op or category; a host event's by its name, a launch's compute becoming kernel launch
(0.23 s of a 10M-event 8-GPU capture's step analysis). Here each rule is a small table (per
name, per shape text, per canonical text: bits) and one compiled pass reads them per event
(analysis/steps/_step_*.c `event_types`): the same types, event for event
(tests/unit/analysis/test_compiled_types.py).
"""

from __future__ import annotations

import numpy as np

from tb_profile_plugin.analysis.events.table import EventTable
from tb_profile_plugin.analysis.steps.compiled_sweep import sweep
from tb_profile_plugin.xspace.producers import (
    CORRELATION_ID_STAT,
    is_collective,
    is_transfer,
    is_transfer_wait,
)


def compiled_types(table: EventTable, host_types: np.ndarray, device_types: np.ndarray,
                    has_device: bool) -> np.ndarray:
    """step_db.py `_numpy_types` in one compiled pass (`event_types`): the
    per-name, per-shape and per-text rules become small tables, read once per event. Only
    where the compiled sweep is built (step_db.py `compiled_sweep`)."""
    types = np.empty(len(table), np.int8)
    launch = shape = low = hlo_op = op_type = None
    shape_half = text_class = np.zeros(1, np.uint8)
    name_collective = np.zeros(len(host_types), np.uint8)
    if has_device:
        launch = table.int_stat_at_least(CORRELATION_ID_STAT, 0)
        shape_code, shapes = table.str_stat_codes("shape")
        shape = _present(shape_code, -1)
        shape_half = np.array([("half" in text) for text in shapes] + [False], np.uint8)
        canon = table.canonical
        low, hlo_op, op_type = (_present(canon.low_precision, False),
                                _present(canon.hlo_op, -1), _present(canon.op_type, -1))
        text_class = np.array([is_transfer(text) | is_transfer_wait(text) << 1
                               | is_collective(text) << 2 for text in canon.texts] + [0],
                              np.uint8)
        name_collective = table.names_matching(is_collective).astype(np.uint8)
    sweep().event_types(np.ascontiguousarray(table.name_id),
                            np.ascontiguousarray(table.plane_index),
                            table.accelerator_planes.astype(np.uint8), launch, shape,
                            shape_half, low, hlo_op, op_type, text_class, host_types,
                            device_types, name_collective, has_device, types)
    return types


def _present(column: np.ndarray, absent: object) -> np.ndarray | None:
    """A per-event column as the compiled pass reads it; None where it is one shared value
    meaning absent (no column of every event made for it)."""
    if len(column) and column.strides == (0,) and column[0] == absent:
        return None
    return np.ascontiguousarray(column)
