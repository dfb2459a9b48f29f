"""Writing command output: JSON exactly as the routes serve it, CSV tables, terminal colour.

`to_json` is byte for byte what the plugin's `data` route sends (json_text.py: compact,
numpy scalars as numbers), so `tb-profile summary --json` equals the route's document. Colour
(ANSI) is used only when the stream is a terminal and NO_COLOR is unset or empty
(https://no-color.org) and TERM is not "dumb".
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from tb_profile_plugin.json_text import json_text
from tb_profile_plugin.tools import csv_table
from tb_profile_plugin.tools.registry import Table

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def to_json(value: Any) -> str:
    return json_text(value)


def to_csv(table: Table) -> str:
    """The table as the `data_csv` route writes it (formula-leading text neutralised)."""
    header, rows = table
    return csv_table.to_csv(header, rows)


def colour_wanted(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


class Style:
    """Wraps text in ANSI codes when enabled; plain text otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"
