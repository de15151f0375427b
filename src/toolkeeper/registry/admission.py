"""Admission records (issue 23): what the publish guard decided when it let a version in.

Every publish that stores a version writes, in the same store transaction, one
:class:`AdmissionRecord`: the tool and version, the classification the guard judged it by
(``major``, ``minor``, ``patch``, or ``initial`` when it was judged against no earlier version:
a first publish, or a pre-release train with no release before it), the change rule ids the
classifier found, the guard rule ids it was checked by and passed, the version it was judged
against (``previous``, or null) and the contract's digest (:attr:`ToolSpec.content_digest`,
the SHA-256 of the content's canonical JSON). Its :attr:`~AdmissionRecord.digest` is the
SHA-256 of the record's canonical JSON: no time, no actor, so the same decision has the same
digest on every backend. Records are append-only; a version published before the stores kept
them has none (:meth:`~toolkeeper.registry.Registry.admission` is then ``None``, never made up).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import ContractError, StoreError
from toolkeeper.registry.guard import GuardDecision

__all__ = ["INITIAL", "AdmissionRecord", "admission_from_row", "admission_of",
           "admission_params"]

INITIAL: Final = "initial"
"""The classification of a version judged against no earlier one."""
_KEYS: Final = frozenset({"tool", "version", "classification", "changeRules", "guardRules",
                          "previous", "contractDigest"})


@dataclass(frozen=True, slots=True)
class AdmissionRecord:
    """The guard's decision on one stored version (see the module docstring)."""

    tool: str
    version: str
    classification: str
    change_rules: tuple[str, ...]
    guard_rules: tuple[str, ...]
    previous: str | None
    contract_digest: str

    def to_dict(self) -> dict[str, Any]:
        """The record's canonical form (camelCase keys, rule ids sorted)."""
        return {"tool": self.tool, "version": self.version,
                "classification": self.classification,
                "changeRules": sorted(self.change_rules),
                "guardRules": sorted(self.guard_rules), "previous": self.previous,
                "contractDigest": self.contract_digest}

    @property
    def digest(self) -> str:
        """SHA-256 (hex) of the canonical JSON of :meth:`to_dict`."""
        return hashlib.sha256(canonical_json(self.to_dict())).hexdigest()

    @classmethod
    def from_dict(cls, data: Any) -> AdmissionRecord:
        """The record of its canonical form; anything else is StoreError
        ``registry.corrupt``."""
        if not isinstance(data, dict) or set(data) != _KEYS or not all(
                isinstance(data[k], str) for k in ("tool", "version", "classification",
                                                   "contractDigest")) or not all(
                isinstance(data[k], list) and all(isinstance(r, str) for r in data[k])
                for k in ("changeRules", "guardRules")) or not (
                data["previous"] is None or isinstance(data["previous"], str)):
            raise _corrupt("is malformed")
        return cls(data["tool"], data["version"], data["classification"],
                   tuple(data["changeRules"]), tuple(data["guardRules"]), data["previous"],
                   data["contractDigest"])


def _corrupt(why: str) -> StoreError:
    return StoreError(f"a stored admission record {why}", code="registry.corrupt")


def admission_of(stored: ToolSpec, decision: GuardDecision) -> AdmissionRecord:
    """The admission record of ``stored``, the version ``decision`` let in."""
    verdict = decision.verdict
    return AdmissionRecord(
        tool=stored.name, version=str(stored.version),
        classification=verdict.bump.value if verdict else INITIAL,
        change_rules=tuple(sorted({c.rule for c in verdict.changes})) if verdict else (),
        guard_rules=tuple(sorted(decision.checks)),
        previous=str(decision.reference.version) if decision.reference else None,
        contract_digest=stored.content_digest)


def admission_params(record: AdmissionRecord, version_key: str) -> dict[str, Any]:
    """Named parameters for an ``admissions`` row (``version_key``: the precedence identity,
    as the contracts row has it)."""
    return {"name": record.tool, "version_key": version_key, "version": record.version,
            "digest": record.digest,
            "record": canonical_json(record.to_dict()).decode("utf-8")}


def admission_from_row(record: str, digest: str) -> AdmissionRecord:
    """A stored row back to its record; one whose digest no longer matches is
    ``registry.corrupt``."""
    try:
        parsed = AdmissionRecord.from_dict(loads_json(record))
    except ContractError:
        raise _corrupt("is not JSON") from None
    if parsed.digest != digest:
        raise _corrupt("does not match its digest")
    return parsed
