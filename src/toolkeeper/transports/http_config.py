"""The Streamable HTTP transport's options (:class:`HttpConfig`), read by the endpoint
(:mod:`~toolkeeper.transports.http`) and by the runner that keeps its connection bounds
(:mod:`~toolkeeper.transports.runner`, :mod:`~toolkeeper.transports.connection_bounds`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from toolkeeper.transports.asks import (
    DEFAULT_ASK_TIMEOUT_S,
    DEFAULT_MAX_PENDING,
    DEFAULT_MAX_PENDING_PER_SESSION,
)
from toolkeeper.transports.probes import HealthProbes
from toolkeeper.transports.replay import ReplayConfig
from toolkeeper.transports.security import OriginPolicy

__all__ = ["DEFAULT_BACKLOG", "DEFAULT_MAX_BODY", "HttpConfig"]

DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
DEFAULT_BACKLOG: Final = 2048  # uvicorn's


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """Transport options. ``path`` None serves every path (for mounting in another app)."""

    path: str | None = "/mcp"
    max_body_bytes: int = DEFAULT_MAX_BODY
    policy: OriginPolicy = field(default_factory=OriginPolicy)
    json_response: bool = False
    keepalive_s: float = 15.0
    body_timeout_s: float = 5.0
    """The longest wait for the next part of a request body (a client that stalls mid-body is
    answered 408 and its connection closed)."""
    # Connection bounds, kept by the runner (see toolkeeper.transports.connection_bounds):
    head_timeout_s: float = 10.0
    """The longest a connection may take to send a complete request head, counted from its
    accept or from the end of the previous response; then it is closed unanswered."""
    idle_timeout_s: float = 5.0
    """How long a kept-alive connection may stay silent after a response (uvicorn's
    ``timeout_keep_alive``); then it is closed. The head limit runs from the response too, so
    this one matters only when it is the shorter."""
    max_connections: int = 1000
    """Open connections beyond which a new one is answered 503 and closed at once; lowered to
    the process's descriptor limit less a headroom when that is smaller."""
    max_connections_per_ip: int = 0
    """Open connections from one peer address beyond which a new one from it is answered 503
    and closed at once (0: a quarter of the effective ``max_connections``, at least 1), so
    silent connections from one source cannot hold the whole cap. Behind a reverse proxy every
    connection comes from the proxy's address: set it to ``max_connections`` there."""
    backlog: int = DEFAULT_BACKLOG
    """Connections the kernel queues for accepting (``listen``; the kernel may cap it)."""
    documents: Mapping[str, bytes] = field(default_factory=dict)
    """Static JSON documents served by path beside the endpoint, to GET (else 405), without
    authentication or Host checks: the protected-resource metadata (RFC 9728 3) at its
    well-known paths. Only when ``path`` is set (a mounted app serves every path)."""
    probes: HealthProbes | None = None
    """The answers of ``GET /healthz`` and ``GET /readyz``
    (:mod:`~toolkeeper.transports.probes`), served beside the endpoint without authentication,
    Host or Origin checks, and uncounted; None: those paths are 404. Only when ``path`` is set
    and is not one of them."""
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    """Resumable legacy streams (:mod:`~toolkeeper.transports.resumable`): the ``retry``
    hint and the replay logs' bounds (``max_events`` 0: none; never in JSON mode)."""
    ask_timeout_s: float = DEFAULT_ASK_TIMEOUT_S
    """How long a legacy handler's request to its client waits for the answer
    (:mod:`~toolkeeper.transports.asks`)."""
    max_pending_asks: int = DEFAULT_MAX_PENDING
    """Requests to clients awaiting answers at once, beyond which a handler's ask fails."""
    max_pending_asks_per_session: int = DEFAULT_MAX_PENDING_PER_SESSION
    """The same bound for the requests of one legacy session, so that one session cannot take
    every slot and fail the other sessions' asks."""

    def __post_init__(self) -> None:
        if self.max_body_bytes < 0:
            raise ValueError(f"max_body_bytes must not be negative, not {self.max_body_bytes}")
        for name in ("keepalive_s", "body_timeout_s", "head_timeout_s", "idle_timeout_s"):
            value = getattr(self, name)
            if not value > 0:  # also refuses NaN
                raise ValueError(f"{name} must be a positive number, not {value}")
        for name in ("head_timeout_s", "idle_timeout_s"):  # event-loop timers: finite
            if math.isinf(getattr(self, name)):
                raise ValueError(f"{name} must be finite")
        if self.max_connections_per_ip < 0:
            raise ValueError("max_connections_per_ip must not be negative, not "
                             f"{self.max_connections_per_ip}")
        for name in ("max_connections", "backlog"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
