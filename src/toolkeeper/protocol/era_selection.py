"""Era selection (SPEC 5.1) as a pure function of what was observed, and its recorded decision.

The caller (the client's ``connect``, the conformance harness) runs the probes; this module
only judges. :func:`select_era` is called first with no observation (it answers "probe modern"
unless the policy is legacy-only), then with the modern probe's :class:`ModernObservation`, and,
when it asks for one, with the :class:`LegacyEvidence` of one bounded ``initialize``:

===========  ============================  ============  ==================  ===============
mode         modern probe observed          allow-listed  legacy evidence     decision
===========  ============================  ============  ==================  ===============
strict/fb    nothing yet                    any           any                 probe modern
strict/fb    discover lists our version     any           any                 modern
strict/fb    -32020 / -32021 / -32022       any           any                 modern
strict/fb    discover, no mutual version    any           any                 none
strict       inconclusive                   any           any                 none
fallback     inconclusive                   no            any                 none
fallback     inconclusive                   yes           none yet            probe legacy
fallback     inconclusive                   yes           valid, legacy rev.  legacy
fallback     timeout                        yes           timeout             unreachable
fallback     inconclusive                   yes           modern error        none (modern)
fallback     inconclusive                   yes           invalid             none
legacy-only  (not probed)                   no            any                 none
legacy-only  (not probed)                   yes           none yet            probe legacy
legacy-only  (not probed)                   yes           valid, legacy rev.  legacy
legacy-only  (not probed)                   yes           timeout             unreachable
legacy-only  (not probed)                   yes           modern error        none (modern)
legacy-only  (not probed)                   yes           invalid             none
===========  ============================  ============  ==================  ===============

Inconclusive = a timeout, an empty answer, a closed connection or an unrecognised answer: none
of them proves the peer is legacy, so by itself it never selects the legacy era. A recognised
modern error proves the peer modern and carries the corrective information (a header mismatch,
a missing capability, an unsupported version): falling back would hide it, and would let a
proxy that drops modern answers force a downgrade.

A target silent to every probe it got (the modern probe timed out, or was not sent, and so did
``initialize``) is ``unreachable.timeout``: nothing was observed, so it is neither era's verdict
(the client raises ``client.timeout``). An ``initialize`` refused with a recognised modern
error (-32022 from a modern-only server) is ``era.legacy_refused``: the peer answered, in the
modern era, that it does not serve the legacy one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.protocol.responses import RECOGNISED_MODERN_ERRORS
from toolkeeper.protocol.versions import HANDSHAKE_VERSIONS, LATEST_MODERN_VERSION, Era

__all__ = [
    "INCONCLUSIVE",
    "EraDecision",
    "LegacyEvidence",
    "ModernObservation",
    "Next",
    "ProbeOutcome",
    "SelectionMode",
    "select_era",
]


class SelectionMode(enum.Enum):
    """The endpoint's era policy. The client's ``era`` argument maps onto it: ``modern`` ->
    STRICT, ``auto`` -> FALLBACK, ``legacy`` -> LEGACY (no modern probe; the caller naming the
    legacy era counts as allow-listing the endpoint)."""

    STRICT = "strict"
    FALLBACK = "fallback"
    LEGACY = "legacy"


class ProbeOutcome(enum.Enum):
    """What the one bounded modern probe (``server/discover``) observed."""

    DISCOVERED = "discovered"
    """A valid discover result listing a modern version this client speaks."""
    MODERN_ERROR = "modern_error"
    """A recognised modern error (-32020, -32021, -32022)."""
    NO_MUTUAL_VERSION = "no_mutual_version"
    """A valid discover result listing no modern version this client speaks."""
    TIMEOUT = "timeout"
    EMPTY = "empty"
    CLOSED = "closed"
    UNRECOGNISED = "unrecognised"


INCONCLUSIVE: Final = frozenset({ProbeOutcome.TIMEOUT, ProbeOutcome.EMPTY, ProbeOutcome.CLOSED,
                                  ProbeOutcome.UNRECOGNISED})
_PROVES_MODERN: Final = frozenset({ProbeOutcome.DISCOVERED, ProbeOutcome.MODERN_ERROR})


class Next(enum.Enum):
    """The probe a decision asks for before it can select an era."""

    MODERN_PROBE = "modern_probe"
    LEGACY_PROBE = "legacy_probe"


@dataclass(frozen=True)
class ModernObservation:
    """The modern probe's outcome and the facts behind it (HTTP status, error code, the
    versions the peer named, and a short detail such as the validator's first problem)."""

    outcome: ProbeOutcome
    http_status: int | None = None
    error_code: int | None = None
    versions: tuple[str, ...] = ()
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome.value, "httpStatus": self.http_status,
                "errorCode": self.error_code, "versions": list(self.versions),
                "detail": self.detail}


