"""A synthetic capture of back-to-back steps with dense children (issue 29 item 5).

One host thread `python` runs `STEPS` steps named `train`, each exactly `STEP_PS` (10 ms)
long and starting where the previous one ends, so adjacent bars touch; inside each step
`CHILDREN` 20 µs ops, evenly spaced, all far below a pixel at a 0.5-1.3 s view, so the
server folds them into density blocks (more than trace/window.py UNFILTERED_MAX_EVENTS
events in the view). Encoded with numpy straight into protobuf wire format, as
tests/browser/trace_synthetic.py does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tb_profile_plugin.trace.wire import len_field, repeated_messages
from tb_profile_plugin.xspace.pb import xplane_pb2
from tests.browser.trace_synthetic import write_host_file

SESSION = "2026_01_01_00_00_00"
STEPS_RUN = f"dense_steps/{SESSION}"
STEPS_HOST = "stepshost"
US = 1_000_000  # ps
MS = 1_000 * US
STEPS = 130
STEP_PS = 10 * MS
CHILDREN = 400
CHILD_PS = 20 * US
STEP_NAME = "train"
CHILD_NAME = "MatMul"


def steps_trace_profile(steps: int = STEPS, children: int = CHILDREN) -> bytes:
    """The XSpace bytes: `steps` back-to-back `train` steps of 10 ms, `children` ops each."""
    plane = xplane_pb2.XPlane(id=0, name="/host:CPU")
    for k, name in enumerate((STEP_NAME, CHILD_NAME)):
        plane.event_metadata[k + 1].id = k + 1
        plane.event_metadata[k + 1].name = name
    step_start = np.arange(steps, dtype=np.uint64) * np.uint64(STEP_PS)
    period = STEP_PS // children
    child_offset = (np.arange(children, dtype=np.uint64) * np.uint64(period)
                    + np.uint64((period - CHILD_PS) // 2))
    # Each step, then its children, in start order.
    offsets = np.concatenate([step_start[:, None],
                              step_start[:, None] + child_offset[None, :]], axis=1).ravel()
    durations = np.tile(np.concatenate([[STEP_PS], np.full(children, CHILD_PS)]),
                        steps).astype(np.uint64)
    metadata = np.tile(np.concatenate([[1], np.full(children, 2)]), steps).astype(np.uint64)
    header = xplane_pb2.XLine(id=1, display_id=1, name="python",
                              timestamp_ns=1_000).SerializeToString()
    line = header + repeated_messages(4, [(1, metadata), (2, offsets), (3, durations)])
    plane_bytes = plane.SerializeToString() + len_field(3, line)
    space = xplane_pb2.XSpace(hostnames=[STEPS_HOST]).SerializeToString()
    return len_field(1, plane_bytes) + space


def write_steps_trace(logdir: Path) -> None:
    """Writes the capture as run `dense_steps/<session>`, host `stepshost`."""
    write_host_file(logdir, STEPS_RUN, STEPS_HOST, steps_trace_profile())
