"""Spent request states in the registry store: which sealed ``requestState`` has already run
a tool that must not run twice, for every replica sharing the store.

A row is the digest of a sealed state (its token's SHA-256, hex: the sealer spells one state
one way only) and the state's own expiry (epoch seconds). Recording is insert-if-absent on
the digest, the table's primary key, in one statement: of two replicas (or two requests of one)
recording the same digest at once, exactly one is told it recorded it. A row is useless once
its state has expired (the sealer refuses the state itself as ``expired`` from then on), so
rows whose expiry has passed are deleted by :meth:`SpentStateStore.purge_spent_states`, one
statement over the expiry's index (migration 4). Memory, SQLite and PostgreSQL stores
implement it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from toolkeeper.errors import StoreError

__all__ = ["SpentStateStore", "spent_state_store"]


@runtime_checkable
class SpentStateStore(Protocol):
    """The spent-state half of a registry store."""

    def spend_state(self, digest: str, expires_at: float) -> bool:
        """Record ``digest`` as spent until ``expires_at``: True when this call recorded it,
        False when it was recorded already (a replay), atomically across processes."""
        ...

    def purge_spent_states(self, now: float) -> int:
        """Delete the records whose expiry is at or before ``now``; how many were."""
        ...


def spent_state_store(store: object) -> SpentStateStore:
    """``store`` as a :class:`SpentStateStore`; one that keeps none is
    ``registry.spent_states_unsupported``."""
    if not isinstance(store, SpentStateStore):
        raise StoreError(f"{type(store).__name__} does not keep spent request states",
                         code="registry.spent_states_unsupported")
    return store
