"""The in-memory twin of the registry store: same contract, no I/O (SPEC 2.4, STYLE 2).

One instance may back several :class:`~toolkeeper.registry.Registry` objects in one process;
each is told about the others' commits through ``watch`` (the in-process analogue of
PostgreSQL's LISTEN/NOTIFY).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import StoreError
from toolkeeper.registry.admission import AdmissionRecord
from toolkeeper.registry.apikeys import ApiKeyRecord
from toolkeeper.registry.rollout_backends import MemoryRollouts
from toolkeeper.registry.store import ROLLOUT_ACTION_PREFIX, AuditEntry, AuditRecord, Snapshot
from toolkeeper.registry.upstream_backends import MemoryUpstreams

__all__ = ["MemoryStore"]


class _MemoryTransaction:
    """Staged writes to one name; applied to the store only on commit."""

    def __init__(self, name: str, current: dict[Version, ToolSpec],
                 admitted: dict[tuple[str, Version], AdmissionRecord]) -> None:
        self._name = name
        self._current = current
        self._admitted = admitted
        self.staged: dict[Version, ToolSpec] = {}
        self.audit: list[AuditRecord] = []
        self.admissions: dict[Version, AdmissionRecord] = {}

    def versions(self) -> list[ToolSpec]:
        merged = {**self._current, **self.staged}
        return [merged[v] for v in sorted(merged)]

    def insert(self, spec: ToolSpec) -> None:
        _check_name(self._name, spec)
        if spec.version in self._current or spec.version in self.staged:
            raise StoreError(f"{spec.name} {spec.version} is already stored",
                             code="registry.conflict")
        self.staged[spec.version] = spec

    def update(self, spec: ToolSpec) -> None:
        _check_name(self._name, spec)
        old = self.staged.get(spec.version) or self._current.get(spec.version)
        if old is None:
            raise StoreError(f"{spec.name} {spec.version} is not stored", code="registry.missing")
        if old.content_digest != spec.content_digest:
            raise StoreError("an update may change lifecycle fields only",
                             code="registry.content_immutable")
        self.staged[spec.version] = spec

    def append_audit(self, record: AuditRecord) -> None:
        self.audit.append(record)

    def record_admission(self, record: AdmissionRecord) -> None:
        version = Version.parse(record.version)
        if record.tool != self._name:
            raise StoreError(f"transaction on {self._name!r} cannot write {record.tool!r}",
                             code="registry.wrong_name")
        if version in self.admissions or (self._name, version) in self._admitted:
            raise StoreError(f"{record.tool} {record.version} has an admission record already",
                             code="registry.conflict")
        self.admissions[version] = record


def _check_name(name: str, spec: ToolSpec) -> None:
    if spec.name != name:
        raise StoreError(f"transaction on {name!r} cannot write {spec.name!r}",
                         code="registry.wrong_name")


class MemoryStore(MemoryUpstreams, MemoryRollouts):
    """Records and audit trail in dictionaries, guarded by one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, dict[Version, ToolSpec]] = {}
        self._audit: list[AuditEntry] = []
        self._admissions: dict[tuple[str, Version], AdmissionRecord] = {}
        self._watchers: list[Callable[[], None]] = []
        self._keys: dict[str, ApiKeyRecord] = {}
        self._spent: dict[str, float] = {}
        self._init_upstreams()
        self._init_rollouts()
        self._closed = False

    @contextmanager
    def change(self, name: str) -> Iterator[_MemoryTransaction]:
        with self._lock:
            self._check_open()
            tx = _MemoryTransaction(name, self._records.get(name, {}), self._admissions)
            yield tx  # an exception here leaves the store untouched: nothing was applied yet
            self._apply(name, tx)
            for record in tx.audit:
                self._audit.append(AuditEntry.from_record(len(self._audit) + 1, record))
            watchers = list(self._watchers) if tx.audit else []
        for callback in watchers:
            callback()

    @contextmanager
    def change_many(self, names: Sequence[str]) -> Iterator[dict[str, _MemoryTransaction]]:
        with self._lock:
            self._check_open()
            txs = {name: _MemoryTransaction(name, self._records.get(name, {}),
                                            self._admissions) for name in names}
            yield txs  # an exception here leaves the store untouched: nothing was applied yet
            audited = False
            for name, tx in txs.items():
                self._apply(name, tx)
                for record in tx.audit:
                    self._audit.append(AuditEntry.from_record(len(self._audit) + 1, record))
                    audited = True
            watchers = list(self._watchers) if audited else []
        for callback in watchers:
            callback()

    def _apply(self, name: str, tx: _MemoryTransaction) -> None:
        """(Under the lock.) A committing transaction's records and admission records."""
        if tx.staged:
            self._records.setdefault(name, {}).update(tx.staged)
        self._admissions.update({(name, v): r for v, r in tx.admissions.items()})

    def admission(self, name: str, version: Version) -> AdmissionRecord | None:
        with self._lock:
            self._check_open()
            return self._admissions.get((name, version))

    def snapshot(self) -> Snapshot:
        with self._lock:
            self._check_open()
            specs = tuple(s for by_version in self._records.values() for s in by_version.values())
            return Snapshot(len(self._audit), specs)

    def changes_since(self, cursor: int) -> Snapshot:
        with self._lock:
            self._check_open()
            keys = {(e.name, e.version) for e in self._audit[cursor:] if e.applied}
            parsed = sorted((n, Version.parse(v)) for n, v in keys)
            specs = tuple(self._records[n][v] for n, v in parsed)
            rollouts = any(e.action.startswith(ROLLOUT_ACTION_PREFIX)
                           for e in self._audit[cursor:])
            return Snapshot(len(self._audit), specs, rollouts)

    def audit(self) -> tuple[AuditEntry, ...]:
        with self._lock:
            return tuple(self._audit)

    def watch(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._watchers.append(callback)

    def stale(self) -> bool:
        return False

    # --- API keys (registry.apikeys.KeyStore) ----------------------------------------------

    def add_key(self, record: ApiKeyRecord) -> None:
        with self._lock:
            self._check_open()
            if record.id in self._keys:
                raise StoreError(f"API key {record.id} is already stored",
                                 code="registry.conflict")
            self._keys[record.id] = record

    def find_key(self, key_id: str) -> ApiKeyRecord | None:
        with self._lock:
            self._check_open()
            return self._keys.get(key_id)

    def list_keys(self) -> tuple[ApiKeyRecord, ...]:
        with self._lock:
            self._check_open()
            return tuple(sorted(self._keys.values(), key=lambda k: (k.created, k.id)))

    def revoke_key(self, key_id: str, at: str) -> ApiKeyRecord | None:
        with self._lock:
            self._check_open()
            record = self._keys.get(key_id)
            if record is not None and record.revoked_at is None:
                record = self._keys[key_id] = replace(record, revoked_at=at)
            return record

    def key_revocations(self) -> int:
        with self._lock:
            self._check_open()
            return sum(1 for k in self._keys.values() if k.revoked_at is not None)

    # --- spent request states (registry.spent_states.SpentStateStore) ----------------------

    def spend_state(self, digest: str, expires_at: float) -> bool:
        with self._lock:
            self._check_open()
            if digest in self._spent:
                return False
            self._spent[digest] = expires_at
            return True

    def purge_spent_states(self, now: float) -> int:
        with self._lock:
            self._check_open()
            gone = [digest for digest, expiry in self._spent.items() if expiry <= now]
            for digest in gone:
                del self._spent[digest]
            return len(gone)

    def ping(self) -> None:
        """In-process data is always reachable while the store is open."""
        self._check_open()

    def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed", code="registry.closed")
