"""Which hosts an ALL_HOSTS trace shows: as many as the memory bound holds.

The trace of several hosts keeps every shown host's decoded columns and trace index in the
server while it answers (their windows, details and searches need them). A pod's hosts do not
fit: 64 hosts of 40 MB files would need ~15 GB. So the combined trace shows the hosts, in the
run's order, whose estimated cost fits `TB_PROFILE_MEMORY_CACHE_BYTES` (the store's bound), at
least one; the others are named in a warning and each can be opened alone. The estimate is
`TRACE_BYTES_PER_FILE_BYTE` times the file's size: a decoded host with its trace index holds
2.3-6.3 times its file (measured on the committed captures and the 2.4M-event one).
"""

from __future__ import annotations

from collections.abc import Mapping

from tb_profile_plugin import fs
from tb_profile_plugin.xspace.store import memory_cache_bytes

TRACE_BYTES_PER_FILE_BYTE = 7


def bytes_text(size: int) -> str:
    """`2.0 GiB`, `10.0 MiB`: a size in the unit that reads best."""
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"


def hosts_that_fit(paths: Mapping[str, str], bound_bytes: int | None = None
                   ) -> tuple[list[str], list[str]]:
    """(hosts shown, hosts left out) of `paths` ({host: file}, in the run's order)."""
    bound = memory_cache_bytes() if bound_bytes is None else bound_bytes
    shown: list[str] = []
    left_out: list[str] = []
    total = 0
    for host, path in paths.items():
        try:
            cost = fs.stat(path)[0] * TRACE_BYTES_PER_FILE_BYTE
        except OSError:
            cost = 0  # decoding it will say what is wrong
        if shown and total + cost > bound:
            left_out.append(host)
            continue
        shown.append(host)
        total += cost
    return shown, left_out
