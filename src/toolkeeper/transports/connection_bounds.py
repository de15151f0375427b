"""Connection bounds of the HTTP transport under uvicorn: how long a connection may take to send
a request head, and how many connections may be open at once.

uvicorn alone bounds neither. A new connection that never sends a byte, or sends its head one
byte at a time, is held for as long as the client likes (its keep-alive timer runs only after a
response, and the first byte received cancels it); and its ``limit_concurrency`` counts
connections and tasks but is judged only once a head is complete, so idle and slow-header
connections are never refused: they keep their descriptors until the process runs out, and
while they last every new *normal* request is answered 503 instead.

The protocol classes here are uvicorn's own (httptools when installed, as uvicorn's ``auto``
would choose, else h11) with two additions:

* **a head deadline**: a timer armed when a connection is accepted and when a response ends
  (unless a pipelined request is already waiting), cancelled when the next request head is
  complete (httptools' ``on_headers_complete``; for h11, the ``Request`` event). When it fires
  the transport is closed without an answer: the client has asked nothing complete. This is
  the only work added per request: one ``loop.call_later`` and one ``TimerHandle.cancel``.
* **a connection cap**: a connection accepted while ``max_connections`` others are open is
  answered ``503`` (``connection: close``) at once and closed, before anything is read, so a
  flood costs each extra connection a moment rather than a descriptor held; the connections
  already open (and their clients) are unaffected.
* **a cap per source address**: likewise a connection whose peer address already has
  ``max_connections_per_ip`` open ones, so silent connections from one address cannot take
  the whole cap and leave every other client 503 until their head deadline. Behind a reverse
  proxy every connection comes from the proxy's address (the ASGI ``client`` is the socket
  peer, not a forwarded header): there the cap per address should equal the cap, and each
  client is bounded at the proxy. A connection without an IP peer (a Unix socket) is counted
  against the cap only.

The idle keep-alive limit (from the end of a response to the first byte of the next request)
stays uvicorn's ``timeout_keep_alive``; the runner sets it. :func:`effective_cap` keeps the cap
below the process's descriptor limit (``RLIMIT_NOFILE``), leaving ``DESCRIPTOR_HEADROOM`` for
everything else the process opens.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any, ClassVar, Final

from uvicorn.protocols.http.h11_impl import H11Protocol

from toolkeeper.transports.access_lines import ErrorLines
from toolkeeper.transports.one_write import OneWrite

__all__ = ["DESCRIPTOR_HEADROOM", "bounded_protocol", "effective_cap", "per_ip_cap"]

DESCRIPTOR_HEADROOM: Final = 128
"""Descriptors kept below ``RLIMIT_NOFILE`` for what the process opens besides client
connections: the listening socket, the registry, logs, upstream clients, the event loop."""

_BUSY_TEXT: Final = b"Service Unavailable: too many connections"
_BUSY: Final = (b"HTTP/1.1 503 Service Unavailable\r\n"
                b"content-type: text/plain; charset=utf-8\r\n"
                b"content-length: " + str(len(_BUSY_TEXT)).encode() + b"\r\n"
                b"connection: close\r\n\r\n" + _BUSY_TEXT)
_WARN_EVERY_S: Final = 10.0

_log = logging.getLogger("toolkeeper.transports")


def effective_cap(max_connections: int) -> int:
    """``max_connections``, lowered to the soft ``RLIMIT_NOFILE`` less
    ``DESCRIPTOR_HEADROOM`` (at least 1) when that is smaller."""
    if sys.platform == "win32":  # no RLIMIT_NOFILE; the socket API has its own limits
        return max_connections
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, soft - DESCRIPTOR_HEADROOM))


def per_ip_cap(max_connections_per_ip: int, cap: int) -> int:
    """The open connections one address may hold: ``max_connections_per_ip`` (0: a quarter of
    ``cap``, at least 1), never more than ``cap``."""
    return min(cap, max_connections_per_ip or max(1, cap // 4))


def _peer_ip(transport: asyncio.BaseTransport) -> str | None:
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and peer and isinstance(peer[0], str):
        return peer[0]
    return None


class _Limits:
    """One server's bounds, shared by its connections (a class attribute of its protocol),
    and the open connections of each peer address (the event loop's thread alone reads and
    writes them)."""

    def __init__(self, head_timeout_s: float, max_connections: int,
                 max_per_ip: int | None = None) -> None:
        self.head_timeout_s = head_timeout_s
        self.max_connections = max_connections
        self.max_per_ip = max_connections if max_per_ip is None else max_per_ip
        self.per_ip: dict[str, int] = {}
        self.warned_at = float("-inf")

    def arm(self, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport
            ) -> asyncio.TimerHandle:
        """The head deadline of a connection now waiting for a request head."""
        return loop.call_later(self.head_timeout_s, _close, transport)

    def admit(self, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport,
              open_count: int, ip: str | None) -> asyncio.TimerHandle | None:
        """A connection just made (one of ``open_count``, from ``ip``): its head deadline, or
        None when it is over the cap or its address's (it is then answered 503 and closed,
        and not counted for its address)."""
        if open_count <= self.max_connections:
            if ip is None:
                return self.arm(loop, transport)
            held = self.per_ip.get(ip, 0)
            if held < self.max_per_ip:
                self.per_ip[ip] = held + 1
                return self.arm(loop, transport)
            self._refuse(loop, transport, "%d open from one address, its cap is %d",
                         held, self.max_per_ip)
            return None
        self._refuse(loop, transport, "%d open, the cap is %d", open_count - 1,
                     self.max_connections)
        return None

    def release(self, ip: str) -> None:
        """A counted connection from ``ip`` closed."""
        held = self.per_ip[ip] - 1
        if held:
            self.per_ip[ip] = held
        else:
            del self.per_ip[ip]  # the table holds only addresses with open connections

    def _refuse(self, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport,
                why: str, held: int, cap: int) -> None:
        transport.write(_BUSY)
        transport.close()
        now = loop.time()
        if now - self.warned_at >= _WARN_EVERY_S:  # a flood logs once per interval
            self.warned_at = now
            _log.warning("refusing connections: " + why, held, cap)


def _close(transport: asyncio.Transport) -> None:
    if not transport.is_closing():
        transport.close()


def _cancel(timer: asyncio.TimerHandle | None) -> None:
    if timer is not None:
        timer.cancel()


class _Admitted:
    """The connection's admission and its head timer, for either uvicorn protocol class
    (listed first among the bases, so these run around the protocol's own)."""

    limits: ClassVar[_Limits]
    errors_only_access: ClassVar[bool] = False
    """``logging.access = "errors"``: the requests' access logger is :class:`ErrorLines`."""
    _head_timer: asyncio.TimerHandle | None = None
    _counted_ip: str | None = None
    loop: asyncio.AbstractEventLoop
    connections: set[Any]
    access_log: bool
    access_logger: Any  # uvicorn's logging.Logger, or ErrorLines in its place
    _one_write: OneWrite

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.errors_only_access and self.access_log:
            self.access_logger = ErrorLines(self.access_logger)

    def connection_made(self, transport: Any) -> None:  # an asyncio.Transport
        self._one_write = OneWrite(transport, self.loop)  # a response's head and body: one write
        super().connection_made(self._one_write)  # type: ignore[misc]  # by the MRO
        ip = _peer_ip(transport)
        self._head_timer = self.limits.admit(self.loop, transport, len(self.connections), ip)
        if self._head_timer is not None:
            self._counted_ip = ip

    def connection_lost(self, exc: Exception | None) -> None:
        _cancel(self._head_timer)
        self._head_timer = None
        if self._counted_ip is not None:
            self.limits.release(self._counted_ip)
            self._counted_ip = None
        super().connection_lost(exc)  # type: ignore[misc]  # the protocol's, by the MRO


class _BoundedH11(_Admitted, H11Protocol):
    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request head completed
            _cancel(self._head_timer)
            self._head_timer = None
            self._one_write.hold_next()

    def on_response_complete(self) -> None:
        # Armed first: a pipelined request that the base class then starts cancels it.
        if not self.transport.is_closing():
            self._head_timer = self.limits.arm(self.loop, self.transport)
        super().on_response_complete()


_PROTOCOLS: dict[str, type[Any]] = {"h11": _BoundedH11}

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools comes with uvicorn[standard]
    pass
else:
    class _BoundedHttpTools(_Admitted, HttpToolsProtocol):
        # The two methods below run once per request: the timer work is inlined.
        def on_headers_complete(self) -> None:
            if (timer := self._head_timer) is not None:
                timer.cancel()
                self._head_timer = None
            super().on_headers_complete()
            if not self.pipeline:  # its answer is the next write (a pipelined one's is not)
                self._one_write.hold_next()

        def on_response_complete(self) -> None:
            waiting = not self.pipeline  # else the next request's head is already complete
            super().on_response_complete()
            if waiting and not self.transport.is_closing():
                self._head_timer = self.loop.call_later(self.limits.head_timeout_s, _close,
                                                        self.transport)

    _PROTOCOLS["httptools"] = _BoundedHttpTools

_PROTOCOLS["auto"] = _PROTOCOLS.get("httptools", _BoundedH11)


def bounded_protocol(head_timeout_s: float, max_connections: int,
                     http: str = "auto", max_per_ip: int | None = None, *,
                     errors_only_access: bool = False) -> type[asyncio.Protocol]:
    """The uvicorn HTTP protocol class for one server with these bounds. ``http``: ``"auto"``
    (httptools when installed, else h11, as uvicorn chooses), ``"httptools"`` or ``"h11"``.
    ``max_connections`` is used as given (see :func:`effective_cap`); ``max_per_ip``: the
    open connections one peer address may hold (None: the cap, see :func:`per_ip_cap`).
    ``errors_only_access``: an access line only for a status of 400 or more
    (:mod:`~toolkeeper.transports.access_lines`)."""
    base = _PROTOCOLS.get(http)
    if base is None:
        raise ValueError(f"HTTP implementation {http!r} is unknown or not installed")
    return type(base.__name__, (base,),
                {"limits": _Limits(head_timeout_s, max_connections, max_per_ip),
                 "errors_only_access": errors_only_access})
