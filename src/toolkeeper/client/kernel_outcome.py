"""What one governed call produced, as data (issue 15's ``toolkeeper call --json`` object).

:class:`CallOutcome` says whether arguments were sent, under which contract version, which
repairs were applied, which errors remain, whether the kernel re-listed, and, when the
contract moved so that the arguments no longer fit, the :class:`Incompatibility`: the
classifier's changes between the two listed input schemas (rule ids, JSON paths, bumps,
reasons). Rendering is separate: :meth:`CallOutcome.to_dict` is the canonical form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkeeper.contracts.changes import Change
from toolkeeper.contracts.repair import Repair
from toolkeeper.contracts.validate import Issue

__all__ = ["CallOutcome", "Incompatibility"]


@dataclass(frozen=True, slots=True)
class Incompatibility:
    """The contract moved from ``from_version`` to ``to_version`` and the call's arguments do
    not fit the new one; ``changes`` are the classifier's, sorted by (path, rule)."""

    from_version: str | None
    to_version: str | None
    changes: tuple[Change, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.from_version, "to": self.to_version,
                "changes": [change.to_dict() for change in self.changes]}


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """One governed call. ``sent``: a ``tools/call`` went out whose answer is ``result`` or
    ``error`` (the JSON-RPC error object). ``arguments``: what was sent, or what would have
    been. ``errors``: what still refuses the arguments when nothing was sent (or, with
    ``incompatible``, what the new contract refuses). ``model_turns``: 0 or 1."""

    tool: str
    era: str | None
    schema_version: str | None
    arguments: Any
    repairs: tuple[Repair, ...] = ()
    errors: tuple[Issue, ...] = ()
    relisted: bool = False
    incompatible: Incompatibility | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    sent: bool = False
    model_turns: int = 0
    attempts: int = 0

    @property
    def ok(self) -> bool:
        """The call ran and its result is not ``isError``."""
        return self.result is not None and self.result.get("isError") is not True

    def to_dict(self) -> dict[str, Any]:
        """Issue 15's object: exactly these keys."""
        return {
            "ok": self.ok,
            "era": self.era,
            "tool": self.tool,
            "schemaVersion": self.schema_version,
            "repairs": [repair.to_dict() for repair in self.repairs],
            "errors": [issue.to_dict() for issue in self.errors],
            "relisted": self.relisted,
            "incompatible": self.incompatible.to_dict() if self.incompatible else None,
            "result": self.result,
            "error": self.error,
        }
