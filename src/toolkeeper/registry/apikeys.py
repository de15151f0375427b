"""API key records in the registry store (issue 13): what is kept, and the seam stores implement.

A key itself is never stored. A row holds its public id, a random salt, the salted hash of its
secret (the scheme is :mod:`toolkeeper.auth.keys`'s), who the key speaks for (tenant, scopes,
clearance), a name for people, and its times (ISO-8601 UTC, ``Z``). Keeping the rows in the
registry store puts them in the one place every gateway replica already reads (SQLite file or
PostgreSQL database).

Rows are never deleted and a row changes only by being revoked, once (migration 2's triggers hold
the SQL stores to it; :class:`~toolkeeper.registry.memory.MemoryStore` by construction). So the
number of revoked keys is a *revocation generation*: it moves exactly when some key is revoked,
and a verifier that caches verified keys needs only that one number, read now and then, to know
whether any cached key may have been revoked since.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.errors import StoreError

__all__ = [
    "KEY_COLUMNS",
    "ApiKeyRecord",
    "KeyStore",
    "key_from_row",
    "key_params",
    "key_store",
]

KEY_COLUMNS = "id, salt, hash, tenant, scopes, clearance, name, created, expires, revoked_at"
"""The ``api_keys`` columns in the order :func:`key_from_row` reads them."""


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """One stored key: ``salt`` and ``hash`` are hex; ``scopes`` sorted; times ISO-8601 UTC."""

    id: str
    salt: str
    hash: str
    tenant: str
    scopes: tuple[str, ...]
    clearance: str
    name: str | None
    created: str
    expires: str | None
    revoked_at: str | None = None

    def to_public_dict(self) -> dict[str, Any]:
        """What ``keys list`` shows: everything but the salt and the hash."""
        return {"id": self.id, "tenant": self.tenant, "scopes": list(self.scopes),
                "clearance": self.clearance, "name": self.name, "created": self.created,
                "expires": self.expires, "revokedAt": self.revoked_at}


@runtime_checkable
class KeyStore(Protocol):
    """The key half of a registry store (memory, SQLite, PostgreSQL all implement it)."""

    def add_key(self, record: ApiKeyRecord) -> None:
        """Store a new key; an id already stored is StoreError ``registry.conflict``."""
        ...

    def find_key(self, key_id: str) -> ApiKeyRecord | None:
        """The key with this id, revoked or not; None when there is none."""
        ...

    def list_keys(self) -> tuple[ApiKeyRecord, ...]:
        """Every key, oldest first (then by id)."""
        ...

    def revoke_key(self, key_id: str, at: str) -> ApiKeyRecord | None:
        """Revoke the key as of ``at`` and return it (a key already revoked keeps its first
        revocation time); None when there is no such key."""
        ...

    def key_revocations(self) -> int:
        """The revocation generation: how many keys are revoked (one cheap query)."""
        ...


def key_store(store: object) -> KeyStore:
    """``store`` as a :class:`KeyStore`; a store that keeps no keys is ``registry.keys_unsupported``."""
    if not isinstance(store, KeyStore):
        raise StoreError(f"{type(store).__name__} does not keep API keys",
                         code="registry.keys_unsupported")
    return store


def key_params(record: ApiKeyRecord) -> dict[str, Any]:
    """Named parameters for inserting a key row (scopes as canonical JSON)."""
    return {"id": record.id, "salt": record.salt, "hash": record.hash, "tenant": record.tenant,
            "scopes": canonical_json(list(record.scopes)).decode("utf-8"),
            "clearance": record.clearance, "name": record.name, "created": record.created,
            "expires": record.expires, "revoked_at": record.revoked_at}


def key_from_row(row: Sequence[Any]) -> ApiKeyRecord:
    """A row in :data:`KEY_COLUMNS` order back to a record."""
    key_id, salt, hashed, tenant, scopes, clearance, name, created, expires, revoked_at = row
    return ApiKeyRecord(str(key_id), str(salt), str(hashed), str(tenant),
                        tuple(str(s) for s in loads_json(scopes)), str(clearance), name,
                        str(created), expires, revoked_at)
