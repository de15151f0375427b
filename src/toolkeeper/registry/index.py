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
from toolkeeper.registry.discovery import ViewKey
from toolkeeper.registry.principal import Principal

__all__ = ["Index"]


class Index:
    """Records by name (versions oldest first) and the sorted list of names."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[ToolSpec]] = {}
        self.names: list[str] = []
        self._keys: dict[str, list[Version]] = {}
        self._scopes: set[str] = set()
        self._tenants: set[str] = set()

    def apply(self, specs: Iterable[ToolSpec]) -> int:
        """Insert or replace records; returns how many differed from what was indexed."""
        changed = 0
        for spec in specs:
            changed += self._put(spec)
        return changed

    def _put(self, spec: ToolSpec) -> int:
        versions = self.by_name.get(spec.name)
        if versions is None:
            bisect.insort(self.names, spec.name)
            versions = self.by_name[spec.name] = []
            self._keys[spec.name] = []
        keys = self._keys[spec.name]
        i = bisect.bisect_left(keys, spec.version)
        if i < len(keys) and keys[i] == spec.version:
            if versions[i] == spec:
                return 0
            versions[i] = spec
        else:
            keys.insert(i, spec.version)
            versions.insert(i, spec)
        self._scopes.update(spec.required_scopes)
        self._tenants.update(spec.tenants)
        return 1

    def get(self, name: str, version: Version) -> ToolSpec | None:
        keys = self._keys.get(name)
        if keys is None:
            return None
        i = bisect.bisect_left(keys, version)
        return self.by_name[name][i] if i < len(keys) and keys[i] == version else None

    def view_key(self, principal: Principal, include_deprecated: bool) -> ViewKey:
        """The principal reduced to what can change its view (irrelevant scopes dropped)."""
        tenant = principal.tenant if principal.tenant in self._tenants else None
        scopes = principal.scopes & self._scopes if principal.scopes else frozenset()
        return (tenant, frozenset(scopes), classification_rank(principal.clearance),
                include_deprecated)
