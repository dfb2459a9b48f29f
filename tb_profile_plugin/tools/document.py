"""The envelope every view document shares (design/api.md, "Every view document")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Diagnostics:
    """What a user must know to trust or fix a view: errors, warnings and plain information."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, list[str]]:
        return {"errors": self.errors, "warnings": self.warnings, "info": self.info}


def document(
    tool: str, version: int, run: str, host: str, diagnostics: Diagnostics, **keys: Any
) -> dict[str, Any]:
    """A view document: the envelope keys first, then the view's own keys."""
    return {
        "tool": tool, "version": version, "run": run, "host": host,
        "diagnostics": diagnostics.to_json(), **keys,
    }
