"""The kernel stats page builds the kernel statistics alone (op_analysis.profile_kernel_stats):
no op tables, whose device self times and IDLE were three quarters of its analysis on an
8-GPU capture; the TensorFlow stats page and the overview built after it reuse the same
kernel statistics object."""

from __future__ import annotations

from tb_profile_plugin.analysis.ops.op_analysis import (
    _build_kernel_stats,
    _build_ops,
    profile_kernel_stats,
    profile_ops,
)
from tb_profile_plugin.tools import registry
from tb_profile_plugin.xspace.decode import decode_xspace
from tests.fixtures import xplane_files

_KERNELS = f"{_build_kernel_stats.__module__}.{_build_kernel_stats.__qualname__}"
_OPS = f"{_build_ops.__module__}.{_build_ops.__qualname__}"


def _view(name: str, profile: object) -> dict[str, object]:
    return registry.VIEWS[name].build(registry.ViewRequest("run", "host", {"host": profile}, {}))


def test_kernel_stats_page_builds_no_op_tables() -> None:
    path = next(p for p in xplane_files() if "jax_nvidia_train" in str(p))
    profile = decode_xspace(path.read_bytes())
    doc = _view("kernel_stats", profile)
    assert doc["tool"] == "kernel_stats" and doc["rows"]
    results = profile.derived.results
    assert _KERNELS in results and _OPS not in results
    kernels = results[_KERNELS]
    assert kernels.rows, "kernels with launch details on the NVIDIA capture"
    _view("tensorflow_stats", profile)
    assert profile_ops(profile).kernels is kernels is profile_kernel_stats(profile)
