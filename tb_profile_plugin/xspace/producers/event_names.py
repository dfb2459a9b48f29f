"""How the trace names an event: the producer's short name where it wrote one.

An XEventMetadata has a `name` and a `display_name`. XLA on TPU writes the whole HLO
instruction as the name (`%broadcast.2 = f32[5,1024]{1,0} broadcast(f32[] %p0), ...`) and
the op as the display name (`broadcast.2`), on its "XLA Ops" and "Async XLA Ops" lines alike.
The reference (xprof 2.24.2, trace viewer) names such an event by its display name and shows
the full name as its `long_name`; so does the trace here, on TPU planes.

| plane                 | shown name                                | long name (details)        |
|-----------------------|-------------------------------------------|----------------------------|
| TPU (`/device:TPU:N`) | `display_name` where written, else `name` | `name`, when shown by its  |
|                       |                                           | display name               |
| any other             | `name`                                    | trace/details.py's rule    |

Host events of TensorFlow captures also carry display names (the op type `MatMul` for
`dense/MatMul:MatMul`, the iterator's last component for `Iterator::Root::Prefetch`); the
trace keeps naming those by their full name, as it always has.
"""

from __future__ import annotations

from tb_profile_plugin.xspace.model import Plane
from tb_profile_plugin.xspace.producers.kinds import PlaneKind, plane_kind


def shows_display_names(plane: Plane) -> bool:
    """Whether the trace names `plane`'s events by their metadata's display names."""
    return plane_kind(plane.name) == PlaneKind.TPU


def trace_event_names(plane: Plane) -> list[str]:
    """Per row of `plane.event_metadata`: the name the trace shows its events by (the
    display name on TPU planes where the metadata has one, else the name)."""
    table = plane.event_metadata
    names: list[str] = table.names.tolist()
    if not shows_display_names(plane):
        return names
    shown: list[str] = table.display_names.tolist()
    return [d or n for d, n in zip(shown, names, strict=True)]  # per metadata row, not event
