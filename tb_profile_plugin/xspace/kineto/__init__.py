"""PyTorch's Kineto Chrome-trace JSON (`.pt.trace.json[.gz]`) decoded into the columnar
`Profile` of xspace/model.py (docs/pytorch.md: the mapping; xspace/producers/pytorch.py: every
PyTorch name). Modules, each importing only those before it: `split` (where the events are
in the text), `read` (bytes -> JSON, in slices), `fields` (events -> columns and stat rows),
`joins` (nesting and key joins), `derive` (the stats derived from the events), `planes`
(planes and lines), `decode` (`decode_kineto`), `outline` (what host facts read)."""

from __future__ import annotations

from tb_profile_plugin.xspace.kineto.decode import decode_kineto
from tb_profile_plugin.xspace.kineto.read import MAX_BYTES_ENV, max_bytes

#: Bumped whenever the decoded columns change meaning; part of a Kineto file's cache key.
KINETO_FORMAT_VERSION = 1

__all__ = ["KINETO_FORMAT_VERSION", "MAX_BYTES_ENV", "decode_kineto", "max_bytes"]
