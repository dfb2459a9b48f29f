"""Builds the optional compiled accelerators; everything else is in pyproject.toml.

Every extension is optional: without a C compiler the package installs and uses their numpy
versions, which give the same results, only slower: the line decoder
(tb_profile_plugin/xspace/wire_numpy.py), the nesting passes (trace/depth.py and
analysis/events/nesting.py: nesting order, depth and parent, ancestor marks, the forest's group
lowering), the trace's level-of-detail zone search (trace/lod.py) and the step database's
per-type unions (analysis/steps/step_db.py).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tb_profile_plugin.xspace._wire",
            sources=["tb_profile_plugin/xspace/_wire.c"],
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
            sources=["tb_profile_plugin/analysis/steps/_step_sweep.c"],
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
