"""The registry (SPEC 2): publish under the guard, lifecycle, resolution, discovery, audit.

Writes go to the store inside a per-name transaction in which the guard (or lifecycle rule) is
re-run against the stored history, so the store is the source of truth and racing writers are
judged against what actually precedes them. Reads are served from an in-memory index patched
from the store's change feed (the audit sequence), and discovery from cached views.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from toolkeeper.contracts.classify import classify as _default_classify
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec, spec_from_mapping, spec_to_mapping
from toolkeeper.errors import PublishRefusedError, StoreError
from toolkeeper.registry import lifecycle
from toolkeeper.registry.admission import AdmissionRecord, admission_of
from toolkeeper.registry.discovery import ViewCache, ViewKey, build_view
from toolkeeper.registry.guard import Classifier, check_publish
from toolkeeper.registry.index import Index
from toolkeeper.registry.principal import Principal
from toolkeeper.registry.records import (
    BatchRefused,
    PublishOutcome,
    as_version,
    collector_paused,
    deprecation_of,
    find,
    verdict_of,
)
from toolkeeper.registry.store import (
    AuditEntry,
    AuditRecord,
    RegistryStore,
    StoreTransaction,
    utc_now,
)

__all__ = ["PublishOutcome", "Registry"]

_log = logging.getLogger(__name__)


class Registry:
    """Versioned tool contracts over a :class:`RegistryStore`. Thread-safe.

    Changes made through other store instances reach this registry (generation bump, views
    invalidated, subscribers called) as follows: PostgreSQL pushes them through LISTEN/NOTIFY
    within milliseconds; a shared :class:`MemoryStore` calls back synchronously; SQLite cannot
    push, so they are applied on this registry's next read (``PRAGMA dataas_version`` is checked
    on every read, which is also when its subscribers hear of them).

    The audit trail records every applied change and every refused publish. An identical
    re-publish and a repeated retire change nothing and are not recorded; lifecycle refusals
    (an exception to the caller) are not recorded either. :meth:`close` closes the store.
    """

    def __init__(self, store: RegistryStore, *, classifier: Classifier | None = None,
                 view_cache_size: int = 1024) -> None:
        self._store = store
        self._classify: Classifier = classifier or _default_classify
        self._lock = threading.RLock()
        self._index = Index()
        self._views = ViewCache(view_cache_size)
        self._generation = 0
        self._subscribers: list[Callable[[], None]] = []
        self._closed = False
        self._behind = False  # a change committed but not yet applied to the index
        self._checked_ns = 0  # when the last successful check for others' changes began
        try:
            with collector_paused():
                snapshot = store.snapshot()
                self._index.apply(snapshot.specs)
            self._cursor = snapshot.cursor
            store.watch(self._on_external_change)
        except BaseException:
            store.close()
            raise

    @classmethod
    def open(cls, url: str | None = None, *, create: bool = True, read_only: bool = False,
             **options: Any) -> Registry:
        """Open the registry at ``url`` (``memory:``, ``sqlite:///path.db``,
        ``postgresql://...``); ``None`` means ``TOOLKEEPER_REGISTRY`` or the default SQLite file.
        ``create=False`` refuses to create a registry that is not there; ``read_only=True``
        never writes to the store (writes through this registry then fail)."""
        from toolkeeper.registry.location import open_store

        return cls(open_store(url, create=create, read_only=read_only), **options)

    # --- writes ----------------------------------------------------------------------------

    def publish(self, spec: ToolSpec, *, actor: str = "anonymous") -> ToolSpec:
        """Publish ``spec`` under the guard; returns the stored record (an identical re-publish
        returns the existing one). Refusals raise PublishRefusedError and are audited. A spec
        that its own file form would not give (one built or changed in code: a name outside the
        MCP rules, say) is a ContractError before anything is written."""
        return self.publish_outcome(spec, actor=actor).record

    def publish_outcome(self, spec: ToolSpec, *, actor: str = "anonymous") -> PublishOutcome:
        """:meth:`publish`, also telling whether this call stored the version: ``created`` is
        what the guard decided inside the transaction that wrote (or did not write) the row,
        so it stays true when other writers commit around it."""
        spec_from_mapping(spec_to_mapping(spec, lifecycle=False))  # what a reader must parse
        refusal: PublishRefusedError | None = None
        with self._change(spec.name) as tx:
            try:
                decision = check_publish(tx.versions(), spec, self._classify)
            except PublishRefusedError as exc:
                refusal = exc
                tx.append_audit(AuditRecord(
                    utc_now(), actor, "publish", spec.name, str(spec.version), exc.code,
                    verdict_of(exc)))
            else:
                if decision.existing is not None:
                    return PublishOutcome(decision.existing, created=False)
                now = utc_now()
                stored = spec.with_lifecycle(status=Status.ACTIVE, deprecation_message=None,
                                             successor=None, publisher=actor, published_at=now)
                tx.insert(stored)
                verdict = decision.verdict.to_dict() if decision.verdict else None
                tx.append_audit(AuditRecord(now, actor, "publish", spec.name,
                                            str(spec.version), None, verdict))
                tx.record_admission(admission_of(stored, decision))
        if refusal is not None:
            raise refusal
        self._after_commit()
        return PublishOutcome(stored, created=True)

    def publish_all(self, specs: Sequence[ToolSpec], *, actor: str = "anonymous"
                    ) -> list[PublishOutcome]:
        """:meth:`publish_outcome` for a batch in one store transaction, all or none: each spec
        is judged by the guard against the stored history of its name and the batch's earlier
        versions of it. On a refusal nothing of the batch is stored, the refusal is audited in
        a transaction of its own, and PublishRefusedError is raised. An identical re-publish is
        an outcome with ``created`` false."""
        for spec in specs:
            spec_from_mapping(spec_to_mapping(spec, lifecycle=False))
        if not specs:
            return []
        names = list(dict.fromkeys(spec.name for spec in specs))
        outcomes: list[PublishOutcome] = []
        refused: tuple[ToolSpec, PublishRefusedError] | None = None
        try:
            with self._change_many(names) as txs:
                histories = {name: txs[name].versions() for name in names}
                for spec in specs:
                    history = histories[spec.name]
                    try:
                        decision = check_publish(history, spec, self._classify)
                    except PublishRefusedError as exc:
                        refused = (spec, exc)
                        raise BatchRefused from None
                    if decision.existing is not None:
                        outcomes.append(PublishOutcome(decision.existing, created=False))
                        continue
                    now = utc_now()
                    stored = spec.with_lifecycle(status=Status.ACTIVE, deprecation_message=None,
                                                 successor=None, publisher=actor,
                                                 published_at=now)
                    txs[spec.name].insert(stored)
                    history.append(stored)
                    verdict = decision.verdict.to_dict() if decision.verdict else None
                    txs[spec.name].append_audit(AuditRecord(
                        now, actor, "publish", spec.name, str(spec.version), None, verdict))
                    txs[spec.name].record_admission(admission_of(stored, decision))
                    outcomes.append(PublishOutcome(stored, created=True))
        except BatchRefused:
            assert refused is not None
            spec, refusal = refused
            with self._change(spec.name) as tx:
                tx.append_audit(AuditRecord(utc_now(), actor, "publish", spec.name,
                                            str(spec.version), refusal.code,
                                            verdict_of(refusal)))
            raise refusal from None
        if any(outcome.created for outcome in outcomes):
            self._after_commit()
        return outcomes

    def deprecate(self, name: str, version: Version | str, *, message: str | None = None,
                  successor: Version | str | None = None, actor: str = "anonymous") -> ToolSpec:
        """Deprecate a version (again: updates message and successor). Retired is terminal.
        Versions are :class:`Version` values or semver strings."""
        version = as_version(version)
        if successor is not None:
            successor = as_version(successor, "successor")
        with self._change(name) as tx:
            current, history = find(tx, name, version)
            updated = lifecycle.deprecated(current, history, message=message, successor=successor)
            if updated == current:
                return current
            tx.update(updated)
            tx.append_audit(AuditRecord(utc_now(), actor, lifecycle.DEPRECATE, name,
                                        str(current.version), None, deprecation_of(updated)))
        self._after_commit()
        return updated

    def retire(self, name: str, version: Version | str, *, actor: str = "anonymous") -> ToolSpec:
        """Retire a version for good; it stays stored (``get``/``versions``) but is never served.
        The version is a :class:`Version` or a semver string."""
        version = as_version(version)
        with self._change(name) as tx:
            current, _ = find(tx, name, version)
            updated = lifecycle.retired(current)
            if updated == current:
                return current
            tx.update(updated)
            tx.append_audit(AuditRecord(utc_now(), actor, lifecycle.RETIRE, name,
                                        str(current.version)))
        self._after_commit()
        return updated

    # --- reads -----------------------------------------------------------------------------

    def latest(self, name: str) -> ToolSpec | None:
        """The newest active version (never deprecated or retired), or None."""
        for spec in reversed(self.as_versions_of(name)):
            if spec.status is Status.ACTIVE:
                return spec
        return None

    def resolve(self, name: str, version: Version | str) -> ToolSpec | None:
        """That exact version unless it is retired (deprecated versions still resolve)."""
        spec = self.get(name, version)
        return None if spec is None or spec.status is Status.RETIRED else spec

    def get(self, name: str, version: Version | str) -> ToolSpec | None:
        """That exact version in any status, retired included (a :class:`Version` or a semver
        string)."""
        if type(version) is not Version:
            version = as_version(version)
        self._refresh()
        with self._lock:
            return self._index.get(name, version)

    def versions(self, name: str) -> tuple[ToolSpec, ...]:
        """Every version of ``name``, oldest first, retired included."""
        return tuple(self.as_versions_of(name))

    def names(self) -> tuple[str, ...]:
        """Every published name, sorted."""
        self._refresh()
        with self._lock:
            return tuple(self._index.names)

    def discover(self, principal: Principal, *, include_deprecated: bool = False,
                 hidden: frozenset[tuple[str, Version]] = frozenset()) -> tuple[ToolSpec, ...]:
        """The newest visible version of each tool, sorted by name (served from a cached view),
        ``hidden`` (tool, version) pairs skipped (a rollout's candidate: routing.Routing.of)."""
        self._refresh()
        with self._lock:
            key = self._index.view_key(principal, include_deprecated, hidden)
            return self._views.get(key, self._build_view)

    def audit(self) -> tuple[AuditEntry, ...]:
        """The append-only audit trail, oldest first (refused publishes included)."""
        return self._store.audit()

    def admission(self, name: str, version: Version | str) -> AdmissionRecord | None:
        """The publish guard's admission record of that version (read from the store), or
        None: not published, or published before the store kept admission records."""
        return self._store.admission(name, as_version(version))

    @property
    def classifier(self) -> Classifier:
        """The change classifier the publish guard judges with."""
        return self._classify

    @property
    def store(self) -> RegistryStore:
        """The backing store (API keys and the call log live beside the contracts in it)."""
        return self._store

    # --- change propagation ----------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Grows on every change, local or learned from another process."""
        self._refresh()
        return self._generation

    def generation_since(self, since_ns: int) -> int:
        """:attr:`generation`, without asking the store again when a check for other
        processes' changes that began at or after ``since_ns`` has succeeded (``since_ns``:
        a ``time.perf_counter_ns()`` reading taken when a request arrived; 0 always asks).
        Such a check is as current as the request can tell apart: it caught up with every
        change the store reported before the request arrived, and a later one could as well
        have come after the request. (On SQLite the store is asked directly; on PostgreSQL
        changes arrive by LISTEN, and the store reports itself stale while its listener is
        reconnecting, so reads then catch up by themselves.)"""
        if not (since_ns and self._checked_ns >= since_ns and not self._behind):
            self._refresh()
        return self._generation

    def required_scopes(self) -> frozenset[str]:
        """Every scope any stored contract requires (retired versions included): one check for
        other processes' changes, then the index's running set."""
        self._refresh()
        with self._lock:
            return self._index.scopes

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` after every change; returns the function that unsubscribes."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def ping(self) -> None:
        """Reach the store's data afresh (:meth:`RegistryStore.ping`); raises StoreError."""
        self._store.ping()

    def close(self) -> None:
        """Close the store (stops a PostgreSQL listener); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._store.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals -------------------------------------------------------------------------

    def as_versions_of(self, name: str) -> list[ToolSpec]:
        self._refresh()
        with self._lock:
            return list(self._index.by_name.get(name, ()))

    def _build_view(self, key: ViewKey) -> tuple[ToolSpec, ...]:
        return build_view(self._index.names, self._index.gates, key)

    def _refresh(self) -> None:
        """Check for other processes' changes and catch up, atomically with respect to other
        threads: a thread that checks while another catches up waits for it, rather than
        finding the news taken (SQLite's dataas_version is reported once) or the cursor moved
        (PostgreSQL) and reading the index before the change is applied."""
        started = time.perf_counter_ns()
        subscribers: list[Callable[[], None]] = []
        with self._lock:
            if self._behind or self._store.stale():
                # Owed until the catch-up succeeds: a store that reported the news once
                # (SQLite's dataas_version) would not report it again, and a failed read must
                # not lose it.
                self._behind = True
                subscribers = self._apply_changes()
            if started > self._checked_ns:  # reached only when the check and any catch-up
                self._checked_ns = started  # succeeded
        if subscribers:
            self._notify(subscribers)

    def _mark_behind(self) -> None:
        with self._lock:
            self._behind = True

    @contextmanager
    def _change(self, name: str) -> Iterator[StoreTransaction]:
        """The store's change transaction. One that fails may still have committed (the reply
        to COMMIT can be lost, and our own listener skips our own notifications), so we are
        then marked behind and the next read catches up through the cursor."""
        try:
            with self._store.change(name) as tx:
                yield tx
        except StoreError:
            self._mark_behind()
            raise

    @contextmanager
    def _change_many(self, names: Sequence[str]) -> Iterator[Mapping[str, StoreTransaction]]:
        """:meth:`_change` over several names in one store transaction."""
        try:
            with self._store.change_many(names) as txs:
                yield txs
        except StoreError:
            self._mark_behind()
            raise

    def _after_commit(self) -> None:
        """Apply our own committed change. It is durable already, so a failure to read it
        back is not the caller's error: we stay marked behind and catch up on the next read."""
        try:
            self._sync()
        except StoreError:
            self._mark_behind()
            _log.warning("registry: committed, but could not refresh the index", exc_info=True)

    def _on_external_change(self) -> None:
        if self._closed:
            return
        try:
            self._sync()
        except StoreError:
            self._mark_behind()
            _log.exception("registry: could not apply a change notified by another process")

    def _sync(self) -> None:
        """Apply every change committed after our cursor; notify subscribers if any."""
        with self._lock:
            subscribers = self._apply_changes()
        self._notify(subscribers)

    def _apply_changes(self) -> list[Callable[[], None]]:
        """(Under the lock.) Apply every change committed after our cursor; the subscribers to
        notify once the lock is released (none when nothing changed)."""
        delta = self._store.changes_since(self._cursor)
        self._behind = False
        self._cursor = max(self._cursor, delta.cursor)
        if not self._index.apply(delta.specs) and not delta.rollouts:
            return []
        self._generation += 1
        self._views.clear()
        return list(self._subscribers)

    def _notify(self, subscribers: list[Callable[[], None]]) -> None:
        for callback in subscribers:
            try:
                callback()
            except Exception:  # a subscriber's bug must not undo or block a committed change
                _log.exception("registry: subscriber %r failed", callback)
