"""The upstreams a ``serve`` process runs (docs/upstreams.md).

At start, before anything is listened on: the ``[[upstreams]]`` of the configuration are read
(all of them, so a bad one refuses the start before anything is stored), then reconciled into
the registry (a configured upstream's stored definition is the configuration's), and every
stored upstream (configured, or added with ``toolkeeper upstream add``) is synced once, all at
the same time, each bounded by its ``call_timeout_s``. An upstream that cannot be reached then
is logged and serves the contracts in force; its calls answer ``isError`` until it is back.

While serving: its tools are forwarded (:class:`~toolkeeper.upstreams.forwarding.UpstreamTools`,
a handler source of the gateway), the bindings re-read after each sync and after every registry
change (another replica's approval or sync reaches this one through the registry's change
feed), and a :class:`~toolkeeper.upstreams.serving_sync.ServingSync` syncs each upstream on its
``notifications/tools/list_changed`` and every ``sync_interval_s``. With no upstream at all none
of this exists: the gateway's call path is as it is without the feature.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from toolkeeper.contracts.semver import Version
from toolkeeper.errors import StoreError, ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.server.runnable import CanRun
from toolkeeper.upstreams.connections import UpstreamConnections, open_session
from toolkeeper.upstreams.forwarding import UpstreamTools
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.health_record import HealthRecorder, metric_rows
from toolkeeper.upstreams.model import UpstreamBinding, UpstreamDefinition
from toolkeeper.upstreams.report import SyncReport
from toolkeeper.upstreams.serving_sync import ServingSync
from toolkeeper.upstreams.sync import sync

__all__ = ["ServedUpstreams", "read_configured"]


class _Names:
    """Every version of a set of names (a :class:`~toolkeeper.server.runnable.CanRun`)."""

    revision = 0

    def __init__(self, names: frozenset[str]) -> None:
        self._names = names

    def can_run(self, name: str, version: Version) -> bool:
        return name in self._names

ACTOR = "toolkeeper-sync"
"""Who the registry's audit trail names for what a sync publishes or deprecates."""


def read_configured(configured: Sequence[Mapping[str, Any]]) -> list[UpstreamDefinition]:
    """The configuration's upstreams, every one checked (ConfigError ``upstream.invalid``
    with the ``upstreams[N].KEY`` it names)."""
    out = []
    for index, mapping in enumerate(configured):
        try:
            out.append(UpstreamDefinition.from_mapping(mapping))
        except ToolkeeperError as exc:
            key = exc.data.get("key")
            exc.data["key"] = f"upstreams[{index}]" + (f".{key}" if key else "")
            raise
    return out


class ServedUpstreams:
    """The upstream half of one serving gateway."""

    def __init__(self, registry: Registry, configured: Sequence[UpstreamDefinition],
                 log: logging.Logger) -> None:
        self._registry = registry
        self._configured = configured
        self._log = log
        self._governance = Upstreams(registry)
        self._upstreams: Upstreams | None = None
        self._definitions: dict[str, UpstreamDefinition] = {}
        self.tools: UpstreamTools | None = None
        self._scheduler: ServingSync | None = None
        self._unsubscribe: Any = None
        self._health: HealthRecorder | None = None

    def prepare(self) -> UpstreamTools | None:
        """Reconcile, sync once, and build the handler source (None: no upstream)."""
        upstreams = self._governance
        for defn in self._configured:
            upstreams.add(defn, origin="config", actor="config", replace_existing=True)
        names = upstreams.names()
        if not names:
            return None
        self._upstreams = upstreams
        for name in names:
            try:
                self._definitions[name] = upstreams.definition(name)
            except StoreError as exc:  # fails closed: its tools are not served
                self._log.warning("upstream %s: %s (%s); none of its tools is served", name,
                                  exc.message, exc.code)
        for report in asyncio.run(self._sync_all()):
            self._log_report(report)
        connections = UpstreamConnections(self._definitions, on_change=self._health_changed)
        self._health = HealthRecorder(upstreams, connections.status_of,
                                      reset=connections.reset)
        self._health.record_all(self._definitions)
        self.tools = UpstreamTools(self._definitions, self._bindings, connections)
        self._unsubscribe = self._registry.subscribe(self._refresh)
        self._scheduler = ServingSync(upstreams, list(self._definitions.values()),
                                      actor=ACTOR, open_session=open_session,
                                      on_synced=self._synced)
        return self.tools

    def _health_changed(self, name: str) -> None:
        if self._health is not None:
            self._health.changed(name)

    def metric_rows(self) -> list[dict[str, Any]]:
        """One row per upstream for the metrics (read at scrape time)."""
        if self.tools is None or self._upstreams is None:
            return []
        return metric_rows(self._upstreams, self.tools.connections.status())

    def owned(self) -> CanRun:
        """What the upstreams stored already run, for the start-up coverage report: every
        version of every name an upstream's tool is exposed under (before any sync)."""
        names: set[str] = set()
        for name in self._governance.names():
            try:
                names.update(row.exposed for row in self._governance.tools(name))
            except StoreError:
                continue
        return _Names(frozenset(names))

    def start(self) -> None:
        if self._scheduler is not None:
            self._scheduler.start()

    async def aclose(self) -> None:
        """Close the forwarding's sessions on the serving loop (stdio upstreams stopped and
        reaped there) before that loop ends; :meth:`stop` is the last resort after it."""
        if self.tools is not None:
            await self.tools.connections.aclose()

    def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.tools is not None:
            self.tools.connections.kill()
        if self._health is not None:
            self._health.forget_all()

    def banner(self) -> list[str]:
        """One line per upstream for the start-up banner."""
        if self.tools is None:
            return []
        served: dict[str, int] = {}
        for binding in self._bindings():
            served[binding.upstream] = served.get(binding.upstream, 0) + 1
        return [f"  upstream {name}: {defn.url or ' '.join(defn.command or ())} "
                f"({served.get(name, 0)} contract versions forwarded)"
                for name, defn in sorted(self._definitions.items())]

    async def _sync_all(self) -> list[SyncReport]:
        results = await asyncio.gather(*(self._sync_one(name) for name in self._definitions),
                                       return_exceptions=True)
        reports = []
        for name, result in zip(self._definitions, results, strict=True):
            if isinstance(result, ToolkeeperError):
                self._log.warning("upstream %s: not synced at start (%s): %s; the contracts "
                                  "in force are served", name, result.code, result.message)
            elif isinstance(result, BaseException):
                raise result
            else:
                reports.append(result)
        return reports

    async def _sync_one(self, name: str) -> SyncReport:
        assert self._upstreams is not None
        return await sync(self._upstreams, name, actor=ACTOR)

    def _bindings(self) -> list[UpstreamBinding]:
        if self._upstreams is None:
            return []
        return [binding for binding in self._upstreams.bindings()
                if binding.upstream in self._definitions]

    def _refresh(self) -> None:
        if self.tools is not None:
            self.tools.refresh()

    def _synced(self, report: SyncReport) -> None:
        self._log_report(report)
        self._refresh()

    def _log_report(self, report: SyncReport) -> None:
        for outcome in report.tools:
            if outcome.action in ("unchanged", "missing"):
                continue
            level = logging.WARNING if outcome.code else logging.INFO
            self._log.log(level, "upstream %s: %s %s%s", report.upstream, outcome.exposed,
                          outcome.action, f" ({outcome.code})" if outcome.code else "")
