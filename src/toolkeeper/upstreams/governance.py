"""Upstreams under governance: stored definitions, their tools imported as contracts, drift
published or quarantined per policy, and the operator's approvals and rejections.

:class:`Upstreams` works over a :class:`~toolkeeper.registry.Registry` whose store keeps
upstreams (:mod:`toolkeeper.registry.upstream_records`). Every contract goes through
:meth:`Registry.publish <toolkeeper.registry.Registry.publish>` (the guard, the audit trail),
with the caller's ``actor``. The rules it keeps:

* The first listing of a tool publishes its contract (the upstream's own version, else 1.0.0).
* A later listing whose descriptor digest differs is a drift (:mod:`~toolkeeper.upstreams.
  drift`) against the contract in force: published as the next version at the classifier's
  level when the policy publishes every class of it, else stored ``pending`` and the contract
  in force keeps serving. A pending drift that a newer, different descriptor replaces is
  ``superseded``; one whose descriptor the upstream stops serving too.
* A tool gone upstream is deprecated (never removed) and marked missing; one that comes back is
  classified against its last contract (back unchanged: that contract is published again as the
  next patch, the deprecated versions stay deprecated).
* A name that another tool holds (a native contract, another upstream's tool) is not imported:
  ``upstream.name_collision``, never shadowed.
* :meth:`Upstreams.approve` publishes exactly the descriptor its digest names;
  :meth:`Upstreams.reject` keeps the contract in force; both are stored with who and when.
* State that cannot be read (``upstream.state_unreadable``) fails closed: a sync of that
  upstream stops, and :meth:`Upstreams.bindings` gives none of its tools.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec
from toolkeeper.errors import (
    ConfigError,
    ContractError,
    NotFoundError,
    RegistryError,
    StoreError,
)
from toolkeeper.registry import Registry
from toolkeeper.registry.store import utc_now
from toolkeeper.registry.upstream_records import (
    DriftRecord,
    HealthRecord,
    UpstreamRecord,
    UpstreamStore,
    UpstreamToolRecord,
    unreadable,
    upstream_store,
)
from toolkeeper.upstreams.descriptor import (
    contract_from_descriptor,
    descriptor_digest,
    normalized_descriptor,
    upstream_version,
)
from toolkeeper.upstreams.drift import Drift, classify_drift, next_version
from toolkeeper.upstreams.model import UpstreamBinding, UpstreamDefinition
from toolkeeper.upstreams.report import SyncReport, ToolOutcome

__all__ = ["FIRST_VERSION", "Upstreams"]

_log = logging.getLogger(__name__)

FIRST_VERSION = Version(1, 0, 0)
"""The first version of an imported tool whose upstream publishes none."""

_GONE = "the upstream no longer lists this tool"


def _drift_id(upstream: str, tool: str, previous: str, new: str) -> str:
    return hashlib.sha256("\0".join((upstream, tool, previous, new)).encode()).hexdigest()[:32]


def _mismatch(name: str, tool: str, digest: str, pending: Sequence[DriftRecord]) -> RegistryError:
    return RegistryError(
        f"no pending drift of {name}/{tool} has digest {digest!r}", code="upstream.digest_mismatch",
        data={"upstream": name, "tool": tool, "digest": digest,
              "pending": sorted(d.new_digest for d in pending)})


class Upstreams:
    """The governance of upstream servers over one registry (thread-safe as its store is)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._store: UpstreamStore = upstream_store(registry.store)

    # --- definitions -----------------------------------------------------------------------

    def add(self, defn: UpstreamDefinition, *, origin: str, actor: str,
            replace_existing: bool = False) -> UpstreamRecord:
        """Store ``defn``. An upstream of that name with another definition is
        ``upstream.exists`` unless ``replace_existing`` (configuration reconciliation); the same
        definition again changes nothing."""
        mapping = defn.to_mapping()
        existing = self._store.get_upstream(defn.name)
        if existing is not None and dict(existing.definition) == mapping:
            return existing
        if existing is not None and not replace_existing:
            raise RegistryError(f"upstream {defn.name!r} exists with another definition",
                                code="upstream.exists", data={"upstream": defn.name})
        now = utc_now()
        record = UpstreamRecord(defn.name, mapping, origin,
                                existing.created if existing else now, now)
        self._store.put_upstream(record)
        if existing is not None:  # what another gateway's configuration or the CLI stored
            changed = sorted(key for key in set(existing.definition) | set(mapping)
                             if existing.definition.get(key) != mapping.get(key))
            _log.warning("upstream %s: the definition stored by %s is replaced by %s's "
                         "(changed: %s)", defn.name, existing.origin, origin, ", ".join(changed),
                         extra={"upstream_event": "replaced"})
        else:
            _log.info("upstream %s stored by %s (%s)", defn.name, actor, origin)
        return record

    def remove(self, name: str) -> bool:
        """Forget the upstream and its tool rows (its contracts and drifts stay)."""
        return self._store.delete_upstream(name)

    def definition(self, name: str) -> UpstreamDefinition:
        record = self._store.get_upstream(name)
        if record is None:
            raise NotFoundError(f"no upstream {name!r}", code="upstream.not_found",
                                data={"upstream": name})
        try:
            return UpstreamDefinition.from_mapping(record.definition)
        except ConfigError as exc:
            raise unreadable(name, f"its definition is refused ({exc.code})") from None

    def names(self) -> tuple[str, ...]:
        """Every stored upstream's name, sorted."""
        return tuple(sorted(self._store.upstream_names()))

    def definitions(self) -> list[UpstreamDefinition]:
        """Every stored upstream, by name (one whose row cannot be read raises)."""
        return [self.definition(name) for name in self._store.upstream_names()]

    def tools(self, name: str) -> tuple[UpstreamToolRecord, ...]:
        return self._store.upstream_tools(name)

    def sync_lock(self, name: str) -> AbstractContextManager[None]:
        """Held while one sync of ``name`` runs (``upstream.sync_busy`` when one runs)."""
        return self._store.upstream_sync_lock(name)

    def record_health(self, name: str, replica: str, status: Mapping[str, Any]) -> None:
        """Keep ``replica``'s view of the upstream's health (``upstream list`` shows it)."""
        self._store.put_upstream_health(HealthRecord(name, replica, dict(status), utc_now()))

    def forget_health(self, name: str, replica: str) -> None:
        """Forget ``replica``'s view of the upstream (a serving gateway that stops)."""
        self._store.delete_upstream_health(name, replica)

    def health(self, name: str) -> tuple[HealthRecord, ...]:
        """Every serving gateway's last view of the upstream's health, by replica."""
        return self._store.upstream_health(name)

    # --- sync ------------------------------------------------------------------------------

    def apply_listing(self, name: str, tools: Sequence[Mapping[str, Any]], *, actor: str
                      ) -> SyncReport:
        """Apply what the upstream ``name`` lists now (every page's tool descriptors)."""
        defn = self.definition(name)
        rows = {row.tool: row for row in self._store.upstream_tools(name)}
        taken = self._taken(name)
        listed: dict[str, dict[str, Any]] = {}
        for tool in tools:
            tool_name = tool.get("name")
            if isinstance(tool_name, str) and tool_name not in listed:
                listed[tool_name] = normalized_descriptor(tool)
        outcomes = [self._apply_one(defn, tool_name, listed[tool_name], rows.get(tool_name),
                                    taken, actor) for tool_name in sorted(listed)]
        outcomes += [self._gone(row, actor) for tool_name, row in sorted(rows.items())
                     if tool_name not in listed]
        return SyncReport(name, tuple(sorted(outcomes, key=lambda o: o.tool)))

    def _taken(self, name: str) -> set[str]:
        """Exposed names this upstream may not take: every published name that is not its
        own, and the names other upstreams hold (an unreadable one's rows cannot say)."""
        own = {row.exposed for row in self._store.upstream_tools(name)}
        taken = set(self.registry.names()) - own
        for other in self._store.upstream_names():
            if other != name:
                try:
                    taken.update(row.exposed for row in self._store.upstream_tools(other))
                except StoreError:
                    continue
        return taken

    def _apply_one(self, defn: UpstreamDefinition, tool: str, descriptor: dict[str, Any],
                   row: UpstreamToolRecord | None, taken: set[str], actor: str) -> ToolOutcome:
        digest = descriptor_digest(descriptor)
        if row is None:
            return self._first(defn, tool, descriptor, digest, taken, actor)
        in_force = self.registry.get(row.exposed, row.version)
        if in_force is None:
            raise unreadable(defn.name, f"{row.exposed} {row.version} is not in the registry")
        if digest == row.digest:
            self._supersede(row, digest)
            if row.present:
                self._store.put_upstream_tool(replace(row, last_seen_digest=digest))
                return ToolOutcome(tool, row.exposed, "unchanged", row.version, digest)
            return self._publish(defn, row, descriptor, digest, "patch", "restored", actor)
        try:
            candidate = contract_from_descriptor(defn, descriptor, in_force.version)
        except ContractError as exc:
            self._store.put_upstream_tool(replace(row, last_seen_digest=digest))
            return ToolOutcome(tool, row.exposed, "invalid", row.version, digest, exc.code,
                               data=exc.data)
        drift = classify_drift(in_force, candidate, row.descriptor, descriptor,
                               self.registry.classifier)
        return self._drifted(defn, row, descriptor, drift, actor)

    def _first(self, defn: UpstreamDefinition, tool: str, descriptor: dict[str, Any],
               digest: str, taken: set[str], actor: str) -> ToolOutcome:
        exposed = defn.exposed_name(tool)
        if exposed in taken:
            return ToolOutcome(tool, exposed, "collision", None, digest, "upstream.name_collision",
                               data={"upstream": defn.name, "tool": tool, "exposed": exposed})
        version = upstream_version(descriptor) or FIRST_VERSION
        try:
            spec = contract_from_descriptor(defn, descriptor, version)
        except ContractError as exc:
            return ToolOutcome(tool, exposed, "invalid", None, digest, exc.code, data=exc.data)
        # The row before the contract: a replica that re-reads its bindings on the publish's
        # change finds the row that binds it (the other order can miss it until a next change).
        self._store.put_upstream_tool(UpstreamToolRecord(
            defn.name, tool, exposed, str(version), digest, descriptor, True, digest,
            {str(version): digest}))
        try:
            self.registry.publish(spec, actor=actor)
        except RegistryError as exc:
            self._store.delete_upstream_tool(defn.name, tool)
            return ToolOutcome(tool, exposed, "refused", None, digest, exc.code, data=exc.data)
        return ToolOutcome(tool, exposed, "imported", str(version), digest)

    def _drifted(self, defn: UpstreamDefinition, row: UpstreamToolRecord,
                 descriptor: dict[str, Any], drift: Drift, actor: str) -> ToolOutcome:
        digest = drift.new_digest
        self._supersede(row, digest)
        drift_id = _drift_id(defn.name, row.tool, row.digest, digest)
        known = {d.id: d for d in self._store.drifts(defn.name, row.tool)}.get(drift_id)
        seen = replace(row, last_seen_digest=digest, present=True)
        if known is not None and known.status == "rejected":
            self._store.put_upstream_tool(seen)
            return ToolOutcome(row.tool, row.exposed, "rejected", row.version, digest,
                               drift=drift)
        if drift.quarantined(defn.drift):
            if known is None or known.status != "pending":
                self._store.put_drift(self._record(drift_id, row, descriptor, drift))
            self._store.put_upstream_tool(seen)
            return ToolOutcome(row.tool, row.exposed, "quarantined", row.version, digest,
                               drift=drift)
        outcome = self._publish(defn, row, descriptor, digest, drift.level, "published", actor,
                                drift)
        if outcome.action == "published":
            self._store.put_drift(replace(
                self._record(drift_id, row, descriptor, drift), status="published",
                decided_by=actor, decided_at=utc_now(), published_version=outcome.version))
        return outcome

    def _record(self, drift_id: str, row: UpstreamToolRecord, descriptor: dict[str, Any],
                drift: Drift) -> DriftRecord:
        return DriftRecord(drift_id, row.upstream, row.tool, utc_now(), row.digest,
                           drift.new_digest, row.descriptor, descriptor, drift.level,
                           drift.classes, drift.changes)

    def _publish(self, defn: UpstreamDefinition, row: UpstreamToolRecord,
                 descriptor: Mapping[str, Any], digest: str, level: str, action: str,
                 actor: str, drift: Drift | None = None) -> ToolOutcome:
        version = next_version(Version.parse(row.version), level)
        kept = replace(row, last_seen_digest=digest, present=True)
        try:
            spec = contract_from_descriptor(defn, descriptor, version)
        except ContractError as exc:
            self._store.put_upstream_tool(kept)
            return ToolOutcome(row.tool, row.exposed, "refused", row.version, digest, exc.code,
                               drift, exc.data)
        # The row before the contract, as in _first; a refused publish puts the row back.
        self._store.put_upstream_tool(replace(
            row, version=str(version), digest=digest, descriptor=dict(descriptor), present=True,
            last_seen_digest=digest, versions={**row.versions, str(version): digest}))
        try:
            self.registry.publish(spec, actor=actor)
        except RegistryError as exc:
            self._store.put_upstream_tool(kept)
            return ToolOutcome(row.tool, row.exposed, "refused", row.version, digest, exc.code,
                               drift, exc.data)
        return ToolOutcome(row.tool, row.exposed, action, str(version), digest, drift=drift)

    def _supersede(self, row: UpstreamToolRecord, digest: str) -> None:
        """Pending drifts of the tool that the upstream no longer serves are superseded."""
        for pending in self._store.drifts(row.upstream, row.tool):
            if pending.status == "pending" and pending.new_digest != digest:
                self._store.put_drift(replace(pending, status="superseded"))

    def _gone(self, row: UpstreamToolRecord, actor: str) -> ToolOutcome:
        if not row.present:
            return ToolOutcome(row.tool, row.exposed, "missing", row.version)
        for spec in self.registry.versions(row.exposed):
            if spec.status is Status.ACTIVE:
                self.registry.deprecate(row.exposed, spec.version, message=_GONE, actor=actor)
        self._store.put_upstream_tool(replace(row, present=False, last_seen_digest=None))
        return ToolOutcome(row.tool, row.exposed, "deprecated", row.version)

    # --- the operator ----------------------------------------------------------------------

    def pending(self, name: str, tool: str | None = None) -> list[DriftRecord]:
        """The drifts waiting for an operator, oldest first."""
        self.definition(name)
        return [d for d in self._store.drifts(name, tool) if d.status == "pending"]

    def drifts(self, name: str, tool: str | None = None) -> list[DriftRecord]:
        """Every drift of the upstream (any status), oldest first."""
        return list(self._store.drifts(name, tool))

    def _pending_one(self, name: str, tool: str, digest: str
                     ) -> tuple[UpstreamToolRecord, DriftRecord]:
        row = next((r for r in self._store.upstream_tools(name) if r.tool == tool), None)
        pending = self.pending(name, tool)
        found = next((d for d in pending if d.new_digest == digest), None)
        if row is None or found is None or found.previous_digest != row.digest:
            raise _mismatch(name, tool, digest, pending)
        return row, found

    def approval_row(self, name: str, tool: str, digest: str) -> UpstreamToolRecord:
        """The upstream tool a pending drift ``digest`` would be approved over (its exposed
        name and the version in force), refused as :meth:`approve` refuses it
        (``upstream.digest_mismatch``); nothing is written."""
        self.definition(name)
        return self._pending_one(name, tool, digest)[0]

    def approve(self, name: str, tool: str, digest: str, *, actor: str) -> DriftRecord:
        """Publish exactly the descriptor ``digest`` names, as the next version at the
        classifier's level against the contract in force; ``upstream.digest_mismatch`` when no
        pending drift of the tool has that digest (wrong, or stale: superseded, decided)."""
        defn = self.definition(name)
        row, drift = self._pending_one(name, tool, digest)
        in_force = self.registry.get(row.exposed, row.version)
        if in_force is None:
            raise unreadable(name, f"{row.exposed} {row.version} is not in the registry")
        candidate = contract_from_descriptor(defn, drift.new_descriptor, in_force.version)
        level = classify_drift(in_force, candidate, row.descriptor, drift.new_descriptor,
                               self.registry.classifier).level
        outcome = self._publish(defn, row, drift.new_descriptor, digest, level, "published",
                                actor)
        if outcome.action != "published":
            raise RegistryError(f"the approved descriptor of {name}/{tool} was refused",
                                code=outcome.code or "upstream.publish_refused",
                                data={"upstream": name, "tool": tool, **outcome.data})
        decided = replace(drift, status="approved", decided_by=actor, decided_at=utc_now(),
                          published_version=outcome.version)
        self._store.put_drift(decided)
        return decided

    def reject(self, name: str, tool: str, digest: str, *, actor: str) -> DriftRecord:
        """Keep the contract in force and record that the drift was seen and refused."""
        _, drift = self._pending_one(name, tool, digest)
        decided = replace(drift, status="rejected", decided_by=actor, decided_at=utc_now())
        self._store.put_drift(decided)
        return decided

    # --- what the gateway runs -------------------------------------------------------------

    def bindings(self, problems: list[dict[str, Any]] | None = None) -> list[UpstreamBinding]:
        """Every exposed active or deprecated version and the upstream tool that runs it,
        sorted. An upstream whose state cannot be read contributes none: it is logged and, when
        ``problems`` is given, appended to it (``code`` ``upstream.state_unreadable``)."""
        out: list[UpstreamBinding] = []
        for name in self._store.upstream_names():
            try:
                self.definition(name)
                rows = self._store.upstream_tools(name)
                found = [binding for row in rows for binding in self._bound(row)]
            except StoreError as exc:
                if exc.code != "upstream.state_unreadable":
                    raise
                _log.warning("upstream %s: its state cannot be read; none of its tools is "
                             "served (%s)", name, exc.message)
                if problems is not None:
                    problems.append({"upstream": name, "code": exc.code, "message": exc.message})
                continue
            out.extend(found)
        return sorted(out, key=lambda b: (b.exposed, Version.parse(b.version)))

    def _bound(self, row: UpstreamToolRecord) -> list[UpstreamBinding]:
        """The versions of ``row`` the upstream still runs: those not retired of the newest
        one's major. The upstream serves one descriptor, and a MAJOR version approved over
        an older one means the older one's calls may no longer be valid there, so the older
        major is left unbound (the gateway answers a call pinned to it as for any version it
        cannot run) rather than forwarded to a tool that changed under it."""
        live: list[tuple[Version, str, str]] = []
        for version, digest in row.versions.items():
            spec: ToolSpec | None = self.registry.get(row.exposed, version)
            if spec is not None and spec.status is not Status.RETIRED:
                live.append((Version.parse(version), version, digest))
        if not live:
            return []
        major = max(live)[0].major
        return [UpstreamBinding(row.upstream, row.tool, row.exposed, version, digest)
                for parsed, version, digest in sorted(live) if parsed.major == major]

