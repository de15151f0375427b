"""The registry's in-memory index: every record by name, versions sorted by precedence.

Loaded from the store at open and patched from ``Snapshot`` deltas; the store stays the source
of truth on writes. Also tracks the scopes and tenants contracts mention, so discovery can
normalise a principal to the part of it that can change what it sees.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, classification_rank
from toolkeeper.registry.discovery import Gate, ViewKey, gate_of
from toolkeeper.registry.principal import Principal

__all__ = ["Index"]


class Index:
    """Records by name (versions oldest first), their discovery gates, the sorted names."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[ToolSpec]] = {}
        self.names: list[str] = []
        self.gates: dict[str, list[Gate]] = {}  # per name, newest first (discovery's walk)
        self._keys: dict[str, list[Version]] = {}
        self._scopes: set[str] = set()
        self._tenants: set[str] = set()

    def apply(self, specs: Iterable[ToolSpec]) -> int:
        """Insert or replace records; returns how many names changed (0: nothing new)."""
        touched = {spec.name for spec in specs if self._put(spec)}
        for name in touched:
            self.gates[name] = [gate_of(s) for s in reversed(self.by_name[name])]
        return len(touched)

    def _put(self, spec: ToolSpec) -> bool:
        versions = self.by_name.get(spec.name)
        if versions is None:
            bisect.insort(self.names, spec.name)
            versions = self.by_name[spec.name] = []
            self._keys[spec.name] = []
        keys = self._keys[spec.name]
        i = bisect.bisect_left(keys, spec.version)
        if i < len(keys) and keys[i] == spec.version:
            if versions[i] == spec:
                return False
            versions[i] = spec
        else:
            keys.insert(i, spec.version)
            versions.insert(i, spec)
        self._scopes.update(spec.required_scopes)
        self._tenants.update(spec.tenants)
        return True

    @property
    def scopes(self) -> frozenset[str]:
        """Every scope a stored record requires."""
        return frozenset(self._scopes)

    def get(self, name: str, version: Version) -> ToolSpec | None:
        keys = self._keys.get(name)
        if keys is None:
            return None
        i = bisect.bisect_left(keys, version)
        return self.by_name[name][i] if i < len(keys) and keys[i] == version else None

    def view_key(self, principal: Principal, include_deprecated: bool,
                 hidden: frozenset[tuple[str, Version]] = frozenset()) -> ViewKey:
        """The principal reduced to what can change its view (irrelevant scopes dropped), and
        the versions hidden from it."""
        tenant = principal.tenant if principal.tenant in self._tenants else None
        scopes = principal.scopes & self._scopes if principal.scopes else frozenset()
        return (tenant, frozenset(scopes), classification_rank(principal.clearance),
                include_deprecated, hidden)
