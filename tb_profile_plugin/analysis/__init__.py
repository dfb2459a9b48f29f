"""Analyses of decoded profiles: what every view computes, by domain.

Each subpackage computes one kind of result from the canonical columns of `xspace.model`
(never from a producer's stat names: those are read in `xspace/producers/`). Arrows run
one way, from the bottom of this list to the top:

    advice/     recommendations and verdicts, each with its evidence   (reads hosts, tf_data)
    hosts/      one host's whole analysis; many hosts: pools, progress, merging, stragglers
    memory/     allocator snapshots, the peak and its make-up, the timeline
    tf_data/    tf.data pipelines, their critical path, bottlenecks and the guide's checks
    ops/        op tables, GPU kernels, jitted functions, tf.functions, host hotspots
    steps/      steps and where their time went (step database, breakdown, verdict inputs)
    events/     every event as columns, nesting, op-name parsing, grouping (the forest),
                and the per-profile memo every result is kept in

`evidence.py` is the `Advice` type (a recommendation and the figures it rests on) that
advice/ and tf_data/ both give.
"""
