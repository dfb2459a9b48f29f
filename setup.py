"""Builds the optional compiled accelerators; everything else is in pyproject.toml.

Every extension is optional: without a C compiler the package installs and uses their numpy
versions, which give the same results, only slower: the line decoder
(tb_profile_plugin/xspace/wire_numpy.py), the nesting passes (trace/depth.py and
analysis/events/nesting.py: nesting order, depth and parent, ancestor marks, the forest's group
lowering), the trace's level-of-detail zone search (trace/lod.py) and the step database's
per-type unions (analysis/steps/step_db.py).

An extension may be built from several C sources, one idea each (xspace/_wire*.c,
analysis/steps/_step_*.c), sharing declarations through a private header listed in `depends`
(rebuilt when it changes, and shipped in the sdist with the sources).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tb_profile_plugin.xspace._wire",
            sources=[
                "tb_profile_plugin/xspace/_wire.c",
                "tb_profile_plugin/xspace/_wire_walk.c",
                "tb_profile_plugin/xspace/_wire_dense_hash.c",
                "tb_profile_plugin/xspace/_wire_dense_plan.c",
                "tb_profile_plugin/xspace/_wire_line_dense.c",
            ],
            depends=["tb_profile_plugin/xspace/_wire.h"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tb_profile_plugin.analysis.events._nesting",
            sources=["tb_profile_plugin/analysis/events/_nesting.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tb_profile_plugin.analysis.steps._step_sweep",
            sources=[
                "tb_profile_plugin/analysis/steps/_step_sweep.c",
                "tb_profile_plugin/analysis/steps/_step_type_unions.c",
                "tb_profile_plugin/analysis/steps/_step_counted.c",
                "tb_profile_plugin/analysis/steps/_step_event_types.c",
                "tb_profile_plugin/analysis/steps/_step_executions.c",
            ],
            depends=["tb_profile_plugin/analysis/steps/_step_sweep.h"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tb_profile_plugin.trace._lod",
            sources=["tb_profile_plugin/trace/_lod.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
    ]
)
