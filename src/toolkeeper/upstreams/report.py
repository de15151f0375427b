"""What a sync of an upstream did, tool by tool: :class:`ToolOutcome` and :class:`SyncReport`.

Each listed (or formerly listed) tool gets one outcome, whose ``action`` is one of
:data:`ACTIONS`; an outcome that imported nothing carries the error ``code`` of why
(``upstream.tool_invalid``, ``upstream.name_collision``, or a publish refusal's rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolkeeper.upstreams.drift import Drift

__all__ = ["ACTIONS", "NOT_IMPORTED", "SyncReport", "ToolOutcome"]

ACTIONS: Mapping[str, str] = {
    "imported": "first seen: published as its first version",
    "published": "a drift the policy publishes: published as the next version",
    "quarantined": "a drift kept for an operator; the contract in force keeps serving",
    "rejected": "the drift an operator rejected is still served upstream; nothing changed",
    "unchanged": "the upstream serves the descriptor in force",
    "restored": "back upstream with the descriptor last in force: published again",
    "deprecated": "gone upstream: its contract is deprecated (kept, not removed)",
    "missing": "still gone upstream (deprecated before)",
    "invalid": "not a valid contract (upstream.tool_invalid): not imported",
    "collision": "its exposed name is another tool's (upstream.name_collision): not imported",
    "refused": "the publish guard refused the version (its rule is the code)",
}
"""Every outcome action and what it means."""

NOT_IMPORTED: frozenset[str] = frozenset({"invalid", "collision", "refused"})
"""The actions of a tool the upstream lists that the gateway does not serve as listed."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a sync did with one upstream tool."""

    tool: str
    exposed: str
    action: str
    version: str | None = None
    """The version in force after the sync (None when nothing of the tool is in force)."""
    digest: str | None = None
    """The digest of the descriptor the upstream serves now (None: not listed)."""
    code: str | None = None
    drift: Drift | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "exposed": self.exposed,
                               "action": self.action, "version": self.version,
                               "digest": self.digest}
        if self.code is not None:
            out["code"] = self.code
        if self.drift is not None:
            out["drift"] = self.drift.to_dict()
        if self.data:
            out["data"] = dict(self.data)
        return out


@dataclass(frozen=True, slots=True)
class SyncReport:
    """Every tool's outcome, sorted by tool name."""

    upstream: str
    tools: tuple[ToolOutcome, ...]

    def outcome(self, tool: str) -> ToolOutcome | None:
        return next((o for o in self.tools if o.tool == tool), None)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for outcome in self.tools:
            out[outcome.action] = out.get(outcome.action, 0) + 1
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {"upstream": self.upstream, "counts": self.counts(),
                "tools": [o.to_dict() for o in self.tools]}
