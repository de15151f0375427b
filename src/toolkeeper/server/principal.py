"""Who is calling: a principal resolver is any callable of the transport facts.

Without configured authentication the gateway uses :class:`LocalPrincipal`: tenant ``local``,
every scope any contract in the estate requires, clearance ``restricted``, so a local user sees
the whole estate (except contracts restricted to named tenants). Authentication plugs in by
passing another resolver; raising a JsonRpcError from it refuses the request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from toolkeeper.contracts.spec import DataClassification
from toolkeeper.protocol import TransportFacts
from toolkeeper.registry import Principal, Registry

__all__ = ["LocalPrincipal", "PrincipalResolver", "fixed_principal"]

PrincipalResolver = Callable[[TransportFacts], Principal]

LOCAL_TENANT = "local"


class LocalPrincipal:
    """The anonymous local principal, its scope set recomputed when the registry changes."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._cached: tuple[int, Principal] | None = None

    def __call__(self, facts: TransportFacts) -> Principal:
        generation = self._registry.generation_since(facts.received_ns)
        cached = self._cached
        if cached is not None and cached[0] == generation:
            return cached[1]
        principal = Principal(LOCAL_TENANT, self._registry.required_scopes(),
                              DataClassification.RESTRICTED)
        with self._lock:
            self._cached = (generation, principal)
        return principal


def fixed_principal(principal: Principal) -> PrincipalResolver:
    """A resolver that always answers ``principal`` (tests, single-tenant deployments)."""
    def resolve(facts: TransportFacts) -> Principal:
        return principal
    return resolve
