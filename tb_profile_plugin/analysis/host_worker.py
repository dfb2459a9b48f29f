"""A host-analysis worker process: reads xplane paths, answers each with its HostAnalysis.

Started by analysis/host_pool.py as `python -m tb_profile_plugin.analysis.host_worker`.
Protocol: one JSON string (a path) per line on stdin; for each, on stdout, an 8-byte
little-endian length and a pickle of `("ok", HostAnalysis)` or `("error", exception)`. Only the
pool that started the worker reads what it writes. Anything else printed by imported code goes
to stderr, so it cannot break the protocol. The worker ends when stdin closes.
"""

from __future__ import annotations

import json
import os
import pickle
import sys


def main() -> int:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from tb_profile_plugin.analysis.host_analysis import analyze_file
    from tb_profile_plugin.errors import ProfileError

    for line in sys.stdin.buffer:
        path = json.loads(line)
        result: tuple[str, object]
        try:
            result = ("ok", analyze_file(path))
        except ProfileError as exc:
            result = ("error", exc)
        except Exception as exc:  # reported to the pool, which raises it in the request
            result = ("error", RuntimeError(f"analysing {path}: {type(exc).__name__}: {exc}"))
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        out.write(len(data).to_bytes(8, "little"))
        out.write(data)
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
