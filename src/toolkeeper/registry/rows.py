"""How records and audit entries are laid out in the SQL backends (shared by SQLite and PG).

A contract row stores the canonical JSON of ``spec_to_mapping(spec)`` (lifecycle included) and
is read back with ``spec_from_mapping(data, lifecycle=True)``. Beside it sit the columns the
database must enforce: ``version_key`` (the version *without* build metadata, i.e. its
precedence identity, so ``1.0.0+a`` and ``1.0.0+b`` collide on the unique key exactly as they
compare equal in Python) and ``content_digest`` (which a trigger keeps immutable). Versions are
never ordered in SQL: the registry sorts ``Version`` values in Python.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping, spec_to_mapping
from toolkeeper.errors import ContractError, StoreError
from toolkeeper.registry.store import ROLLOUT_ACTION_PREFIX, AuditEntry, AuditRecord

__all__ = [
    "CHANNEL",
    "NEWEST_SEQ",
    "audit_from_row",
    "audit_params",
    "changed_keys",
    "contract_params",
    "moves_rollouts",
    "spec_from_document",
    "version_key",
]

#: The PostgreSQL NOTIFY channel replicas listen on.
CHANNEL = "toolkeeper_registry"

NEWEST_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM audit"
"""The newest audit sequence number (0 for an empty trail): a store's change cursor."""


def version_key(version: Version) -> str:
    """The version's precedence identity: ``major.minor.patch[-prerelease]``, no build."""
    core = f"{version.major}.{version.minor}.{version.patch}"
    return core + ("-" + ".".join(version.prerelease) if version.prerelease else "")


def changed_keys(rows: list[tuple[Any, ...]]) -> list[tuple[str, str]]:
    """Distinct (name, version_key) of audit rows ``(name, version, ...)``, in a stable order."""
    return sorted({(row[0], version_key(Version.parse(row[1]))) for row in rows})


def moves_rollouts(rows: list[tuple[Any, ...]]) -> bool:
    """Whether any audit row ``(name, version, action)`` is a rollout write."""
    return any(str(row[2]).startswith(ROLLOUT_ACTION_PREFIX) for row in rows)


def contract_params(spec: ToolSpec) -> dict[str, Any]:
    """Named parameters for inserting or updating a contract row."""
    return {
        "name": spec.name,
        "version_key": version_key(spec.version),
        "version": str(spec.version),
        "content_digest": spec.content_digest,
        "status": spec.status.value,
        "document": canonical_json(spec_to_mapping(spec)).decode("utf-8"),
    }


@lru_cache(maxsize=8192)
def spec_from_document(document: str) -> ToolSpec:
    """A stored row back to a ToolSpec; a row that no longer parses is a StoreError.

    Cached by the document text: a row's text fully determines the record, and the guard
    re-reads a name's whole history on every publish (ToolSpecs are immutable values).
    """
    try:
        return spec_from_mapping(loads_json(document), lifecycle=True, trusted=True)
    except ContractError as exc:
        raise StoreError(f"a stored contract is unreadable: {exc.message}",
                         code="registry.corrupt") from None


def audit_params(record: AuditRecord) -> dict[str, Any]:
    """Named parameters for appending an audit row."""
    verdict = canonical_json(dict(record.verdict)).decode("utf-8") if record.verdict else None
    return {"at": record.at, "actor": record.actor, "action": record.action,
            "name": record.name, "version": record.version, "rule": record.rule,
            "verdict": verdict}


def audit_from_row(row: tuple[Any, ...]) -> AuditEntry:
    """``(seq, at, actor, action, name, version, rule, verdict)`` to an AuditEntry."""
    seq, at, actor, action, name, version, rule, verdict = row
    return AuditEntry(int(seq), at, actor, action, name, version, rule,
                      loads_json(verdict) if verdict is not None else None)
