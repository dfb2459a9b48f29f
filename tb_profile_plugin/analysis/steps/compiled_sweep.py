"""The optional compiled step sweep (analysis/steps/_step_*.c, one extension `_step_sweep`),
built with the package where a C compiler is, found in one place: the step databases
(step_db.py, core_step_dbs.py), the event types (compiled_types.py) and the XLA executions
(xla_executions.py) ask `compiled_sweep()` whether it computes, then call `sweep()`.
TB_PROFILE_PURE_STEPS=1 keeps the numpy versions, the reference the tests compare it with."""

from __future__ import annotations

import os
from typing import Any

try:
    from tb_profile_plugin.analysis.steps import _step_sweep  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised where no compiler built it
    _step_sweep = None

#: Set to 1 to use the numpy unions even where the compiled sweep is built.
PURE_STEPS_ENV = "TB_PROFILE_PURE_STEPS"


def sweep() -> Any:
    """The compiled sweep module (None where no compiler built it): call it only where
    `compiled_sweep()` says it computes."""
    return _step_sweep


def compiled_sweep(pure: bool | None = None) -> bool:
    """Whether the compiled sweep computes: `pure` True forces numpy, False the compiled sweep
    where built; None picks it unless TB_PROFILE_PURE_STEPS=1."""
    return not (pure or _step_sweep is None
                or (pure is None and os.environ.get(PURE_STEPS_ENV) == "1"))
