"""Builds the optional compiled line decoder; everything else is in pyproject.toml.

The extension is optional: without a C compiler the package installs and uses its pure-numpy
decoder (tb_profile_plugin/xspace/wire_numpy.py), which gives the same columns, only slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tb_profile_plugin.xspace._wire",
            sources=["tb_profile_plugin/xspace/_wire.c"],
            optional=True,
            extra_compile_args=["-O3"],
        )
    ]
)
