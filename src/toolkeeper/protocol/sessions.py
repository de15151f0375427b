"""Legacy-era sessions: the ``initialize`` lifecycle of one client (SPEC 3.1 gate 4).

On HTTP each session has an ``Mcp-Session-Id`` and lives in a :class:`SessionTable` (least
recently used sessions are evicted, those of the principal past its bounds first, never new
ones refused); on a stream transport the connection is the session. Pure state: the clock
and the id source are injected.
"""

from __future__ import annotations

import enum
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_BYTES_PER_CREDENTIAL",
    "DEFAULT_MAX_BYTES_PER_TENANT",
    "DEFAULT_MAX_PER_CREDENTIAL",
    "DEFAULT_MAX_PER_TENANT",
    "DEFAULT_MAX_SESSIONS",
    "LegacySession",
    "Phase",
    "SessionOwner",
    "SessionTable",
]

DEFAULT_MAX_SESSIONS: Final = 10_000
"""Live legacy sessions kept in all (``[legacy] max_sessions``)."""
DEFAULT_MAX_BYTES: Final = 16 * 1024 * 1024
"""Their weights together (``[legacy] max_session_bytes``)."""
DEFAULT_MAX_PER_CREDENTIAL: Final = 1000
"""Live sessions of one credential (``[legacy] max_sessions_per_credential``)."""
DEFAULT_MAX_BYTES_PER_CREDENTIAL: Final = 2 * 1024 * 1024
"""Their weights together (``[legacy] max_session_bytes_per_credential``)."""
DEFAULT_MAX_PER_TENANT: Final = 2500
"""Live sessions of one tenant, a quarter of the global bound
(``[legacy] max_sessions_per_tenant``)."""
DEFAULT_MAX_BYTES_PER_TENANT: Final = 4 * 1024 * 1024
"""Their weights together, a quarter of the global bound
(``[legacy] max_session_bytes_per_tenant``)."""

SessionOwner = tuple[str, str | None]
"""Who may use a legacy session: the tenant and credential id of the principal that opened it
(the credential None for a principal that names none, such as the anonymous local one)."""


class Phase(enum.Enum):
    """``NEW`` -> ``initialize`` answered -> ``INITIALIZING`` -> ``notifications/initialized``
    -> ``READY``. Only ``READY`` sessions are served anything but ``initialize``."""

    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"


@dataclass(slots=True)
class LegacySession:
    """The negotiated facts of one legacy client."""

    id: str | None = None
    phase: Phase = Phase.NEW
    protocol_version: str = ""
    client_capabilities: Mapping[str, Any] = field(default_factory=dict)
    client_info: Mapping[str, Any] | None = None
    log_level: str | None = None
    last_seen: float = 0.0
    owner: SessionOwner | None = None
    """The tenant and credential id of the principal that initialized the session over HTTP
    (None: not bound, as with no principal resolver); a request of another tenant or with
    another credential does not find it."""
    weight: int = 0
    """The JSON size in bytes of what the session keeps of its client (its capabilities and
    clientInfo, kept as sent): what :class:`SessionTable` counts against ``max_bytes``."""


class _Group:
    """The live sessions of one credential or one tenant, least recently used first, and
    their weights added up."""

    __slots__ = ("bytes", "order")

    def __init__(self) -> None:
        self.order: OrderedDict[str, None] = OrderedDict()
        self.bytes = 0


