"""The JSON text of a document, for the HTTP routes and the command line.

orjson writes it: the trace viewer's windows are columns of 10^4–10^5 floats, which the
standard library's encoder writes one `float.__repr__` at a time (130 ms for a 92k-event
window on the 2.4M-event capture, against 13 ms here; docs/trace_viewer.md). The text is the
same JSON: compact, keys in insertion order, shortest round-trip floats, numpy scalars and
arrays as numbers (the trace viewer's columns are arrays, written without a Python
object per number), non-string keys as strings. A non-finite float is written `null` (the
pages show "—"). Anything orjson refuses (an int beyond 64 bits) goes through the standard
library's encoder instead, so a document never fails for its encoding alone.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _default(value: Any) -> Any:
    if isinstance(value, np.ndarray):  # one orjson does not write itself (not contiguous)
        return value.tolist()
    if hasattr(value, "item"):  # numpy scalars orjson does not know (e.g. float16)
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def json_bytes(value: Any) -> bytes:
    """`value` as compact UTF-8 JSON."""
    try:
        return orjson.dumps(value, default=_default, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), default=_default).encode("utf-8")


def json_text(value: Any) -> str:
    """`value` as compact JSON text."""
    return json_bytes(value).decode("utf-8")
