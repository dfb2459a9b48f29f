"""Ops: per op, kernel or function, how often it ran and how long it took.

- `op_metrics`: host and device op tables (self and total time, per op name and type).
- `op_analysis`: what the op views need of one host, without its steps.
- `kernel_stats`: per unique GPU kernel launched by an op, its launch shape and timing.
- `jitted_functions`: the jitted functions table (per XLA module, from steps/xla_executions).
- `tf_functions`: the tf.functions table (calls, call times, retracing).
- `host_hotspots`: host events by self time within steps, where the device waits on the host.

Reads events/ and steps/.
"""
