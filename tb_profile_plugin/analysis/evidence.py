"""A recommendation and the evidence it rests on, or why it was withheld.

Every piece of advice the views and the CLI give is an `Advice`: its text and the figures or
names of the profile that call for it (`Evidence`: what was measured or seen, and its value,
e.g. ("input share of step time", "41.2 %") or ("last transformation of the pipeline",
"Iterator::Root::BatchV2")). Advice whose evidence is absent, or which the profile
contradicts (a pipeline that already ends in prefetch), is not given: it becomes a `Withheld`
saying what the profile shows instead, so a page can say why it stays silent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def duration_text(us: float) -> str:
    """A duration for evidence and advice: '45.3 ms' from 1 ms on, else '984.5 µs'."""
    return f"{us / 1000:.1f} ms" if us >= 1000 else f"{us:.1f} µs"


@dataclass(frozen=True)
class Evidence:
    what: str  # what was measured or seen: "input share of step time"
    value: str  # its value in this profile: "41.2 %", an op or iterator name

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "value": self.value}


@dataclass(frozen=True)
class Advice:
    key: str  # stable name of the rule: "tf_data_prefetch"
    text: str  # prose; text after the first line break is code
    evidence: tuple[Evidence, ...]

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "text": self.text,
                "evidence": [e.to_json() for e in self.evidence]}


@dataclass(frozen=True)
class Withheld:
    key: str  # the rule whose advice was not given
    reason: str  # what the profile shows instead (contradicting or missing evidence)

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "reason": self.reason}


@dataclass
class AdviceSet:
    """The advice given, in order, and the advice withheld."""

    given: list[Advice] = field(default_factory=list)
    withheld: list[Withheld] = field(default_factory=list)

    def give(self, key: str, text: str, *evidence: Evidence) -> None:
        self.given.append(Advice(key, text, tuple(evidence)))

    def withhold(self, key: str, reason: str) -> None:
        self.withheld.append(Withheld(key, reason))

    def extend(self, other: AdviceSet) -> None:
        self.given.extend(other.given)
        self.withheld.extend(other.withheld)

    def texts(self) -> list[str]:
        return [a.text for a in self.given]

    def document_keys(self) -> dict[str, Any]:
        """`advice` and `advice_withheld` of a view document (docs/api.md)."""
        return {"advice": [a.to_json() for a in self.given],
                "advice_withheld": [w.to_json() for w in self.withheld]}
