"""The change hub: registry changes (and handler announcements) fanned out to open streams.

A stream is one client waiting for ``notifications/*/list_changed``: a modern
``subscriptions/listen`` response, or a legacy session's standalone GET stream. The hub
subscribes to :meth:`Registry.subscribe`, so a change published through this registry, pushed
by another replica (PostgreSQL LISTEN/NOTIFY) or noticed on a read (SQLite written by another
process) reaches every stream; handlers announce changes with
:meth:`ToolContext.notify_tools_changed`.

Bounds:

* at most ``max_streams`` streams at once; one more is refused (-32603, like the SDK's
  "Subscription limit reached");
* a stream's backlog is the *set* of notification methods not yet delivered: list_changed means
  "re-fetch", so a burst coalesces into one notification and a slow reader cannot grow it; a
  stream has at most one wake-up queued on its loop, however many changes arrive while the
  loop is busy;
* SQLite cannot push another process's writes, so an idle stream re-reads the registry every
  ``refresh_s`` seconds (a cheap ``PRAGMA data_version`` check): such a change is delivered within
  that bound, and in-process or PostgreSQL changes at once;
* :meth:`ChangeHub.close` (server shutdown) ends every stream, so the transport can finish each
  response and the server stops without waiting for clients to hang up.

Publishing is thread-safe (registry callbacks run on the writer's or listener's thread); each
stream is consumed on its own event loop and woken with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Final, Self

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import codes
from toolkeeper.registry import Registry

__all__ = ["TOOLS_LIST_CHANGED", "ChangeHub", "ChangeStream"]

_log = logging.getLogger("toolkeeper.server.changes")

TOOLS_LIST_CHANGED: Final = "notifications/tools/list_changed"
"""The one list the gateway serves; prompts and resources are not part of the estate."""


class ChangeStream:
    """One consumer's view of the hub: ``await next()`` gives the notification methods that
    fired since the last call (sorted, each once), or None once the stream has ended."""

    def __init__(self, hub: ChangeHub, loop: asyncio.AbstractEventLoop) -> None:
        self._hub = hub
        self._loop = loop
        self._pending: set[str] = set()
        self._wake = asyncio.Event()
        self._ended = False
        # Posted from any thread, handed over by one queued callback at a time: a burst while
        # the loop is busy queues one wake-up, not one per change.
        self._staged: set[str] = set()
        self._staged_lock = threading.Lock()
        self._scheduled = False

    # --- producer side (any thread) ------------------------------------------------------------

    def post(self, method: str) -> None:
        """Queue ``method`` for delivery (thread-safe; a no-op once the loop is gone)."""
        with self._staged_lock:
            self._staged.add(method)
            if self._scheduled:
                return  # the queued hand-over will take it
            self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._arrive)
        except RuntimeError:  # the consumer's loop is closed: nobody is listening any more
            self._hub.discard(self)

    def end(self) -> None:
        """End the stream: ``next()`` returns None once the backlog is delivered."""
        try:
            self._loop.call_soon_threadsafe(self._finish)
        except RuntimeError:
            self._hub.discard(self)

    def _arrive(self) -> None:
        with self._staged_lock:
            staged, self._staged = self._staged, set()
            self._scheduled = False
        self._pending |= staged
        self._wake.set()

    def _finish(self) -> None:
        self._ended = True
        self._wake.set()

    # --- consumer side (the stream's loop) -----------------------------------------------------

    async def next(self) -> tuple[str, ...] | None:
        while not self._pending:
            if self._ended:
                return None
            self._wake.clear()
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation
                # that lands in the turn the event is set, and the stream would never end.
                async with asyncio.timeout(self._hub.refresh_s):
                    await self._wake.wait()
            except TimeoutError:
                self._hub.refresh()
        batch = tuple(sorted(self._pending))
        self._pending.clear()
        return batch

    def close(self) -> None:
        """Leave the hub (idempotent); call when the client is gone or the stream ended."""
        self._ended = True
        self._hub.discard(self)


class ChangeHub:
    """Fan-out of list_changed notifications to at most ``max_streams`` open streams."""

    def __init__(self, *, max_streams: int = 1024, refresh_s: float = 1.0,
                 refresh: Callable[[], object] | None = None) -> None:
        self.max_streams = max_streams
        self.refresh_s = refresh_s
        self._refresh = refresh
        self._streams: set[ChangeStream] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._unsubscribe: Callable[[], None] | None = None
        self._refreshed_at = float("-inf")

    @classmethod
    def for_registry(cls, registry: Registry, *, max_streams: int = 1024,
                     refresh_s: float = 1.0) -> Self:
        """A hub that hears every change of ``registry`` (and re-reads it while idle)."""
        hub = cls(max_streams=max_streams, refresh_s=refresh_s,
                  refresh=lambda: registry.generation)
        hub._unsubscribe = registry.subscribe(hub.tools_changed)
        return hub

    def __len__(self) -> int:
        with self._lock:
            return len(self._streams)

    @property
    def closed(self) -> bool:
        return self._closed

    def check_capacity(self) -> None:
        """Raise -32603 when no stream can be opened (limit reached, or shutting down)."""
        with self._lock:
            self._check_locked()

    def _check_locked(self) -> None:
        if self._closed:
            raise JsonRpcError(codes.INTERNAL_ERROR, "Server is shutting down")
        if len(self._streams) >= self.max_streams:
            raise JsonRpcError(codes.INTERNAL_ERROR, "Subscription limit reached")

    def open(self) -> ChangeStream:
        """A new stream on the running loop (call from a coroutine); -32603 when full."""
        stream = ChangeStream(self, asyncio.get_running_loop())
        with self._lock:
            self._check_locked()
            self._streams.add(stream)
        return stream

    def discard(self, stream: ChangeStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def publish(self, method: str) -> None:
        """Deliver ``method`` to every open stream (thread-safe)."""
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.post(method)

    def tools_changed(self) -> None:
        """The tool estate changed: every stream gets ``notifications/tools/list_changed``."""
        self.publish(TOOLS_LIST_CHANGED)

    def refresh(self) -> None:
        """Let a store that cannot push report changes made by other processes (at most twice
        per ``refresh_s``, however many streams are idle)."""
        now = time.monotonic()
        with self._lock:
            if self._refresh is None or now - self._refreshed_at < self.refresh_s / 2:
                return
            self._refreshed_at = now
        try:
            self._refresh()
        except Exception:  # a store hiccup must not end the streams; the next tick retries
            _log.warning("change hub: registry refresh failed", exc_info=True)

    def close(self) -> None:
        """End every stream and refuse new ones (idempotent, thread-safe)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            streams = list(self._streams)
            unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        for stream in streams:
            stream.end()
