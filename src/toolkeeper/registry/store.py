"""The storage seam (SPEC 2.4): one interface, three backends (memory, SQLite, PostgreSQL).

Stores are deliberately dumb: they keep records and an append-only audit trail, and they give
the registry a *transaction per tool name* in which it re-reads the name's history, runs the
publish guard or a lifecycle rule, and writes. Which backend is used never changes a decision,
because every decision is taken by the registry inside that transaction. The guarantees a
backend must give (the shared contract suite in ``tests/registry`` holds every backend to them):

* ``change(name)`` serialises writers of one name across threads *and processes*; ``insert`` is
  backed by a unique key on (name, version precedence), so two racing publishers cannot both win
  even if serialisation were broken; an exception inside the block rolls everything back
  (records *and* audit entries).
* Audit sequence numbers are assigned in commit order, so ``changes_since(cursor)`` never skips a
  change that commits late; the audit trail is append-only.
* ``watch(callback)`` reports changes committed through *other* store instances (PostgreSQL:
  LISTEN/NOTIFY on a dedicated connection); ``stale()`` is the pull side a read checks first, so
  a read begun after another instance's commit sees it (SQLite: ``PRAGMA data_version``;
  PostgreSQL: one round trip for the newest audit sequence number; a NOTIFY comes later).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.registry.admission import AdmissionRecord

__all__ = [
    "ROLLOUT_ACTION_PREFIX",
    "AuditEntry",
    "AuditRecord",
    "RegistryStore",
    "Snapshot",
    "StoreTransaction",
    "utc_now",
]


ROLLOUT_ACTION_PREFIX = "rollout."
"""The audit action prefix of a rollout write (:mod:`toolkeeper.registry.rollout_rows`)."""


def utc_now() -> str:
    """The current UTC time as ISO-8601 with microseconds and a ``Z`` suffix."""
    now = _dt.datetime.now(_dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """An audit entry before the store numbers it: who did what to which contract, and why.

    ``rule`` is ``None`` when the change was applied and the refusal rule id otherwise;
    ``verdict`` is the classifier's ``Verdict.to_dict()`` when one was computed, and for a
    deprecation what the record says after it (``deprecationMessage``, ``successor``).
    """

    at: str
    actor: str
    action: str
    name: str
    version: str
    rule: str | None = None
    verdict: Mapping[str, Any] | None = None

    @property
    def applied(self) -> bool:
        return self.rule is None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One numbered, immutable line of the audit trail (``seq`` grows in commit order)."""

    seq: int
    at: str
    actor: str
    action: str
    name: str
    version: str
    rule: str | None
    verdict: Mapping[str, Any] | None

    @classmethod
    def from_record(cls, seq: int, record: AuditRecord) -> AuditEntry:
        return cls(seq, record.at, record.actor, record.action, record.name, record.version,
                   record.rule, record.verdict)

    @property
    def applied(self) -> bool:
        return self.rule is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "seq": self.seq, "at": self.at, "actor": self.actor, "action": self.action,
            "name": self.name, "version": self.version,
        }
        if self.rule is not None:
            out["rule"] = self.rule
        if self.verdict is not None:
            out["verdict"] = dict(self.verdict)
        return out


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Records as of audit sequence ``cursor`` (all of them, or those changed after a cursor)."""

    cursor: int
    specs: tuple[ToolSpec, ...]
    rollouts: bool = False
    """Whether a rollout was written after the cursor asked about (an audit entry whose action
    starts with :data:`ROLLOUT_ACTION_PREFIX`): it moves the registry generation."""


class StoreTransaction(Protocol):
    """Writes to one tool name, all-or-nothing."""

    def versions(self) -> list[ToolSpec]:
        """Every stored version of the name (any status), oldest first, read inside the lock."""
        ...

    def insert(self, spec: ToolSpec) -> None:
        """Add a new version; a duplicate (name, version) raises StoreError ``registry.conflict``."""
        ...

    def update(self, spec: ToolSpec) -> None:
        """Replace the lifecycle fields of a stored version; its content must be identical."""
        ...

    def append_audit(self, record: AuditRecord) -> None:
        """Append to the audit trail, committed with the rest of the transaction."""
        ...

    def record_admission(self, record: AdmissionRecord) -> None:
        """Keep the admission record of a version this transaction inserts (append-only: a
        second one for the same version raises StoreError ``registry.conflict``)."""
        ...


class RegistryStore(Protocol):
    """A registry backend. Implementations: MemoryStore, SQLiteStore, PostgresStore."""

    def change(self, name: str) -> AbstractContextManager[StoreTransaction]:
        """A transaction over one name; commits on normal exit, rolls back on an exception."""
        ...

    def change_many(self, names: Sequence[str]
                    ) -> AbstractContextManager[Mapping[str, StoreTransaction]]:
        """One transaction over several names (a transaction of each, by name), all committed
        together on normal exit or none, rolled back on an exception."""
        ...

    def snapshot(self) -> Snapshot:
        """Every stored record and the audit cursor they reflect."""
        ...

    def changes_since(self, cursor: int) -> Snapshot:
        """Current records of every contract changed after ``cursor``, and the new cursor."""
        ...

    def audit(self) -> tuple[AuditEntry, ...]:
        """The whole audit trail, oldest first."""
        ...

    def admission(self, name: str, version: Version) -> AdmissionRecord | None:
        """The admission record of that version (by precedence: build metadata aside), or
        None: not published, or published before the store kept admission records."""
        ...

    def watch(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from any thread) when another instance commits a change."""
        ...

    def stale(self) -> bool:
        """True when changes may have been committed elsewhere since the last look (pull side)."""
        ...

    def ping(self) -> None:
        """Reach the stored data afresh, cheaply (a readiness probe): a new connection that
        reads the schema table, so a file removed or a server stopped since the store opened
        is found; raises :class:`~toolkeeper.errors.StoreError` when it cannot."""
        ...

    def close(self) -> None:
        """Release connections and threads; idempotent."""
        ...

