"""Steps: which spans of a profile are steps, and where each step's time went.

- `step_db`: per step, its events classified into the profiler's event types and summed.
- `breakdown`: the nine step-time categories users see, their statistics, the verdict.
- `instant_spans`: the time zero-length events get in a step's breakdown.
- `xla_executions`: each run of an XLA program (jitted function) on each device.
- `execution_steps`: steps from the executions of the jitted step function, for programs
  that mark no steps.

Reads events/.
"""
