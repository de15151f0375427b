"""Upstream MCP servers in the registry store (issue 22): what is kept, and the seam stores
implement.

Three row families, all in the store every replica reads:

* :class:`UpstreamRecord`: one upstream, its definition as the canonical mapping of
  :meth:`toolkeeper.upstreams.model.UpstreamDefinition.to_mapping` (this package does not import
  ``upstreams``: the definition is kept as data), where it came from (``cli`` or ``config``) and
  its times.
* :class:`UpstreamToolRecord`: one (upstream, tool): the exposed name, the version and descriptor
  digest in force, the descriptor in force, whether the upstream still lists the tool, the digest
  last seen, and every published version's descriptor digest (what the bindings name).
* :class:`DriftRecord`: one drift seen by a sync, its classification and its fate (``pending``,
  ``approved``, ``rejected``, ``published``, ``superseded``), who decided it and when.

A row that cannot be read back (not JSON, a field of the wrong type) is
:class:`~toolkeeper.errors.StoreError` ``upstream.state_unreadable``: callers fail closed (that
upstream's tools are not served) rather than re-trust it. The columns' SQL lives with each
backend (:mod:`~toolkeeper.registry.sqlite_upstreams`, :mod:`~toolkeeper.registry.pg_upstreams`);
the row <-> record conversions are here, shared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.errors import StoreError

__all__ = [
    "DRIFT_COLUMNS",
    "DRIFT_STATUSES",
    "HEALTH_COLUMNS",
    "TOOL_COLUMNS",
    "UPSTREAM_COLUMNS",
    "DriftRecord",
    "HealthRecord",
    "UpstreamRecord",
    "UpstreamStore",
    "UpstreamToolRecord",
    "drift_from_row",
    "drift_params",
    "health_from_row",
    "health_params",
    "sync_busy",
    "tool_from_row",
    "tool_params",
    "unreadable",
    "upstream_from_row",
    "upstream_params",
    "upstream_store",
]

DRIFT_STATUSES = ("pending", "approved", "rejected", "published", "superseded")
_ORIGINS = ("cli", "config")

UPSTREAM_COLUMNS = "name, definition, origin, created, updated"
TOOL_COLUMNS = ("upstream, tool, exposed, version, digest, descriptor, present,"
                " last_seen_digest, versions")
HEALTH_COLUMNS = "upstream, replica, status, updated"
DRIFT_COLUMNS = ("id, upstream, tool, seen_at, previous_digest, new_digest,"
                 " previous_descriptor, new_descriptor, level, classes, changes, status,"
                 " decided_by, decided_at, published_version")


@dataclass(frozen=True, slots=True)
class UpstreamRecord:
    """One stored upstream: ``definition`` is the definition's canonical mapping."""

    name: str
    definition: Mapping[str, Any]
    origin: str
    created: str
    updated: str


@dataclass(frozen=True, slots=True)
class UpstreamToolRecord:
    """One upstream tool under contract: what is in force for it."""

    upstream: str
    tool: str
    exposed: str
    version: str
    """The version in force (the newest published from this upstream tool)."""
    digest: str
    """The descriptor digest of the version in force."""
    descriptor: Mapping[str, Any]
    """The descriptor in force, as the upstream served it."""
    present: bool
    """False once a sync found the tool gone upstream (its contract is then deprecated)."""
    last_seen_digest: str | None
    versions: Mapping[str, str] = field(default_factory=dict)
    """Every version published from this upstream tool -> its descriptor digest."""


@dataclass(frozen=True, slots=True)
class DriftRecord:
    """One drift: a descriptor the upstream served that differs from the one in force."""

    id: str
    upstream: str
    tool: str
    seen_at: str
    previous_digest: str
    new_digest: str
    previous_descriptor: Mapping[str, Any]
    new_descriptor: Mapping[str, Any]
    level: str
    """The classifier's level for the whole change (``major``, ``minor``, ``patch``)."""
    classes: tuple[str, ...]
    """The drift classes (sorted): schema levels, ``descriptive``, ``risk_lowered``."""
    changes: tuple[Mapping[str, str], ...]
    """The classifier's changes as ``{"rule", "path"}``, sorted by (rule, path)."""
    status: str = "pending"
    decided_by: str | None = None
    decided_at: str | None = None
    published_version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "upstream": self.upstream, "tool": self.tool,
                "seenAt": self.seen_at, "previousDigest": self.previous_digest,
                "newDigest": self.new_digest, "level": self.level,
                "classes": list(self.classes), "changes": [dict(c) for c in self.changes],
                "status": self.status, "decidedBy": self.decided_by,
                "decidedAt": self.decided_at, "publishedVersion": self.published_version}


