"""Builds the optional compiled accelerators; everything else is in pyproject.toml.

Both extensions are optional: without a C compiler the package installs and uses their numpy
versions, which give the same results, only slower: the line decoder
(tb_profile_plugin/xspace/wire_numpy.py) and the trace's nesting order (trace/depth.py).
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
            "tb_profile_plugin.trace._nesting",
            sources=["tb_profile_plugin/trace/_nesting.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
    ]
)
