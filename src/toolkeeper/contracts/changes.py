"""Values the change classifier produces: the bump, each change found, and the verdict."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["Bump", "Change", "Verdict"]


class Bump(enum.Enum):
    """Semver bump a change requires. Ordered: PATCH < MINOR < MAJOR."""

    PATCH = "patch"
    MINOR = "minor"
    MAJOR = "major"

    @property
    def rank(self) -> int:
        return _BUMP_RANK[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Bump):
            return NotImplemented
        return self.rank < other.rank


_BUMP_RANK = {Bump.PATCH: 0, Bump.MINOR: 1, Bump.MAJOR: 2}


@dataclass(frozen=True, slots=True, order=True)
class Change:
    """One change found: where (JSON path into the contract), which stable rule, the bump it
    requires, and a reason for people. Sorts by (path, rule)."""

    path: str
    rule: str
    bump: Bump
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "path": self.path, "bump": self.bump.value,
                "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The overall bump (the largest of the changes; PATCH when none) and every change, sorted."""

    bump: Bump
    changes: tuple[Change, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"bump": self.bump.value, "changes": [c.to_dict() for c in self.changes]}