@dataclass(frozen=True, slots=True)
class HealthRecord:
    """One serving gateway's (``replica``'s) last view of one upstream's health: ``status``
    as :meth:`~toolkeeper.upstreams.connections.UpstreamConnections.status` gives it."""

    upstream: str
    replica: str
    status: Mapping[str, Any]
    updated: str


@runtime_checkable
class UpstreamStore(Protocol):
    """The upstream half of a registry store (memory, SQLite, PostgreSQL all implement it)."""

    def put_upstream(self, record: UpstreamRecord) -> None:
        """Store the upstream, replacing a stored one of that name."""
        ...

    def get_upstream(self, name: str) -> UpstreamRecord | None:
        """The upstream of that name; None when there is none."""
        ...

    def upstream_names(self) -> tuple[str, ...]:
        """Every stored upstream's name, sorted (readable even when a row is not)."""
        ...

    def delete_upstream(self, name: str) -> bool:
        """Delete the upstream, its tool rows and health views (its drifts are kept); whether
        it was there."""
        ...

    def put_upstream_tool(self, record: UpstreamToolRecord) -> None:
        """Store the (upstream, tool) row, replacing a stored one."""
        ...

    def delete_upstream_tool(self, upstream: str, tool: str) -> None:
        """Forget the (upstream, tool) row, if there is one."""
        ...

    def upstream_tools(self, upstream: str) -> tuple[UpstreamToolRecord, ...]:
        """The upstream's tool rows, sorted by tool name."""
        ...

    def put_drift(self, record: DriftRecord) -> None:
        """Store the drift, replacing a stored one of that id."""
        ...

    def drifts(self, upstream: str, tool: str | None = None) -> tuple[DriftRecord, ...]:
        """The upstream's drifts (of one tool, or all), oldest first (then by id)."""
        ...

    def put_upstream_health(self, record: HealthRecord) -> None:
        """Store the replica's view of the upstream, replacing its previous one."""
        ...

    def upstream_health(self, upstream: str) -> tuple[HealthRecord, ...]:
        """Every replica's last view of the upstream, by replica."""
        ...

    def delete_upstream_health(self, upstream: str, replica: str) -> None:
        """Forget the replica's view of the upstream, if there is one."""
        ...

    def upstream_sync_lock(self, name: str) -> AbstractContextManager[None]:
        """Held while one sync of ``name`` runs; one already running anywhere the lock
        reaches (PostgreSQL: every process; SQLite and memory: this process) is StoreError
        ``upstream.sync_busy``, at once (never waited for)."""
        ...


def upstream_store(store: object) -> UpstreamStore:
    """``store`` as an :class:`UpstreamStore`; one that keeps none is
    ``registry.upstreams_unsupported``."""
    if not isinstance(store, UpstreamStore):
        raise StoreError(f"{type(store).__name__} does not keep upstreams",
                         code="registry.upstreams_unsupported")
    return store


def unreadable(where: str, why: str) -> StoreError:
    return StoreError(f"the stored state of upstream {where} cannot be read: {why}",
                      code="upstream.state_unreadable", data={"upstream": where})


def sync_busy(name: str) -> StoreError:
    return StoreError(f"upstream {name!r} is being synced already", code="upstream.sync_busy",
                      data={"upstream": name})


