"""What a serving gateway keeps of its upstreams' health in the registry, so that ``toolkeeper
upstream list`` (another process) and every replica see it, and what its metrics read.

:class:`HealthRecorder` is told of each upstream whose health may have moved (the end of each
forwarded call, an operator's reset: ``UpstreamConnections(on_change=...)``) and writes this
replica's view (:data:`KEPT` of :meth:`~toolkeeper.upstreams.connections.UpstreamConnections.
status`) when it differs from the one it wrote last: a steady upstream costs no write. The view
is as of that event: a breaker whose cool-down has passed since reads ``open-breaker`` until
the next call. A view that cannot be written is logged and tried again at the next event.

An upstream ``failed`` after a crash loop stays failed until an operator syncs it: ``toolkeeper
upstream sync`` (another process) records the operator's reset (the row of replica
:data:`OPERATOR`), and a replica that recorded the upstream failed before that reset resets its
supervision at the next call (``UpstreamConnections`` tells the recorder before admitting a
call to a failed upstream), so that call goes through.

:func:`summary` folds every replica's view into one: the worst state and breaker, the sum of
the restarts (``unknown`` when no serving gateway recorded any)."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from toolkeeper.errors import StoreError, ToolkeeperError
from toolkeeper.registry.upstream_records import HealthRecord
from toolkeeper.upstreams.governance import Upstreams

__all__ = ["KEPT", "OPERATOR", "STATES", "HealthRecorder", "metric_rows", "record_reset",
           "replica_id", "summary"]

_log = logging.getLogger(__name__)

KEPT: Final = ("transport", "era", "state", "breaker", "restarts", "consecutiveFailures",
               "lastError")
"""The fields of an upstream's status a replica records (its counts of calls are left out: they
move on every call)."""

OPERATOR: Final = "operator"
"""The replica name of an operator's reset (``{"reset": true, "by": actor}``)."""

STATES: Final = ("failed", "open-breaker", "half-open", "backoff", "connected", "idle")
"""Every health state, worst first."""

BREAKERS: Final = ("open", "half-open", "closed")
"""Every breaker state, worst first."""


def replica_id() -> str:
    """This process as a replica: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


class HealthRecorder:
    """Writes ``replica``'s view of each upstream (``status_of(name)``) through ``upstreams``
    when it changed."""

    def __init__(self, upstreams: Upstreams, status_of: Callable[[str], Mapping[str, Any]],
                 replica: str | None = None, *,
                 reset: Callable[[str], None] | None = None) -> None:
        self._upstreams = upstreams
        self._status_of = status_of
        self._reset = reset
        self.replica = replica if replica is not None else replica_id()
        self._written: dict[str, dict[str, Any]] = {}
        self._failed_at: dict[str, str] = {}

    def changed(self, name: str) -> None:
        status = self._status_of(name)
        if status.get("state") == "failed" and self._reset_since_failed(name):
            assert self._reset is not None
            self._failed_at.pop(name, None)
            _log.info("upstream %s: out of failed: an operator synced it", name)
            self._reset(name)  # tells this recorder again, with the state after the reset
            return
        view = {key: status.get(key) for key in KEPT}
        if self._written.get(name) == view:
            return
        try:
            self._upstreams.record_health(name, self.replica, view)
        except StoreError as exc:
            _log.warning("upstream %s: its health is not recorded (%s)", name, exc.code)
            return
        self._written[name] = view
        if view["state"] == "failed":
            self._failed_at[name] = max(
                (r.updated for r in self._upstreams.health(name) if r.replica == self.replica),
                default="")

    def _reset_since_failed(self, name: str) -> bool:
        failed_at = self._failed_at.get(name)
        if self._reset is None or failed_at is None:
            return False
        try:
            records = self._upstreams.health(name)
        except StoreError:
            return False
        return any(r.replica == OPERATOR and r.updated > failed_at for r in records)

    def record_all(self, names: Iterable[str]) -> None:
        for name in names:
            self.changed(name)

    def forget_all(self) -> None:
        """This replica stops: its views go (a replica that dies leaves its last ones, with
        their time, until it or an operator's removal of the upstream replaces them)."""
        for name in list(self._written):
            try:
                self._upstreams.forget_health(name, self.replica)
            except StoreError as exc:
                _log.warning("upstream %s: this replica's health view stays (%s)", name,
                             exc.code)
        self._written.clear()


def _worst(values: Sequence[Any], order: Sequence[str]) -> str:
    known = [order.index(v) for v in values if v in order]
    return order[min(known)] if known else "unknown"


def summary(records: Sequence[HealthRecord]) -> dict[str, Any]:
    """``health``, ``breaker``, ``restarts``, ``replicas`` (each replica's view, with its
    time) and ``lastReset`` (the operator's last sync: by whom, when) of an upstream's
    records."""
    resets = [r for r in records if r.replica == OPERATOR]
    records = [r for r in records if r.replica != OPERATOR]
    states = [r.status.get("state") for r in records]
    breakers = [r.status.get("breaker") for r in records]
    restarts = sum(int(r.status.get("restarts") or 0) for r in records)
    return {"health": _worst(states, STATES), "breaker": _worst(breakers, BREAKERS),
            "restarts": restarts,
            "replicas": [{"replica": r.replica, "updated": r.updated, **dict(r.status)}
                         for r in records],
            "lastReset": ({"by": resets[0].status.get("by"), "at": resets[0].updated}
                          if resets else None)}


def record_reset(upstreams: Upstreams, name: str, actor: str) -> None:
    """An operator's sync of ``name``: every replica that has it failed resets it."""
    upstreams.record_health(name, OPERATOR, {"reset": True, "by": actor})


def metric_rows(upstreams: Upstreams, statuses: Iterable[Mapping[str, Any]]
                ) -> list[dict[str, Any]]:
    """The metrics' rows: each upstream's supervision ``statuses`` (this gateway's
    :meth:`~toolkeeper.upstreams.connections.UpstreamConnections.status`) with the tools it
    serves under contract (``tools``) and its pending drifts (``pending``) from the registry."""
    rows = []
    for status in statuses:
        name = str(status["name"])
        try:
            tools = sum(1 for row in upstreams.tools(name) if row.present)
            pending = len(upstreams.pending(name))
        except ToolkeeperError:  # unreadable: none of its tools is served
            tools, pending = 0, 0
        rows.append({**status, "tools": tools, "pending": pending})
    return rows
