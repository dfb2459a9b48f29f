"""A decoded Kineto profile as the `Outline` host facts read (xspace/decode.py
`outline_xspace`): a JSON trace has no cheaper outline than its decode, so the caller
decodes it and keeps the profile in the disk cache for the analysis that follows."""

from __future__ import annotations

from tb_profile_plugin.xspace.decode import Outline
from tb_profile_plugin.xspace.model import Profile
from tb_profile_plugin.xspace.pb import xplane_pb2


def outline_of(profile: Profile) -> Outline:
    planes = []
    for plane in profile.planes:
        head = xplane_pb2.XPlane(id=plane.id, name=plane.name)
        for row, name in enumerate(plane.event_metadata.names.tolist()):  # distinct names
            metadata_id = int(plane.event_metadata.ids[row])
            head.event_metadata[metadata_id].id = metadata_id
            head.event_metadata[metadata_id].name = name
        planes.append(head)
    return Outline(list(profile.hostnames), list(profile.errors), list(profile.warnings),
                   planes, profile.num_events)
