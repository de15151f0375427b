"""Running the ASGI app under uvicorn: in the foreground (``toolkeeper serve``) or in a
background thread on an ephemeral loopback port (tests, benchmarks, embedding).

The background server binds and listens *before* uvicorn starts, so the port is known and
connections made at once wait in the backlog: there is nothing to poll for.

Shutdown is bounded: an app with a ``begin_shutdown()`` method (the Streamable HTTP app) is told
first, so its open streams end and their responses finish; uvicorn then waits at most
``GRACEFUL_SHUTDOWN_S`` for connections before cancelling what is left.

Connections are bounded by the app's :class:`~toolkeeper.transports.HttpConfig` (defaults for an
app without one): ``head_timeout_s`` for a request head, ``idle_timeout_s`` for a kept-alive
connection's silence, ``max_connections`` open at once (lowered below the descriptor limit),
``max_connections_per_ip`` of them from one peer address and the listen ``backlog``; see
:mod:`toolkeeper.transports.connection_bounds`.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

import uvicorn

from toolkeeper.transports.asgi_io import ASGIApp
from toolkeeper.transports.connection_bounds import bounded_protocol, effective_cap, per_ip_cap
from toolkeeper.transports.http_config import DEFAULT_BACKLOG, HttpConfig

__all__ = [
    "GRACEFUL_SHUTDOWN_S",
    "RunningServer",
    "ServerThread",
    "listen",
    "run_foreground",
    "serve_in_thread",
]

GRACEFUL_SHUTDOWN_S: Final = 5
"""How long uvicorn waits for open responses at shutdown before cancelling them."""

_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)

_log = logging.getLogger("toolkeeper.transports.runner")


@runtime_checkable
class _EndsStreams(Protocol):
    def begin_shutdown(self) -> None: ...


class _Server(uvicorn.Server):
    """uvicorn, telling the app that shutdown began before waiting for its connections (an
    open SSE stream would otherwise hold the server until the client hangs up)."""

    def __init__(self, config: uvicorn.Config, app: ASGIApp) -> None:
        super().__init__(config)
        self._app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if isinstance(self._app, _EndsStreams):
            self._app.begin_shutdown()
        await super().shutdown(sockets=sockets)


@dataclass(frozen=True, slots=True)
class RunningServer:
    """Where a started server listens."""

    host: str
    port: int
    path: str = "/mcp"

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        return self.base_url + self.path


def listen(host: str, port: int, backlog: int = DEFAULT_BACKLOG) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: an ephemeral one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def _bounds(app: ASGIApp) -> HttpConfig:
    config = getattr(app, "config", None)
    return config if isinstance(config, HttpConfig) else HttpConfig()


def _config(app: ASGIApp, log_level: str, host: str = "127.0.0.1", port: int = 8000,
            access: str = "all", http: str = "auto") -> uvicorn.Config:
    """uvicorn's settings for ``app``: its connection bounds, and its access lines
    (:mod:`~toolkeeper.transports.access_lines`). uvicorn's proxy-headers middleware is off:
    nothing in the gateway reads the client address or scheme it would rewrite from
    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` (the connection bounds count the TCP peer),
    so it would only make every request pay for a header scan; an access line names the TCP
    peer. Nor is there a ``Server`` header: it would name the software, to every client."""
    bounds = _bounds(app)
    cap = effective_cap(bounds.max_connections)
    if cap < bounds.max_connections:
        _log.warning("at most %d connections (max_connections %d is above the descriptor "
                     "limit less its headroom)", cap, bounds.max_connections)
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on",
                          log_config=None,  # its loggers propagate to the process's own
                          ws="none",
                          proxy_headers=False,
                          server_header=False,  # not naming the software: one header less
                          access_log=log_level in ("debug", "info") and access != "off",
                          timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
                          http=bounded_protocol(
                              bounds.head_timeout_s, cap, http=http,
                              max_per_ip=per_ip_cap(bounds.max_connections_per_ip, cap),
                              errors_only_access=access == "errors"),
                          # uvicorn hands it to loop.call_later, which takes a float
                          timeout_keep_alive=bounds.idle_timeout_s,  # type: ignore[arg-type]
                          backlog=bounds.backlog)


class ServerThread:
    """uvicorn in a daemon thread; ``start()`` returns where it listens, ``stop()`` ends it."""

    def __init__(self, app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0,
                 path: str = "/mcp", log_level: str = "warning", access: str = "all",
                 http: str = "auto") -> None:
        self._app = app
        self._host = host
        self._port = port
        self._path = path
        self._log_level = log_level
        self._access = access  # which access lines (logging.access: all, errors, off)
        self._http = http  # uvicorn's HTTP implementation: auto, httptools or h11
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> RunningServer:
        if self._thread is not None:
            raise RuntimeError("server already started")
        sock = listen(self._host, self._port, _bounds(self._app).backlog)
        port = sock.getsockname()[1]
        self._server = _Server(_config(self._app, self._log_level, access=self._access,
                                       http=self._http), self._app)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"toolkeeper-http-{port}", daemon=True)
        self._thread.start()
        return RunningServer(self._host, port, self._path)

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit and wait (bounded); a second, forced exit if it lingers."""
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the HTTP server thread did not stop")


@contextlib.contextmanager
def serve_in_thread(app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0,
                    path: str = "/mcp", log_level: str = "warning", access: str = "all",
                    http: str = "auto") -> Iterator[RunningServer]:
    """Serve ``app`` on ``host`` (an ephemeral port by default) for the ``with`` block
    (``access`` and ``http`` as :class:`ServerThread` takes them)."""
    thread = ServerThread(app, host=host, port=port, path=path, log_level=log_level,
                          access=access, http=http)
    running = thread.start()
    try:
        yield running
    finally:
        thread.stop()


def run_foreground(app: ASGIApp, *, host: str = "127.0.0.1", port: int = 8000,
                   path: str = "/mcp", log_level: str = "info",
                   on_ready: Callable[[RunningServer], None] | None = None,
                   sock: socket.socket | None = None, access: str = "all") -> None:
    """Serve until interrupted (SIGINT/SIGTERM), in the calling (main) thread, and return. The
    socket is bound first (an OSError says the address is unusable; ``sock``: one the caller
    bound already, with :func:`listen`), then ``on_ready`` learns the port. A signal that
    arrives before uvicorn listens for signals (while ``on_ready`` runs, say) is not lost: the
    server stops as soon as it has started. ``access``: which access lines uvicorn logs at
    ``debug`` or ``info`` (``logging.access``: ``all``, ``errors``, ``off``)."""
    if sock is None:
        sock = listen(host, port, _bounds(app).backlog)
    server = _Server(_config(app, log_level, host=host, port=port, access=access), app)

    def stop(signum: int, frame: object) -> None:
        # Also what runs when uvicorn, its shutdown done, raises the signal it caught again.
        server.should_exit = True

    previous = ({sig: signal.signal(sig, stop) for sig in _STOP_SIGNALS}
                if threading.current_thread() is threading.main_thread() else {})
    try:
        if on_ready is not None:
            on_ready(RunningServer(host, sock.getsockname()[1], path))
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
