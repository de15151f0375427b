"""The health of one upstream: its circuit breaker, the restart backoff of a stdio upstream,
and the counts ``upstream list`` and the metrics show. Pure state driven by a clock: the
connections (:mod:`~toolkeeper.upstreams.connections`) ask :meth:`Health.admit` before each
call and report its end with :meth:`Health.succeeded` or :meth:`Health.failed`.

* **Breaker.** After ``breaker_failures`` consecutive failures (a timeout, a refused or lost
  connection, an answer that is not MCP) the breaker opens: calls are answered
  ``upstream.breaker_open`` at once for ``breaker_cooldown_s``; then it is half-open and one
  call goes through as the probe (a real ``tools/call``): its success closes the breaker, its
  failure opens it again for another cool-down.
* **Restarts** (stdio). A process that dies or cannot start is started again on the first
  call after a backoff (``backoff_initial_s``, doubling to ``backoff_max_s``; reset once a
  process has stayed up ``uptime_reset_s``). More than ``restart_limit`` restarts inside
  ``restart_window_s`` leave the upstream ``failed`` until :meth:`Health.reset` (an operator's
  sync).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "BACKOFF",
    "BREAKER_OPEN",
    "FAILED",
    "Health",
    "Supervision",
]

BREAKER_OPEN: Final = "upstream.breaker_open"
BACKOFF: Final = "upstream.backoff"
FAILED: Final = "upstream.failed"


@dataclass(frozen=True, slots=True)
class Supervision:
    """The bounds of the breaker and of restarts (seconds, counts)."""

    breaker_failures: int = 5
    breaker_cooldown_s: float = 30.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    restart_limit: int = 5
    restart_window_s: float = 60.0
    uptime_reset_s: float = 60.0
    max_legacy_sessions: int = 64
    """Legacy-era sessions kept per upstream (one per caller credential); the least recently
    used is closed beyond."""


@dataclass
class Health:
    """One upstream's breaker, backoff and counts."""

    settings: Supervision
    clock: Callable[[], float]
    calls: int = 0
    failures: int = 0
    consecutive: int = 0
    restarts: int = 0
    last_error: str | None = None
    breaker_until: float | None = None
    probing: bool = False
    backoff_until: float | None = None
    backoff_step: int = 0
    is_failed: bool = False
    up_since: float | None = None
    _recent: deque[float] = field(default_factory=deque)

    def admit(self) -> str | None:
        """None when a call may go to the upstream now, else the stable code of why not
        (``upstream.failed``, ``upstream.breaker_open``, ``upstream.backoff``). A half-open
        breaker admits one probe at a time."""
        if self.is_failed:
            return FAILED
        now = self.clock()
        if self.breaker_until is not None:
            if now < self.breaker_until or self.probing:
                return BREAKER_OPEN
            self.probing = True  # half-open: this call is the probe
        if self.backoff_until is not None and now < self.backoff_until:
            self.probing = False
            return BACKOFF
        return None

    def succeeded(self) -> None:
        self.calls += 1
        self.consecutive = 0
        self.breaker_until = None
        self.probing = False

    def answered(self) -> None:
        """The call got an answer (a result or a JSON-RPC error): the upstream is alive."""
        self.succeeded()

    def failed(self, code: str) -> None:
        """A call ended by ``code`` (a timeout, a lost connection, a bad answer)."""
        self.calls += 1
        self.failures += 1
        self.consecutive += 1
        self.last_error = code
        if self.probing or self.consecutive >= self.settings.breaker_failures:
            self.breaker_until = self.clock() + self.settings.breaker_cooldown_s
        self.probing = False

    def started(self) -> None:
        """A process (or connection) came up."""
        self.up_since = self.clock()

    def died(self) -> None:
        """A stdio process died or could not start: the next start waits out the backoff;
        too many restarts inside the window leave the upstream failed."""
        now = self.clock()
        if self.up_since is not None and now - self.up_since >= self.settings.uptime_reset_s:
            self.backoff_step = 0  # it had stayed up: a fresh start
        self.up_since = None
        self.restarts += 1
        self._recent.append(now)
        while self._recent and now - self._recent[0] > self.settings.restart_window_s:
            self._recent.popleft()
        if len(self._recent) > self.settings.restart_limit:
            self.is_failed = True
        delay = min(self.settings.backoff_initial_s * (2 ** self.backoff_step),
                    self.settings.backoff_max_s)
        self.backoff_step += 1
        self.backoff_until = now + delay

    def reset(self) -> None:
        """An operator's sync: out of ``failed``, the breaker closed, no backoff."""
        self.is_failed = False
        self.breaker_until = None
        self.probing = False
        self.backoff_until = None
        self.backoff_step = 0
        self.consecutive = 0
        self._recent.clear()

    def state(self, connected: bool) -> str:
        """``failed``, ``open-breaker`` (``half-open`` once the cool-down passed), ``backoff``,
        ``connected`` or ``idle``."""
        now = self.clock()
        if self.is_failed:
            return "failed"
        if self.breaker_until is not None:
            return "open-breaker" if now < self.breaker_until else "half-open"
        if self.backoff_until is not None and now < self.backoff_until:
            return "backoff"
        return "connected" if connected else "idle"

    def breaker(self) -> str:
        if self.breaker_until is None:
            return "closed"
        return "open" if self.clock() < self.breaker_until else "half-open"

    def counts(self) -> dict[str, Any]:
        return {"calls": self.calls, "failures": self.failures,
                "consecutiveFailures": self.consecutive, "restarts": self.restarts,
                "lastError": self.last_error}
