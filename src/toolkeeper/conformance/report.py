"""The run's report as data: one :class:`CaseResult` per transcript and the :class:`Report`
with exactly the fields of ``toolkeeper conformance run --json`` (issue 16), a canonical JSON
form and its digest. Every string that came from the target (findings, the target's name, the
era decision) passes the one redaction (:mod:`toolkeeper.contracts.redaction`) when the value is
built, so nothing written later can carry a secret. Rendering is :mod:`.render`'s."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.redaction import redact, redact_text

__all__ = ["OUTCOMES", "CaseResult", "Report"]

OUTCOMES: Final = ("pass", "fail", "skip")


@dataclass(frozen=True)
class CaseResult:
    """One case's result; ``finding`` is the first thing wrong (fail) or why it did not run
    (skip), None when it passed."""

    name: str
    case_class: str
    requirements: tuple[str, ...]
    outcome: str
    boundary: str | None
    expected_code: int | str | None
    observed_status: int | None = None
    observed_code: int | str | None = None
    finding: str | None = None

    def __post_init__(self) -> None:
        assert self.outcome in OUTCOMES
        if self.finding is not None:
            object.__setattr__(self, "finding", redact_text(self.finding))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "class": self.case_class,
                "requirements": list(self.requirements), "outcome": self.outcome,
                "boundary": self.boundary, "expectedCode": self.expected_code,
                "observedStatus": self.observed_status, "observedCode": self.observed_code,
                "finding": self.finding}


@dataclass(frozen=True)
class Report:
    """A run against one target: the era selected, its recorded decision, every case."""

    target: str
    era: str | None
    era_decision: dict[str, Any] | None
    cases: tuple[CaseResult, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", redact_text(self.target))
        if self.era_decision is not None:  # it quotes the target (the versions it listed)
            object.__setattr__(self, "era_decision", redact(self.era_decision)[0])

    def _count(self, outcome: str) -> int:
        return sum(1 for case in self.cases if case.outcome == outcome)

    @property
    def passed(self) -> int:
        return self._count("pass")

    @property
    def failed(self) -> int:
        return self._count("fail")

    @property
    def skipped(self) -> int:
        return self._count("skip")

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "era": self.era, "eraDecision": self.era_decision,
                "passed": self.passed, "failed": self.failed, "skipped": self.skipped,
                "total": len(self.cases), "cases": [case.to_json() for case in self.cases]}

    def canonical(self) -> bytes:
        return canonical_json(self.to_json())

    @property
    def digest(self) -> str:
        """``sha256:`` of the canonical form."""
        return "sha256:" + hashlib.sha256(self.canonical()).hexdigest()
