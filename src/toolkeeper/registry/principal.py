"""Who is asking: a tenant, a set of scopes and a clearance (SPEC 2.3).

An unknown clearance is an error, never a default: a typo must not silently widen (or narrow)
what a caller sees. ``credential`` names the credential that authenticated the caller (an API
key's id, or ``iss#sub`` of a JWT; never a secret): it decides who owns a legacy session, never
what the caller sees, so caches of views and routes key on the entitlement alone
(:attr:`Principal.entitlement`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from toolkeeper.contracts.spec import DataClassification
from toolkeeper.errors import PrincipalError

__all__ = ["Principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller of the registry. Build from untrusted text with :meth:`parse`."""

    tenant: str
    scopes: frozenset[str]
    clearance: DataClassification
    credential: str | None = None
    """The authenticating credential's id (None: anonymous, or not told)."""

    @property
    def entitlement(self) -> tuple[str, frozenset[str], DataClassification]:
        """What decides visibility: tenant, scopes and clearance (not the credential)."""
        return (self.tenant, self.scopes, self.clearance)

    @classmethod
    def parse(cls, tenant: str, scopes: Iterable[str], clearance: str,
              credential: str | None = None) -> Principal:
        """Validate and build a principal; every refusal is a :class:`PrincipalError` with a code."""
        if not isinstance(tenant, str) or not tenant.strip():
            raise PrincipalError("a principal needs a non-empty tenant",
                                 code="principal.tenant_invalid")
        scope_set: set[str] = set()
        for scope in scopes:
            if not isinstance(scope, str) or not scope.strip():
                raise PrincipalError(f"scope {scope!r} is not a non-empty string",
                                     code="principal.scope_invalid")
            scope_set.add(scope)
        try:
            level = DataClassification(clearance)
        except ValueError:
            allowed = ", ".join(c.value for c in DataClassification)
            raise PrincipalError(
                f"unknown clearance {clearance!r} (expected one of {allowed})",
                code="principal.clearance_unknown",
                data={"clearance": clearance, "allowed": [c.value for c in DataClassification]},
            ) from None
        if credential is not None and (not isinstance(credential, str) or not credential):
            raise PrincipalError("a credential id must be a non-empty string",
                                 code="principal.credential_invalid")
        return cls(tenant, frozenset(scope_set), level, credential)
