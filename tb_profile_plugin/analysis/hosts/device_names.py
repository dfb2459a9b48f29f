"""The name of a device, as the run environment shows it, from its plane's name and stats.

Rules, by plane kind (xspace/producers/ `plane_kind`) and the plane stats producers write
(producers.md):

- TPU: the `device_type_string` stat ("TPU v6 Lite"), else "TPU".
- GPU from AMD (`device_vendor` starts with "AMD"): "AMD GPU - <gfx target>". The target is the
  `gpu_device_name` stat when it is a gfx name (newer ROCm tracers write the agent's name,
  "gfx942"); else it comes from `compute_cap_major`/`compute_cap_minor` through
  `AMD_GFX_TARGETS`. ROCm derives those two numbers from the agent's `gfx_target_version`
  (major = v // 10000 % 100, minor = v // 100 % 100) and drops the stepping, which the target
  name writes as a last hex digit (gfx90a is 9.0 stepping 0xa), so the target cannot be spelled
  from the numbers alone: only pairs with a single shipped target are named (9.4: every MI300
  part, MI300A/X and MI325X, is gfx942 since ROCm 6 retired gfx940/941; 9.5: MI350/MI355 are
  gfx950). A missing minor is 0 (older ROCm tracers skipped writing a zero). Other pairs read
  "AMD GPU (gfx <major>.<minor>)"; no numbers, "AMD GPU".
- Other GPUs: the model the producer wrote (`gpu_model`, `device_model`, else
  `gpu_device_name`); else, with a compute capability, "NVIDIA
  GPU (compute capability 7.0)" (CUPTI writes the capability; a vendor other than NVIDIA names
  itself: "<vendor> GPU"); else "GPU".
- Other accelerators: `device_type_string` where written, else "Device". Host planes: "CPU";
  CUSTOM planes (a Megascale trace) are no device: "".
"""

from __future__ import annotations

from collections.abc import Mapping

from tb_profile_plugin.xspace.producers import PlaneKind, plane_kind

#: (compute_cap_major, compute_cap_minor) -> the only gfx target ROCm ships with that pair.
AMD_GFX_TARGETS: dict[tuple[int, int], str] = {(9, 4): "gfx942", (9, 5): "gfx950"}


def _text(stats: Mapping[str, object], *names: str) -> str:
    """The first non-empty string among the named stats, stripped; "" if none."""
    for name in names:
        value = stats.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _integer(stats: Mapping[str, object], name: str) -> int | None:
    value = stats.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _amd_name(stats: Mapping[str, object]) -> str:
    target = _text(stats, "gpu_device_name")
    if target.lower().startswith("gfx"):
        return f"AMD GPU - {target.lower()}"
    major, minor = _integer(stats, "compute_cap_major"), _integer(stats, "compute_cap_minor")
    if major is None:
        return "AMD GPU"
    minor = minor or 0
    known = AMD_GFX_TARGETS.get((major, minor))
    return f"AMD GPU - {known}" if known else f"AMD GPU (gfx {major}.{minor})"


def _gpu_name(stats: Mapping[str, object]) -> str:
    vendor = _text(stats, "device_vendor")
    if vendor.upper().startswith("AMD") or vendor.lower().startswith("advanced micro devices"):
        return _amd_name(stats)
    model = _text(stats, "gpu_model", "device_model", "gpu_device_name")
    if model:
        return model
    major, minor = _integer(stats, "compute_cap_major"), _integer(stats, "compute_cap_minor")
    if major is not None:
        maker = "NVIDIA" if not vendor or vendor.lower().startswith("nvidia") else vendor
        return f"{maker} GPU (compute capability {major}.{minor or 0})"
    return "GPU"


def device_type_name(plane_name: str, plane_stats: Mapping[str, object]) -> str:
    """The device type the run environment shows for one plane (see the module's rules)."""
    kind = plane_kind(plane_name)
    if kind == PlaneKind.TPU:
        return _text(plane_stats, "device_type_string") or "TPU"
    if kind == PlaneKind.GPU:
        return _gpu_name(plane_stats)
    if kind == PlaneKind.OTHER_DEVICE:
        return _text(plane_stats, "device_type_string") or "Device"
    if kind == PlaneKind.HOST:
        return "CPU"
    return ""