class SessionTable:
    """Live HTTP sessions, least recently used first, bounded in number, in size and in idle
    time, per credential, per tenant and in all.

    The policy:

    * every :meth:`get` of a live session moves it to the back of the order (its credential's
      and its tenant's orders too), so the front is always the session that has gone longest
      without a request;
    * a session unused for longer than ``idle_timeout_s`` is gone (its id answers 404);
    * :meth:`admit` first drops the expired sessions at the front, stopping at the first live
      one. Then, for a session with an owner (:attr:`LegacySession.owner`), it evicts the
      least recently used sessions *of the same credential* while ``max_per_credential`` of
      them are live or their weights with the new one's would pass
      ``max_bytes_per_credential``, then those *of the same tenant* under
      ``max_per_tenant`` and ``max_bytes_per_tenant``: a principal that opens more sessions
      than its bounds ends its own, never another tenant's. Last, it evicts least recently
      used sessions of anyone while ``max_sessions`` are live or the sessions' weights
      (:attr:`LegacySession.weight`) with the new one's would pass ``max_bytes``: the global
      line, reached only when many principals each stay under their own bounds. A principal
      without a credential (``owner`` ``(tenant, None)``) is bounded by its tenant only; an
      unbound session (no owner) by the global line only. A 0 per-principal bound is none.
      A new ``initialize`` is therefore never refused: a flood of ``initialize`` requests can
      only push out idle sessions, not lock clients out. MCP allows this (the server may end
      a session at any time; the evicted client's next request gets 404 ``-32600`` and it
      must initialize again).

    Every operation is amortized O(1): each session is dropped at most once, and each order
    is an :class:`~collections.OrderedDict` (a plain dict popped at the front rescans the
    holes it leaves there). Pure state: the clock and the id source are injected.

    Whatever ends a session (:meth:`remove`, expiry, eviction), each of :attr:`ended` is
    called with its id, once, when the table lets it go: what a transport keeps for the
    session (its clients' awaited answers, its replay logs) can go with it.
    """

    def __init__(self, *, max_sessions: int = DEFAULT_MAX_SESSIONS,
                 max_bytes: int = DEFAULT_MAX_BYTES,
                 max_per_credential: int = DEFAULT_MAX_PER_CREDENTIAL,
                 max_bytes_per_credential: int = DEFAULT_MAX_BYTES_PER_CREDENTIAL,
                 max_per_tenant: int = DEFAULT_MAX_PER_TENANT,
                 max_bytes_per_tenant: int = DEFAULT_MAX_BYTES_PER_TENANT,
                 idle_timeout_s: float = 1800.0, clock: Callable[[], float] = time.monotonic,
                 new_id: Callable[[], str] = lambda: uuid.uuid4().hex) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        for name, value in (("max_bytes", max_bytes), ("max_per_credential", max_per_credential),
                            ("max_bytes_per_credential", max_bytes_per_credential),
                            ("max_per_tenant", max_per_tenant),
                            ("max_bytes_per_tenant", max_bytes_per_tenant)):
            if value < 0:
                raise ValueError(f"{name} must not be negative, not {value}")
        self._sessions: OrderedDict[str, LegacySession] = OrderedDict()
        self._max = max_sessions
        self._max_bytes = max_bytes
        self._bytes = 0
        self._credential_bounds = (max_per_credential, max_bytes_per_credential)
        self._tenant_bounds = (max_per_tenant, max_bytes_per_tenant)
        self._credentials: dict[SessionOwner, _Group] = {}
        self._tenants: dict[str, _Group] = {}
        self._idle = idle_timeout_s
        self._clock = clock
        self._new_id = new_id
        self.ended: list[Callable[[str], None]] = []
        """Called with the id of each session the table lets go (deleted, expired, evicted)."""

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def weight(self) -> int:
        """The live sessions' weights added up (at most ``max_bytes``, unless one session
        alone weighs more: it is kept until the next admission)."""
        return self._bytes

    def _groups(self, owner: SessionOwner | None) -> tuple[_Group | None, _Group | None]:
        """The credential's and the tenant's groups of a session owned by ``owner`` (None
        where it has none, or where no group exists yet)."""
        if owner is None:
            return None, None
        return (None if owner[1] is None else self._credentials.get(owner),
                self._tenants.get(owner[0]))

    def _discard(self, session_id: str) -> LegacySession | None:
        """Forget a session everywhere (its groups too, an emptied group with it) and let it
        go; None when it was not live."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return None
        self._bytes -= session.weight
        owner = session.owner
        if owner is not None:
            credential, tenant = self._groups(owner)
            if credential is not None:
                credential.order.pop(session_id, None)
                credential.bytes -= session.weight
                if not credential.order:
                    del self._credentials[owner]
            if tenant is not None:
                tenant.order.pop(session_id, None)
                tenant.bytes -= session.weight
                if not tenant.order:
                    del self._tenants[owner[0]]
        self._let_go(session_id)
        return session

    def _drop_first(self) -> None:
        self._discard(next(iter(self._sessions)))

    def _let_go(self, session_id: str) -> None:
        for ended in self.ended:
            ended(session_id)

    def _reap(self, now: float) -> None:
        cutoff = now - self._idle
        sessions = self._sessions
        while sessions:
            first = next(iter(sessions.values()))
            if first.last_seen >= cutoff:
                return  # everything behind it was used later still
            self._drop_first()

    def _bound(self, group: _Group | None, bounds: tuple[int, int], weight: int) -> None:
        """Evict the group's least recently used sessions while it holds its count bound or
        its weight with ``weight`` would pass its byte bound (0: no such bound)."""
        count, size = bounds
        while group is not None and group.order and (
                (count and len(group.order) >= count)
                or (size and group.bytes + weight > size)):
            self._discard(next(iter(group.order)))  # the last one takes the group along

    def admit(self, session: LegacySession) -> None:
        """Give an initialized session an id and keep it at the back, evicting least recently
        used sessions of its own credential, then of its own tenant, past their bounds, and
        then anyone's while ``max_sessions`` are live or their weight with this one's would
        pass ``max_bytes``."""
        now = self._clock()
        self._reap(now)
        weight = session.weight
        owner = session.owner
        if owner is not None:
            self._bound(self._groups(owner)[0], self._credential_bounds, weight)
            self._bound(self._tenants.get(owner[0]), self._tenant_bounds, weight)
        sessions = self._sessions
        while sessions and (len(sessions) >= self._max
                            or self._bytes + weight > self._max_bytes):
            self._drop_first()
        session.id = self._new_id()
        session.last_seen = now
        sessions[session.id] = session
        self._bytes += weight
        if owner is not None:
            if owner[1] is not None:
                group = self._credentials.get(owner)
                if group is None:
                    group = self._credentials[owner] = _Group()
                group.order[session.id] = None
                group.bytes += weight
            group = self._tenants.get(owner[0])
            if group is None:
                group = self._tenants[owner[0]] = _Group()
            group.order[session.id] = None
            group.bytes += weight

    def get(self, session_id: str) -> LegacySession | None:
        """The live session with that id (touching it: it moves to the back), or None when
        unknown, expired or evicted."""
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = self._clock()
        if session.last_seen < now - self._idle:
            self.remove(session_id)
            return None
        session.last_seen = now
        self._sessions.move_to_end(session_id)
        if session.owner is not None:
            for group in self._groups(session.owner):
                if group is not None:
                    group.order.move_to_end(session_id)
        return session

    def remaining(self, session_id: str) -> float | None:
        """The seconds the live session with that id has before it expires unused, without
        touching it; None when unknown, expired (it is then let go) or evicted."""
        session = self._sessions.get(session_id)
        if session is None:
            return None
        left = session.last_seen + self._idle - self._clock()
        if left < 0:
            self.remove(session_id)
            return None
        return left

    def remove(self, session_id: str) -> bool:
        """End a session (HTTP DELETE); False when it was unknown, expired or evicted."""
        return self._discard(session_id) is not None