def _json(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def _load(text: Any, kind: type, where: str, column: str) -> Any:
    try:
        value = loads_json(text)
    except Exception:
        raise unreadable(where, f"{column} is not JSON") from None
    if not isinstance(value, kind):
        raise unreadable(where, f"{column} is not a {kind.__name__}")
    return value


def _text(value: Any, where: str, column: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise unreadable(where, f"{column} is not text")
    return value


def upstream_params(record: UpstreamRecord) -> dict[str, Any]:
    if record.origin not in _ORIGINS:
        raise ValueError(f"origin must be one of {', '.join(_ORIGINS)}")
    return {"name": record.name, "definition": _json(dict(record.definition)),
            "origin": record.origin, "created": record.created, "updated": record.updated}


def upstream_from_row(row: Sequence[Any]) -> UpstreamRecord:
    name, definition, origin, created, updated = row
    where = str(name)
    if origin not in _ORIGINS:
        raise unreadable(where, "origin is not cli or config")
    return UpstreamRecord(_text(name, where, "name"),
                          _load(definition, dict, where, "definition"), str(origin),
                          _text(created, where, "created"), _text(updated, where, "updated"))


def tool_params(record: UpstreamToolRecord) -> dict[str, Any]:
    return {"upstream": record.upstream, "tool": record.tool, "exposed": record.exposed,
            "version": record.version, "digest": record.digest,
            "descriptor": _json(dict(record.descriptor)), "present": 1 if record.present else 0,
            "last_seen_digest": record.last_seen_digest,
            "versions": _json(dict(record.versions))}


def tool_from_row(row: Sequence[Any]) -> UpstreamToolRecord:
    upstream, tool, exposed, version, digest, descriptor, present, last_seen, versions = row
    where = str(upstream)
    table = _load(versions, dict, where, "versions")
    if not all(isinstance(v, str) for v in table.values()):
        raise unreadable(where, "versions holds a digest that is not text")
    if present not in (0, 1, True, False):
        raise unreadable(where, "present is not a flag")
    return UpstreamToolRecord(
        _text(upstream, where, "upstream"), _text(tool, where, "tool"),
        _text(exposed, where, "exposed"), _text(version, where, "version"),
        _text(digest, where, "digest"), _load(descriptor, dict, where, "descriptor"),
        bool(present), _text(last_seen, where, "last_seen_digest", optional=True), table)


def drift_params(record: DriftRecord) -> dict[str, Any]:
    if record.status not in DRIFT_STATUSES:
        raise ValueError(f"status must be one of {', '.join(DRIFT_STATUSES)}")
    return {"id": record.id, "upstream": record.upstream, "tool": record.tool,
            "seen_at": record.seen_at, "previous_digest": record.previous_digest,
            "new_digest": record.new_digest,
            "previous_descriptor": _json(dict(record.previous_descriptor)),
            "new_descriptor": _json(dict(record.new_descriptor)), "level": record.level,
            "classes": _json(sorted(record.classes)),
            "changes": _json(sorted((dict(c) for c in record.changes),
                                    key=lambda c: (c["rule"], c["path"]))),
            "status": record.status, "decided_by": record.decided_by,
            "decided_at": record.decided_at, "published_version": record.published_version}


def drift_from_row(row: Sequence[Any]) -> DriftRecord:
    (drift_id, upstream, tool, seen_at, previous, new, previous_descriptor, new_descriptor,
     level, classes, changes, status, decided_by, decided_at, published) = row
    where = str(upstream)
    class_list = _load(classes, list, where, "classes")
    change_list = _load(changes, list, where, "changes")
    if not all(isinstance(c, str) for c in class_list) or not all(
            isinstance(c, dict) and isinstance(c.get("rule"), str)
            and isinstance(c.get("path"), str) for c in change_list):
        raise unreadable(where, "a drift's classes or changes are malformed")
    if status not in DRIFT_STATUSES:
        raise unreadable(where, "a drift's status is unknown")
    return DriftRecord(
        _text(drift_id, where, "id"), where, _text(tool, where, "tool"),
        _text(seen_at, where, "seen_at"), _text(previous, where, "previous_digest"),
        _text(new, where, "new_digest"),
        _load(previous_descriptor, dict, where, "previous_descriptor"),
        _load(new_descriptor, dict, where, "new_descriptor"), _text(level, where, "level"),
        tuple(class_list), tuple({"rule": c["rule"], "path": c["path"]} for c in change_list),
        str(status), _text(decided_by, where, "decided_by", optional=True),
        _text(decided_at, where, "decided_at", optional=True),
        _text(published, where, "published_version", optional=True))


def health_params(record: HealthRecord) -> dict[str, Any]:
    return {"upstream": record.upstream, "replica": record.replica,
            "status": _json(dict(record.status)), "updated": record.updated}


def health_from_row(row: Sequence[Any]) -> HealthRecord:
    upstream, replica, status, updated = row
    where = str(upstream)
    return HealthRecord(_text(upstream, where, "upstream"), _text(replica, where, "replica"),
                        _load(status, dict, where, "status"), _text(updated, where, "updated"))
