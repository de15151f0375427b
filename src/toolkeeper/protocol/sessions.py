"""Legacy-era sessions: the ``initialize`` lifecycle of one client (SPEC 3.1 gate 4).

On HTTP each session has an ``Mcp-Session-Id``; on a stream transport the connection is the
session. Pure state: the clock and the id source are injected.
"""

from __future__ import annotations

import enum
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LegacySession", "Phase", "SessionTable"]


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


class SessionTable:
    """Live HTTP sessions, bounded in number and idle time."""

    def __init__(self, *, max_sessions: int = 10_000, idle_timeout_s: float = 1800.0,
                 clock: Callable[[], float] = time.monotonic,
                 new_id: Callable[[], str] = lambda: uuid.uuid4().hex) -> None:
        self._sessions: dict[str, LegacySession] = {}
        self._max = max_sessions
        self._idle = idle_timeout_s
        self._clock = clock
        self._new_id = new_id

    def __len__(self) -> int:
        return len(self._sessions)

    def _reap(self) -> None:
        cutoff = self._clock() - self._idle
        for sid in [s for s, v in self._sessions.items() if v.last_seen < cutoff]:
            del self._sessions[sid]

    def admit(self, session: LegacySession) -> bool:
        """Give an initialized session an id and keep it; False when the table is full."""
        self._reap()
        if len(self._sessions) >= self._max:
            return False
        session.id = self._new_id()
        session.last_seen = self._clock()
        self._sessions[session.id] = session
        return True

    def get(self, session_id: str) -> LegacySession | None:
        """The live session with that id (touching it), or None when unknown or expired."""
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = self._clock()
        if session.last_seen < now - self._idle:
            del self._sessions[session_id]
            return None
        session.last_seen = now
        return session

    def remove(self, session_id: str) -> bool:
        return self._sessions.pop(session_id, None) is not None
