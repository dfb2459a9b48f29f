"""A view's table as CSV text that a spreadsheet opens as data, never as formulas.

Every CSV the plugin serves (`data_csv`) and the CLI prints (`tb-profile view --csv`) is
written here. Cells come from the profile: op, kernel and host names, memory regions and
shapes, tf.data iterator names, all chosen by whoever wrote the file. A spreadsheet evaluates
a cell that starts with `=`, `+`, `-` or `@` (and, after a tab or carriage return, what
follows), so such a text cell gets a leading single quote (OWASP, "CSV Injection"): `=cmd|'
/C calc'!A0` is written `'=cmd|' /C calc'!A0`. Numbers stay numbers (a negative duration
written from a float is still `-1.5`, unquoted); text that is exactly a decimal number
(`-3`, `+1.5e3`) is harmless and kept as written.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

#: The characters a spreadsheet may read as the start of a formula (OWASP's list).
FORMULA_LEADERS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """`value` as a CSV cell: finite numbers as numbers, None empty, anything else as text,
    a formula-leading text prefixed with `'`."""
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # numpy scalars
        value = value.item()
    if value is None:
        return None
    if isinstance(value, int | float) and math.isfinite(value):  # bool included: True, False
        return value
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if text.startswith(FORMULA_LEADERS) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def is_formula_leading(cell: str) -> bool:
    """Whether a CSV cell, as read back, would start a formula in a spreadsheet."""
    return cell.startswith(FORMULA_LEADERS) and not _PLAIN_NUMBER.fullmatch(cell)


def to_csv(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """The table as CSV: text quoted, numbers bare (QUOTE_NONNUMERIC), `\\n` line ends, every
    cell through `safe_cell`."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    writer.writerow([safe_cell(cell) for cell in header])
    writer.writerows([safe_cell(cell) for cell in row] for row in rows)
    return out.getvalue()
