"""Coalesced syncs: :class:`SyncScheduler` runs at most one sync of an upstream at a time in
this process and folds every request that arrives meanwhile into one more run.

A request (an upstream's ``notifications/tools/list_changed``, the periodic timer, an operator)
marks the upstream due; when no sync of it is running one starts, and when one is running the
request is kept for exactly one run after it, however many arrive (the listing that run fetches
is newer than all of them). Across processes the store's sync lock holds the line: a run that
finds another replica syncing ends with ``upstream.sync_busy``, handed to ``on_error`` like any
other failure (the replica that syncs publishes through the registry's change feed).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from toolkeeper.errors import ToolkeeperError
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.report import SyncReport
from toolkeeper.upstreams.sync import sync

__all__ = ["SyncRunner", "SyncScheduler"]

_log = logging.getLogger(__name__)

SyncRunner = Callable[[Upstreams, str], Awaitable[SyncReport]]
"""What one run does (default: :func:`~toolkeeper.upstreams.sync.sync` with the actor)."""


class SyncScheduler:
    """Coalesced, one-at-a-time syncs per upstream (use within one event loop)."""

    def __init__(self, upstreams: Upstreams, *, actor: str = "sync",
                 run: SyncRunner | None = None,
                 on_report: Callable[[SyncReport], None] | None = None,
                 on_error: Callable[[str, BaseException], None] | None = None) -> None:
        self._upstreams = upstreams
        self._run: SyncRunner = run or (lambda ups, name: sync(ups, name, actor=actor))
        self._on_report = on_report
        self._on_error = on_error
        self._due: set[str] = set()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.runs: dict[str, int] = {}
        """How many runs of each upstream have ended (reports and failures)."""

    def request(self, name: str) -> None:
        """Ask for a sync of ``name``: now, or once after the one running."""
        self._due.add(name)
        task = self._tasks.get(name)
        if task is None or task.done():
            self._tasks[name] = asyncio.get_running_loop().create_task(self._drain(name))

    async def _drain(self, name: str) -> None:
        while name in self._due:
            self._due.discard(name)
            try:
                report = await self._run(self._upstreams, name)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one upstream's failure never stops the scheduler
                if isinstance(exc, ToolkeeperError) and exc.code == "upstream.sync_busy":
                    _log.info("upstream %s: not synced here: a sync of it runs elsewhere "
                              "(upstream.sync_busy); its changes arrive through the registry",
                              name)
                else:
                    _log.warning("upstream %s: sync failed: %s", name, exc)
                if self._on_error is not None:
                    self._on_error(name, exc)
            else:
                if self._on_report is not None:
                    self._on_report(report)
            finally:
                self.runs[name] = self.runs.get(name, 0) + 1

    async def idle(self, name: str) -> None:
        """Return once no sync of ``name`` is running or due."""
        while (task := self._tasks.get(name)) is not None and not task.done():
            await asyncio.shield(task)

    async def every(self, name: str, interval_s: float) -> None:
        """Request a sync of ``name`` now and every ``interval_s`` seconds, until cancelled."""
        while True:
            self.request(name)
            await asyncio.sleep(interval_s)

    async def aclose(self) -> None:
        """Cancel the running and due syncs, and wait for them to end."""
        self._due.clear()
        tasks = [task for task in self._tasks.values() if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
