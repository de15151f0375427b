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

__all__ = ["MODES", "OUTCOMES", "CaseResult", "EraVerdict", "Report"]

OUTCOMES: Final = ("pass", "fail", "warn", "note", "skip")
MODES: Final = ("live", "recorded")
_LIVE_COUNTS: Final = (("passed", "pass"), ("failed", "fail"), ("warned", "warn"),
                       ("noted", "note"), ("skipped", "skip"))
_SELFCHECK_COUNTS: Final = (("passed", "pass"), ("failed", "fail"))


@dataclass(frozen=True)
class CaseResult:
    """One case's result; ``finding`` is the first thing wrong at the outcome's level (fail,
    warn, note) or why it did not run (skip), None when it passed. ``mode`` says whether the
    target was asked (live) or the harness's own judgment was checked against a stored answer
    (recorded: a self-check, never the target's pass); ``level`` and ``citation`` name the
    requirement; ``tool`` and ``arguments`` (redacted) what a tool case called."""

    name: str
    case_class: str
    requirements: tuple[str, ...]
    outcome: str
    boundary: str | None
    expected_code: int | str | None
    observed_status: int | None = None
    observed_code: int | str | None = None
    finding: str | None = None
    mode: str = "live"
    level: str | None = None
    citation: dict[str, str] | None = None
    tool: str | None = None
    arguments: Any = None

    def __post_init__(self) -> None:
        assert self.outcome in OUTCOMES and self.mode in MODES
        if self.finding is not None:
            object.__setattr__(self, "finding", redact_text(self.finding))
        if self.arguments is not None:
            object.__setattr__(self, "arguments", redact(self.arguments)[0])

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "class": self.case_class, "mode": self.mode,
                "requirements": list(self.requirements), "level": self.level,
                "citation": self.citation, "outcome": self.outcome,
                "boundary": self.boundary, "expectedCode": self.expected_code,
                "observedStatus": self.observed_status, "observedCode": self.observed_code,
                "tool": self.tool, "arguments": self.arguments, "finding": self.finding}


@dataclass(frozen=True)
class EraVerdict:
    """Why an era's live cases did not run: ``era.unserved`` (the target does not serve it;
    its cases are skipped) with the reason."""

    era: str
    verdict: str
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", redact_text(self.reason))

    def to_json(self) -> dict[str, str]:
        return {"era": self.era, "verdict": self.verdict, "reason": self.reason}


@dataclass(frozen=True)
class Report:
    """A run against one target: the era selected, its recorded decision, the eras that did
    not run, every case."""

    target: str
    era: str | None
    era_decision: dict[str, Any] | None
    cases: tuple[CaseResult, ...]
    eras: tuple[EraVerdict, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", redact_text(self.target))
        if self.era_decision is not None:  # it quotes the target (the versions it listed)
            object.__setattr__(self, "era_decision", redact(self.era_decision)[0])

    def _count(self, mode: str, outcome: str) -> int:
        return sum(1 for case in self.cases if case.mode == mode and case.outcome == outcome)

    @property
    def live(self) -> dict[str, int]:
        """The target's own counts: live cases by outcome."""
        return {key: self._count("live", outcome) for key, outcome in _LIVE_COUNTS}

    @property
    def selfcheck(self) -> dict[str, int]:
        """The harness's own validators against stored bad answers (recorded cases)."""
        return {key: self._count("recorded", outcome) for key, outcome in _SELFCHECK_COUNTS}

    @property
    def passed(self) -> int:
        """Live passes (recorded cases never count as the target's)."""
        return self._count("live", "pass")

    @property
    def failed(self) -> int:
        """Live failures and failed self-checks: what makes the run exit 1."""
        return self._count("live", "fail") + self._count("recorded", "fail")

    @property
    def warned(self) -> int:
        return self._count("live", "warn")

    @property
    def noted(self) -> int:
        return self._count("live", "note")

    @property
    def skipped(self) -> int:
        return self._count("live", "skip")

    def exit_code(self, strict: bool = False) -> int:
        """1 on a fail (``strict``: also on a warn), else 0."""
        return 1 if self.failed or (strict and self.warned) else 0

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "era": self.era, "eraDecision": self.era_decision,
                "eras": [verdict.to_json() for verdict in self.eras],
                "live": self.live, "selfcheck": self.selfcheck, "total": len(self.cases),
                "cases": [case.to_json() for case in self.cases]}

    def canonical(self) -> bytes:
        return canonical_json(self.to_json())

    @property
    def digest(self) -> str:
        """``sha256:`` of the canonical form."""
        return "sha256:" + hashlib.sha256(self.canonical()).hexdigest()
