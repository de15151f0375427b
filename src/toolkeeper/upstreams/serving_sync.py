"""When a serving gateway syncs its upstreams: at start, on each upstream's
``notifications/tools/list_changed`` (coalesced), every ``sync_interval_s``, and when asked.

A :class:`ServingSync` runs in a thread of its own with its own event loop, so an upstream that
is slow to list never holds up a call. Whatever asks for a sync (a notification, the timer,
:meth:`ServingSync.request`) asks its :class:`~toolkeeper.upstreams.scheduler.SyncScheduler`,
which runs one sync of an upstream at a time: a burst of notifications while a sync runs costs
one more sync, not one per notification. The listener keeps one session with the upstream open for its
change stream (``subscriptions/listen`` in the modern era, the standalone GET stream or, on
stdio, what the server sends unasked, in the legacy era); a stream that ends or cannot be opened
is opened again after a backoff that doubles up to :data:`MAX_BACKOFF_S`. The stream's opening
counts as a change (anything may have changed while it was closed).

A sync that finds another one running (``upstream.sync_busy``: another replica holds the
upstream's lock on PostgreSQL) is skipped: that replica publishes, and this one follows the
registry's change feed. Every finished sync is handed to ``on_synced`` (the gateway re-reads its
bindings); a failed one is logged with its code and never stops the scheduler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

from toolkeeper.client import ClientSession
from toolkeeper.errors import RequestRefusedError, ToolkeeperError
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition
from toolkeeper.upstreams.report import SyncReport
from toolkeeper.upstreams.scheduler import SyncScheduler

__all__ = ["MAX_BACKOFF_S", "ServingSync"]

_log = logging.getLogger("toolkeeper.upstreams")

MAX_BACKOFF_S: Final = 60.0
_FIRST_BACKOFF_S: Final = 0.5
_STOP_S: Final = 10.0

OpenSession = Callable[[UpstreamDefinition], Awaitable[ClientSession]]


class ServingSync:
    """Syncs of ``definitions`` (through a :class:`~toolkeeper.upstreams.scheduler.
    SyncScheduler` over ``upstreams``, as ``actor``), listening for changes through sessions
    from ``open_session`` (None: no listening), each report handed to ``on_synced``."""

    def __init__(self, upstreams: Upstreams, definitions: Sequence[UpstreamDefinition], *,
                 actor: str, open_session: OpenSession | None = None,
                 on_synced: Callable[[SyncReport], None] | None = None) -> None:
        self._upstreams = upstreams
        self._definitions = {defn.name: defn for defn in definitions}
        self._actor = actor
        self._open_session = open_session
        self._on_synced = on_synced
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduler: SyncScheduler | None = None
        self._stopped: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self.heard: dict[str, int] = {}
        """The changes heard from each upstream: its change stream's openings and its
        ``notifications/tools/list_changed`` (each one a request, coalesced)."""

    def start(self) -> None:
        """Start the thread; returns once its loop runs."""
        if self._thread is not None or not self._definitions:
            return
        self._thread = threading.Thread(target=self._run, name="toolkeeper-upstream-sync",
                                        daemon=True)
        self._thread.start()
        self._started.wait(_STOP_S)

    def request(self, name: str) -> None:
        """Ask for a sync of ``name`` (from any thread); coalesced with any already asked."""
        loop, scheduler = self._loop, self._scheduler
        if loop is not None and scheduler is not None and name in self._definitions:
            loop.call_soon_threadsafe(scheduler.request, name)

    def stop(self) -> None:
        """Stop every listener, timer and sync, and the thread (a sync in flight is
        cancelled: its registry writes are each atomic)."""
        loop, stopped, thread = self._loop, self._stopped, self._thread
        if loop is not None and stopped is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                loop.call_soon_threadsafe(stopped.set)
        if thread is not None:
            thread.join(_STOP_S)
        self._thread = None

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        scheduler = self._scheduler = SyncScheduler(self._upstreams, actor=self._actor,
                                                    on_report=self._on_synced)
        tasks: list[asyncio.Task[None]] = []
        for name, defn in self._definitions.items():
            if defn.sync_interval_s > 0:
                tasks.append(asyncio.create_task(self._every(name, defn.sync_interval_s)))
            if self._open_session is not None:
                tasks.append(asyncio.create_task(self._listen(defn)))
        self._started.set()
        try:
            await self._stopped.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await scheduler.aclose()

    async def _every(self, name: str, interval_s: float) -> None:
        """The interval's syncs, the first one interval after start (start synced already)."""
        assert self._scheduler is not None
        await asyncio.sleep(interval_s)
        await self._scheduler.every(name, interval_s)

    async def _listen(self, defn: UpstreamDefinition) -> None:
        assert self._open_session is not None and self._scheduler is not None
        scheduler = self._scheduler
        backoff = _FIRST_BACKOFF_S
        while True:
            try:
                session = await self._open_session(defn)
            except ToolkeeperError as exc:
                _log.info("upstream %s: change stream not opened (%s); again in %.1f s",
                          defn.name, exc.code, backoff)
            else:
                if not _announces_changes(session):
                    _log.info("upstream %s does not announce tool changes: synced at start, on "
                              "its interval and on request only", defn.name)
                    await _quietly_close(session)
                    return
                try:
                    async for _ in session.tools_changed():
                        self.heard[defn.name] = self.heard.get(defn.name, 0) + 1
                        scheduler.request(defn.name)
                        backoff = _FIRST_BACKOFF_S
                except RequestRefusedError as exc:
                    _log.info("upstream %s refused the change stream (%s): synced at start, on "
                              "its interval and on request only", defn.name, exc.code)
                    return
                except ToolkeeperError as exc:
                    _log.info("upstream %s: change stream ended (%s)", defn.name, exc.code)
                finally:
                    await _quietly_close(session)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)


def _announces_changes(session: ClientSession) -> bool:
    """Whether the server said it sends ``notifications/tools/list_changed`` (its
    ``capabilities.tools.listChanged``, in the discover or initialize result)."""
    capabilities = session.server.get("capabilities")
    tools = capabilities.get("tools") if isinstance(capabilities, dict) else None
    return isinstance(tools, dict) and tools.get("listChanged") is True


async def _quietly_close(session: ClientSession) -> None:
    with contextlib.suppress(ToolkeeperError, OSError):
        await session.aclose()
