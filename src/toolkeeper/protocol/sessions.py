"""Legacy-era sessions: the ``initialize`` lifecycle of one client (SPEC 3.1 gate 4).

On HTTP each session has an ``Mcp-Session-Id`` and lives in a :class:`SessionTable` (least
recently used sessions are evicted, never new ones refused); on a stream transport the
connection is the session. Pure state: the clock and the id source are injected.
"""

from __future__ import annotations

import enum
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LegacySession", "Phase", "SessionOwner", "SessionTable"]

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


class SessionTable:
    """Live HTTP sessions, least recently used first, bounded in number, in size and in idle
    time.

    The policy:

    * every :meth:`get` of a live session moves it to the back of the order, so the front is
      always the session that has gone longest without a request;
    * a session unused for longer than ``idle_timeout_s`` is gone (its id answers 404);
    * :meth:`admit` first drops the expired sessions at the front, stopping at the first live
      one, then evicts least recently used sessions while ``max_sessions`` are live or the
      sessions' weights (:attr:`LegacySession.weight`) with the new one's would pass
      ``max_bytes``. A new ``initialize`` is therefore never refused: a flood of anonymous ``initialize``
      requests can only push out idle sessions, not lock clients out. MCP allows this (the
      server may end a session at any time; the evicted client's next request gets 404
      ``-32600`` and it must initialize again).

    Every operation is amortized O(1): each session is dropped at most once, and the order is
    an :class:`~collections.OrderedDict` (a plain dict popped at the front rescans the holes
    it leaves there). Pure state: the clock and the id source are injected.

    Whatever ends a session (:meth:`remove`, expiry, eviction), each of :attr:`ended` is
    called with its id, once, when the table lets it go: what a transport keeps for the
    session (its clients' awaited answers, its replay logs) can go with it.
    """

    def __init__(self, *, max_sessions: int = 10_000, max_bytes: int = 16 * 1024 * 1024,
                 idle_timeout_s: float = 1800.0, clock: Callable[[], float] = time.monotonic,
                 new_id: Callable[[], str] = lambda: uuid.uuid4().hex) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, not {max_bytes}")
        self._sessions: OrderedDict[str, LegacySession] = OrderedDict()
        self._max = max_sessions
        self._max_bytes = max_bytes
        self._bytes = 0
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

    def _drop_first(self) -> None:
        session_id, session = self._sessions.popitem(last=False)
        self._bytes -= session.weight
        self._let_go(session_id)

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

    def admit(self, session: LegacySession) -> None:
        """Give an initialized session an id and keep it at the back, evicting least recently
        used sessions while ``max_sessions`` are live or their weight with this one's would
        pass ``max_bytes``."""
        now = self._clock()
        self._reap(now)
        sessions = self._sessions
        while sessions and (len(sessions) >= self._max
                            or self._bytes + session.weight > self._max_bytes):
            self._drop_first()
        session.id = self._new_id()
        session.last_seen = now
        sessions[session.id] = session
        self._bytes += session.weight

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
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        self._bytes -= session.weight
        self._let_go(session_id)
        return True
