"""tf.data: input pipelines of one host, their slow calls and what to fix.

- `pipelines`: iterator events, their metadata and their tree, per pipeline.
- `critical_path`: per pipeline execution, iterator times, critical path and bottleneck.
- `guide_checks`: the tf.data performance guide's manual checks, automated, with fixes.
- `shape`: what a pipeline looks like from its iterator names alone (prefetch, map, ...).
- `bottlenecks`: `analyze_tf_data(profile)`, the above tied together for the view.

Reads events/ and steps/.
"""
