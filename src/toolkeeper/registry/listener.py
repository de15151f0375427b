"""PostgreSQL LISTEN on a dedicated connection, in a background thread (SPEC 2.4).

Payloads are ``"<origin> <name>"``; a notification from the listener's own store (same origin)
is skipped, because the writing thread has already applied that change.

The thread waits in ``notifies()`` until the server delivers a notification: there is no
polling of the registry (each wait ends after half a second, without a query, only so the
thread sees its stop event). It calls its callbacks once after every (re)connection, so
anything committed while it was disconnected is caught up through the registry's cursor, and
stops when it receives its own stop token (sent by :meth:`PgListener.stop`) or sees the stop
event, whether connected, reconnecting, or connected after the token was sent.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable

import psycopg

__all__ = ["PgListener"]

_log = logging.getLogger(__name__)

_STOP_CHECK_S = 0.5
"""How long one wait in ``notifies()`` lasts before the thread looks at its stop event (no
query is sent: the wait ends by itself)."""


class PgListener:
    """Runs ``callbacks`` on every NOTIFY on ``channel``; start with :meth:`start`."""

    def __init__(self, url: str, channel: str, *, origin: str = "",
                 connect_timeout: int = 10) -> None:
        self._url = url
        self._channel = channel
        self._own = origin + " " if origin else None
        self._connect_timeout = connect_timeout
        self.token = "stop:" + secrets.token_hex(16)
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.in_sync = False
        """LISTEN is in place and what committed before it has been caught up (False while
        connecting or reconnecting: notifications may be missed then)."""
        self._thread = threading.Thread(target=self._run, name="toolkeeper-registry-listen",
                                        daemon=True)

    def add(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._callbacks.append(callback)

    def start(self, *, timeout: float = 10.0) -> bool:
        """Start listening; True once LISTEN is in place (waits at most ``timeout`` seconds)."""
        self._thread.start()
        return self._ready.wait(timeout)

    def stop(self, send_token: Callable[[str], None], *, timeout: float = 5.0) -> None:
        """Stop the thread: set the event, wake ``notifies()`` with our token, join (bounded)."""
        self._stop.set()
        if self._thread.is_alive():
            try:
                send_token(self.token)
            except Exception:  # the server may be gone; the thread then exits on its error
                _log.debug("registry listener: could not send the stop token", exc_info=True)
            self._thread.join(timeout)

    def _fire(self) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            try:
                callback()
            except Exception:
                _log.exception("registry listener: callback failed")

    def _ignored(self, payload: str) -> bool:
        """Another listener's stop token, or a change our own store made (already applied)."""
        return payload.startswith("stop:") or bool(self._own and payload.startswith(self._own))

    def _run(self) -> None:
        try:
            self._listen()
        finally:
            self.in_sync = False  # stopped: nothing is heard any more

    def _listen(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True,
                                     connect_timeout=self._connect_timeout) as conn:
                    conn.execute(f'LISTEN "{self._channel}"')
                    self._ready.set()
                    backoff = 0.1
                    self._fire()  # catch up on whatever committed while we were away
                    self.in_sync = True
                    while not self._stop.is_set():  # (a stop set while connecting ends here)
                        # Bounded waits: the stop event is seen even when the token cannot be
                        # sent (the store's own session is gone) or went out before LISTEN.
                        for notify in conn.notifies(timeout=_STOP_CHECK_S):
                            if notify.payload == self.token or self._stop.is_set():
                                return
                            if not self._ignored(notify.payload):
                                self._fire()
            except psycopg.Error:
                self.in_sync = False
                if self._stop.is_set():
                    return
                _log.warning("registry listener: connection lost; reconnecting", exc_info=True)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)