@dataclass(frozen=True)
class LegacyEvidence:
    """The bounded legacy probe's evidence: the revision ``initialize`` negotiated and every
    problem the legacy validator found in its answer (none: the answer validated);
    ``failure`` is the client error code when no answer came (``client.timeout``), and
    ``error_code`` the JSON-RPC error code when ``initialize`` was refused."""

    negotiated_version: str | None
    problems: tuple[str, ...] = ()
    http_status: int | None = None
    failure: str | None = None
    error_code: int | None = None

    @property
    def valid(self) -> bool:
        """The result validated and negotiated a legacy (handshake) revision."""
        return not self.problems and self.negotiated_version in HANDSHAKE_VERSIONS

    def to_json(self) -> dict[str, Any]:
        return {"negotiatedVersion": self.negotiated_version, "problems": list(self.problems),
                "httpStatus": self.http_status, "valid": self.valid,
                "failure": self.failure, "errorCode": self.error_code}


@dataclass(frozen=True)
class EraDecision:
    """A recorded decision: the policy, what was observed, the exact legacy evidence, and the
    era selected (None while a probe is still needed, or when the policy refuses)."""

    mode: SelectionMode
    legacy_allowed: bool
    observation: ModernObservation | None
    legacy_evidence: LegacyEvidence | None
    verdict: str
    era: Era | None = None
    version: str | None = None
    next: Next | None = None

    def to_json(self) -> dict[str, Any]:
        """The canonical JSON form (a dict; :meth:`canonical` gives its bytes)."""
        return {
            "policy": {"mode": self.mode.value, "legacyAllowed": self.legacy_allowed},
            "observation": None if self.observation is None else self.observation.to_json(),
            "legacyEvidence": (None if self.legacy_evidence is None
                               else self.legacy_evidence.to_json()),
            "verdict": self.verdict,
            "era": None if self.era is None else self.era.value,
            "version": self.version,
            "next": None if self.next is None else self.next.value,
        }

    def canonical(self) -> bytes:
        return canonical_json(self.to_json())


@dataclass(frozen=True)
class _Facts:
    mode: SelectionMode
    legacy_allowed: bool
    outcome: ProbeOutcome | None
    evidence: LegacyEvidence | None


_Rule = tuple[Callable[[_Facts], bool], str, Era | None, Next | None]


def _modern_policy(f: _Facts) -> bool:
    return f.mode is not SelectionMode.LEGACY


def _legacy_possible(f: _Facts) -> bool:
    """The policy permits the legacy probe: legacy-only mode, or fallback after an
    inconclusive modern probe, and in both cases an allow-listed endpoint."""
    if not f.legacy_allowed:
        return False
    return f.mode is SelectionMode.LEGACY or (
        f.mode is SelectionMode.FALLBACK and f.outcome in INCONCLUSIVE)


def _silent(f: _Facts) -> bool:
    """Every probe sent timed out: the legacy one, and the modern one unless not sent."""
    return f.evidence is not None and f.evidence.failure == "client.timeout" and (
        f.mode is SelectionMode.LEGACY or f.outcome is ProbeOutcome.TIMEOUT)


_RULES: Final[tuple[_Rule, ...]] = (
    (lambda f: _modern_policy(f) and f.outcome is None,
     "probe.modern", None, Next.MODERN_PROBE),
    (lambda f: _modern_policy(f) and f.outcome is ProbeOutcome.DISCOVERED,
     "modern.discovered", Era.MODERN, None),
    (lambda f: _modern_policy(f) and f.outcome is ProbeOutcome.MODERN_ERROR,
     "modern.recognised_error", Era.MODERN, None),
    (lambda f: _modern_policy(f) and f.outcome is ProbeOutcome.NO_MUTUAL_VERSION,
     "refused.no_mutual_version", None, None),
    (lambda f: f.mode is SelectionMode.STRICT,
     "refused.strict_unproven", None, None),
    (lambda f: not _legacy_possible(f),
     "refused.legacy_not_allowed", None, None),
    (lambda f: f.evidence is None,
     "probe.legacy", None, Next.LEGACY_PROBE),
    (lambda f: f.evidence is not None and f.evidence.valid,
     "legacy.initialized", Era.LEGACY, None),
    (_silent, "unreachable.timeout", None, None),
    (lambda f: f.evidence is not None and f.evidence.error_code in RECOGNISED_MODERN_ERRORS,
     "era.legacy_refused", None, None),
    (lambda f: True,
     "refused.legacy_invalid", None, None),
)
"""First matching row wins (module docstring's table, in evaluation order)."""


def select_era(observation: ModernObservation | None, mode: SelectionMode,
               legacy_allowed: bool = False, legacy_evidence: LegacyEvidence | None = None
               ) -> EraDecision:
    """Judge the observations under the policy (SPEC 5.1); pure, no I/O. ``era`` on the
    decision is None with ``next`` set while a probe is needed, and None without ``next``
    when the policy refuses every era."""
    outcome = None if observation is None or mode is SelectionMode.LEGACY \
        else observation.outcome
    facts = _Facts(mode, legacy_allowed, outcome, legacy_evidence)
    for applies, verdict, era, step in _RULES:
        if applies(facts):
            version = (LATEST_MODERN_VERSION if era is Era.MODERN else
                       legacy_evidence.negotiated_version if era is Era.LEGACY
                       and legacy_evidence is not None else None)
            return EraDecision(mode, legacy_allowed, observation, legacy_evidence, verdict,
                               era, version, step)
    raise AssertionError("the last rule always applies")  # pragma: no cover
