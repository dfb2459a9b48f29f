"""Chrome trace JSON of a whole trace, streamed to a file (chrome://tracing, Perfetto UI).

    {"displayTimeUnit": "ns", "traceEvents": [
      {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/host:CPU"}}, ...,
      {"ph": "X", "pid": 1, "tid": 2, "ts": 12.345678, "dur": 0.5, "name": "MatMul"}, ...]}

One complete ("X") event per event of the trace (every XSpace event, plus the derived device
tracks where the index made them), in the index's order; times in µs from the trace origin;
process and thread names and sort indexes as metadata ("M") events. The text is written in
chunks of events, never built as one string.
"""

from __future__ import annotations

import json
from typing import IO

import numpy as np

from tb_profile_plugin.trace.window import TraceSet

_CHUNK_EVENTS = 100_000
_PS_PER_US = 1e6


def _metadata(trace: TraceSet) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for h in trace.hosts:
        for p in h.index.processes:
            pid = h.pid_offset + p.pid
            name = f"{h.host}: {p.name}" if trace.combined else p.name
            out.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": pid,
                        "args": {"sort_index": h.pid_offset + p.sort_index}})
            for t in p.threads:
                out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": t.tid,
                            "args": {"name": t.name}})
                out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": t.tid,
                            "args": {"sort_index": t.sort_index}})
    return out


def write_chrome_json(trace: TraceSet, out: IO[str]) -> int:
    """Writes the trace; returns the number of complete events written."""
    out.write('{"displayTimeUnit":"ns","otherData":{"origin_ns":'
              + str(trace.origin_ns) + '},"traceEvents":[\n')
    first = True
    for item in _metadata(trace):
        out.write(("" if first else ",\n") + json.dumps(item, separators=(",", ":")))
        first = False
    written = 0
    for h in trace.hosts:
        index = h.index
        quoted = [json.dumps(name) for name in index.names]
        for lo in range(0, len(index), _CHUNK_EVENTS):
            ids = np.arange(lo, min(lo + _CHUNK_EVENTS, len(index)))
            track = index.track_of(ids)
            start = index.start_ps[ids]
            rows = zip(
                h.track_pid[track].tolist(), h.track_tid[track].tolist(),
                ((start + h.shift_ps) / _PS_PER_US).tolist(),
                ((index.end_ps[ids] - start) / _PS_PER_US).tolist(),
                index.name_id[ids].tolist(), strict=True,
            )
            text = ",\n".join(
                f'{{"ph":"X","pid":{pid},"tid":{tid},"ts":{ts!r},"dur":{dur!r},'
                f'"name":{quoted[name]}}}'
                for pid, tid, ts, dur, name in rows
            )
            if text:
                out.write(("" if first else ",\n") + text)
                first = False
            written += len(ids)
    out.write("\n]}\n")
    return written
