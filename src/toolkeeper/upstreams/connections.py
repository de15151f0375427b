"""Connections to upstream MCP servers: one :class:`~toolkeeper.client.ClientSession` per
upstream (per caller credential in the legacy era), opened on first use, supervised.

* **Opening.** A Streamable HTTP upstream is connected with :func:`toolkeeper.client.connect`
  in its configured era (``auto`` allows the legacy fallback: a configured upstream is an
  explicitly configured endpoint); a stdio upstream's command is started as a subprocess. The
  credential comes from the upstream's ``token_file`` (``Authorization: Bearer``) or
  ``header_file`` (``Name: value`` lines), read at each connect; the caller's own credential
  never reaches an upstream (nothing of the caller's request is sent but the tool's name, its
  arguments and the non-reserved ``_meta`` keys).
* **Sharing.** A modern-era session carries no state between requests and is shared by every
  caller. A legacy-era session (HTTP ``Mcp-Session-Id``, or a stdio process) is never shared
  by two principals: it is keyed by the caller's tenant and credential, at most
  ``max_legacy_sessions`` per upstream (the least recently used is closed beyond). An upstream
  of era ``auto`` is keyed per principal until its first session shows its era.
* **Faults.** Every call is bounded by the upstream's ``call_timeout_s`` (opening included). A
  fault is :class:`UpstreamFault` with a stable code: ``upstream.timeout``,
  ``upstream.unavailable`` (refused, lost, 503, or a stdio process that died),
  ``upstream.unauthorized`` (the upstream refused the gateway's credential),
  ``upstream.protocol_error`` (an answer that is not MCP), or the supervisor's refusals
  (:mod:`~toolkeeper.upstreams.supervision`). A session a fault may have broken is closed, so
  the next call opens a new one.

:meth:`UpstreamConnections.aclose` stops everything it started (stdio processes by pid).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from toolkeeper.client import ClientSession, ClientTimeouts, EraChoice, Target, connect
from toolkeeper.client.session import CallReply
from toolkeeper.client.target import TargetKind
from toolkeeper.client.transport import ServerRequestHandler
from toolkeeper.errors import (
    ClientAuthenticationError,
    ClientConnectionError,
    ClientError,
    ClientTimeoutError,
    ConfigError,
    EraSelectionError,
    ToolkeeperError,
)
from toolkeeper.protocol.versions import Era
from toolkeeper.upstreams.asking import UPSTREAM_CAPABILITIES
from toolkeeper.upstreams.credentials import (
    HeadedTarget,
    log_stderr,
    stdio_environment,
    upstream_headers,
)
from toolkeeper.upstreams.model import UpstreamDefinition
from toolkeeper.upstreams.supervision import Health, Supervision

__all__ = [
    "PROTOCOL_ERROR",
    "TIMEOUT",
    "UNAUTHORIZED",
    "UNAVAILABLE",
    "UpstreamConnections",
    "UpstreamFault",
    "open_session",
]

_log = logging.getLogger(__name__)

TIMEOUT: Final = "upstream.timeout"
UNAVAILABLE: Final = "upstream.unavailable"
UNAUTHORIZED: Final = "upstream.unauthorized"
PROTOCOL_ERROR: Final = "upstream.protocol_error"
_PROBE_S: Final = 10.0
_CLOSE_S: Final = 2.0


class UpstreamFault(ToolkeeperError):
    """A forwarded call that got no answer from its upstream: ``code`` says why (stable),
    ``data.upstream`` names it."""

    default_code = UNAVAILABLE


_SharedKey = tuple[str, tuple[str, str | None] | None]
"""(upstream, None) for a shared modern session; (upstream, (tenant, credential)) else."""


def timeouts_for(defn: UpstreamDefinition) -> ClientTimeouts:
    """The client's bounds for an upstream: every request within its ``call_timeout_s``."""
    probe = min(_PROBE_S, defn.call_timeout_s)
    return ClientTimeouts(probe_s=probe, request_s=defn.call_timeout_s, connect_s=probe,
                          close_s=_CLOSE_S)


def target_for(defn: UpstreamDefinition) -> Target:
    """Where the upstream runs: its URL with its credential headers, or its stdio command with
    the scrubbed environment of :func:`~toolkeeper.upstreams.credentials.stdio_environment`."""
    if defn.command is not None:
        return Target.from_stdio(defn.command, env=stdio_environment(),
                                 stderr=partial(log_stderr, defn.name))
    assert defn.url is not None
    target = Target.from_url(defn.url)
    headers = upstream_headers(defn)
    return HeadedTarget(TargetKind.HTTP, url=target.url, headers=tuple(headers.items()))


async def open_session(defn: UpstreamDefinition) -> ClientSession:
    """A new session with the upstream (era as configured, the legacy fallback allowed, its
    own credential, :data:`~toolkeeper.upstreams.asking.UPSTREAM_CAPABILITIES` declared in
    the legacy era): for callers outside the forwarding path too, such as an import."""
    era: EraChoice = "modern" if defn.era == "modern" else (
        "legacy" if defn.era == "legacy" else "auto")
    return await connect(target_for(defn), era=era, legacy_allowed=True,
                         timeouts=timeouts_for(defn), capabilities=UPSTREAM_CAPABILITIES)


def _marks(health: Health) -> tuple[bool, bool, bool, int]:
    return (health.consecutive > 0, health.breaker_until is not None, health.is_failed,
            health.restarts)


def _log_change(name: str, was: tuple[bool, bool, bool, int], health: Health) -> None:
    """One log line per change of an upstream's health, never one per refused call: its first
    failure, a death of its process, the breaker opening, the failed state, the recovery."""
    failing, breaker, failed, restarts = was
    code = health.last_error
    if health.is_failed and not failed:
        _log.error("upstream %s: failed after %d restarts; stopped until an operator runs "
                   "`toolkeeper upstream sync %s` (%s)", name, health.restarts, name, code,
                   extra={"upstream_event": "failed"})
    elif health.restarts > restarts:
        _log.warning("upstream %s: its process ended (%s); it is started again after a backoff",
                     name, code, extra={"upstream_event": "died"})
    if health.breaker_until is not None and not breaker:
        _log.warning("upstream %s: circuit breaker open for %g s after %d consecutive failures "
                     "(%s)", name, health.settings.breaker_cooldown_s, health.consecutive, code,
                     extra={"upstream_event": "breaker_open"})
    elif health.consecutive and not failing:
        _log.warning("upstream %s: a call failed (%s)", name, code,
                     extra={"upstream_event": "failing"})
    if failing and not health.consecutive:
        _log.info("upstream %s: answering again", name, extra={"upstream_event": "recovered"})


def _fault_code(exc: BaseException) -> str:
    if isinstance(exc, (TimeoutError, ClientTimeoutError)):
        return TIMEOUT
    if isinstance(exc, ClientAuthenticationError):
        return UNAUTHORIZED
    if isinstance(exc, (ClientConnectionError, EraSelectionError)):
        return UNAVAILABLE
    if isinstance(exc, ClientError) and exc.code == "client.unavailable":
        return UNAVAILABLE
    return PROTOCOL_ERROR


_REASONS: Final = {
    TIMEOUT: "did not answer within {timeout:g} s",
    UNAVAILABLE: "is unavailable (refused, lost or not running)",
    UNAUTHORIZED: "refused the gateway's credential",
    PROTOCOL_ERROR: "answered with something that is not a valid MCP response",
    "upstream.breaker_open": "is failing; its circuit breaker is open",
    "upstream.backoff": "is restarting (backoff)",
    "upstream.failed": "kept failing to start and is stopped until an operator syncs it",
    "upstream.unknown": "is not configured",
    "upstream.credential_unreadable": "has a credential file that cannot be read",
    "upstream.credential_invalid": "has a credential file that cannot be sent",
}


def fault(defn_name: str, code: str, timeout_s: float = 0.0) -> UpstreamFault:
    reason = _REASONS.get(code, "failed").format(timeout=timeout_s)
    return UpstreamFault(f"upstream {defn_name!r} {reason}", code=code,
                         data={"upstream": defn_name})


@dataclass
class _Upstream:
    """One upstream's sessions and health."""

    health: Health
    era: Era | None = None
    shared: ClientSession | None = None
    legacy: OrderedDict[tuple[str, str | None], ClientSession] = field(
        default_factory=OrderedDict)
    opening: dict[_SharedKey, asyncio.Task[ClientSession]] = field(default_factory=dict)

    def sessions(self) -> list[ClientSession]:
        return [*([self.shared] if self.shared is not None else []), *self.legacy.values()]


class UpstreamConnections:
    """The sessions to every upstream of ``definitions`` (read at each call, so an upstream
    added or changed later is used as it stands), supervised by ``supervision``'s bounds on
    ``clock`` (seconds; ``time.monotonic`` by default)."""

    def __init__(self, definitions: Mapping[str, UpstreamDefinition], *,
                 supervision: Supervision | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[str], None] | None = None) -> None:
        self._definitions = definitions
        self._on_change = on_change
        self._settings = supervision if supervision is not None else Supervision()
        self._clock = clock
        self._upstreams: dict[str, _Upstream] = {}
        self._ids = itertools.count(1)
        self._closing: set[asyncio.Task[None]] = set()

    def _state(self, name: str) -> _Upstream:
        state = self._upstreams.get(name)
        if state is None:
            state = self._upstreams[name] = _Upstream(Health(self._settings, self._clock))
        return state

    async def call(self, name: str, principal: Any, tool: str, arguments: Mapping[str, Any],
                   *, meta: Mapping[str, Any] | None = None,
                   on_notification: Callable[[Any], None] | None = None,
                   on_request: ServerRequestHandler | None = None,
                   capabilities: Mapping[str, Any] | None = None,
                   retry: Mapping[str, Any] | None = None) -> CallReply:
        """``tools/call`` of ``tool`` on upstream ``name`` for ``principal``: the upstream's
        answer (a result, or a JSON-RPC error as a value), or :class:`UpstreamFault`.
        ``on_notification`` hears the upstream's notifications during the call, ``on_request``
        answers its requests (:mod:`~toolkeeper.upstreams.asking`); ``capabilities`` and
        ``retry`` are a modern request's (:meth:`~toolkeeper.client.ClientSession.call_tool`).
        A call
        abandoned (cancelled by the caller, or past its timeout) is cancelled upstream too
        (``notifications/cancelled`` where the era has it; modern HTTP: its stream closed)."""
        defn = self._definitions.get(name)
        if defn is None:
            raise fault(name, "upstream.unknown")
        state = self._state(name)
        if self._on_change is not None and state.health.is_failed:
            self._on_change(name)  # an operator's reset may have come: it is checked now
        was = _marks(state.health)
        try:
            return await self._call(defn, state, principal, tool, arguments, meta=meta,
                                    on_notification=on_notification, on_request=on_request,
                                    capabilities=capabilities, retry=retry)
        finally:
            _log_change(name, was, state.health)
            if self._on_change is not None:
                self._on_change(name)

    async def _call(self, defn: UpstreamDefinition, state: _Upstream, principal: Any, tool: str,
                    arguments: Mapping[str, Any], *, meta: Mapping[str, Any] | None,
                    on_notification: Callable[[Any], None] | None,
                    on_request: ServerRequestHandler | None,
                    capabilities: Mapping[str, Any] | None,
                    retry: Mapping[str, Any] | None) -> CallReply:
        name = defn.name
        refused = state.health.admit()
        if refused is not None:
            raise fault(name, refused)
        key = _key(name, principal, state.era, defn)
        session: ClientSession | None = None
        try:
            async with asyncio.timeout(defn.call_timeout_s):
                session = await self._session(defn, state, key)
                request_id = f"tk-{next(self._ids)}"
                try:
                    reply = await session.call_tool(tool, arguments, meta=meta,
                                                    request_id=request_id,
                                                    on_notification=on_notification,
                                                    on_request=on_request,
                                                    capabilities=capabilities, retry=retry)
                except asyncio.CancelledError:
                    self._later(session.cancel(request_id, "abandoned by the gateway"))
                    raise
        except ConfigError as exc:  # its credential file: no call was sent
            state.health.failed(exc.code)
            raise fault(name, exc.code) from None
        except (TimeoutError, ClientError) as exc:
            code = _fault_code(exc)
            state.health.failed(code)
            if code != TIMEOUT:  # the session may be broken: the next call opens another
                self._drop(state, key, session, died=defn.command is not None
                           and code in (UNAVAILABLE, PROTOCOL_ERROR))
            raise fault(name, code, defn.call_timeout_s) from None
        state.health.answered()
        return reply

    async def _session(self, defn: UpstreamDefinition, state: _Upstream, key: _SharedKey
                       ) -> ClientSession:
        found = state.shared if key[1] is None else state.legacy.get(key[1])
        if found is not None:
            if key[1] is not None:
                state.legacy.move_to_end(key[1])
            return found
        task = state.opening.get(key)
        if task is None:
            task = asyncio.ensure_future(self._open(defn, state, key))
            state.opening[key] = task
            task.add_done_callback(lambda done: _opened(state, key, done))
        return await asyncio.shield(task)

    async def _open(self, defn: UpstreamDefinition, state: _Upstream, key: _SharedKey
                    ) -> ClientSession:
        session = await open_session(defn)
        state.health.started()
        state.era = session.era
        if session.era is Era.MODERN:  # no state between requests: one session for all
            if state.shared is not None:  # another principal's first call got there first
                self._close_later(session)
                return state.shared
            state.shared = session
            return session
        ident = key[1]
        if ident is None:  # configured modern, answered legacy: connect never does this
            self._close_later(session)
            raise fault(defn.name, PROTOCOL_ERROR)
        state.legacy[ident] = session
        while len(state.legacy) > self._settings.max_legacy_sessions:
            _, oldest = state.legacy.popitem(last=False)
            self._close_later(oldest)
        return session

    def _drop(self, state: _Upstream, key: _SharedKey, session: ClientSession | None,
              *, died: bool) -> None:
        """Forget the session of ``key`` (closed in the background); a stdio one counts as
        a death for the restart backoff."""
        current = state.shared if key[1] is None else state.legacy.get(key[1])
        if current is not None and (session is None or current is session):
            if key[1] is None:
                state.shared = None
            else:
                del state.legacy[key[1]]
            self._close_later(current)
        if died:
            state.health.died()

    def _close_later(self, session: ClientSession) -> None:
        self._later(_quietly_close(session))

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the background, awaited by :meth:`aclose`."""
        task = asyncio.ensure_future(work)
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def reset(self, name: str) -> None:
        """An operator's sync of ``name``: out of ``failed``, breaker closed, no backoff."""
        self._state(name).health.reset()
        if self._on_change is not None:
            self._on_change(name)

    def status_of(self, name: str) -> dict[str, Any]:
        """:meth:`status` of the upstream ``name`` alone."""
        defn = self._definitions.get(name)
        state = self._state(name)
        sessions = state.sessions()
        era = state.era.value if state.era is not None else (
            defn.era if defn is not None else "auto")
        return {
            "name": name, "transport": defn.transport if defn is not None else "unknown",
            "era": era, "state": state.health.state(bool(sessions)),
            "breaker": state.health.breaker(), "sessions": len(sessions),
            "pids": sorted(pid for s in sessions if (pid := _pid(s)) is not None),
            **state.health.counts()}

    def status(self) -> list[dict[str, Any]]:
        """Each configured upstream's state, in name order: ``state`` (``connected``,
        ``idle``, ``backoff``, ``failed``, ``open-breaker``, ``half-open``), ``breaker``,
        ``era`` (seen, else configured), ``sessions``, ``pids`` (stdio) and the counts."""
        return [self.status_of(name)
                for name in sorted(set(self._definitions) | set(self._upstreams))]

    async def aclose(self) -> None:
        """Close every session (stdio processes stopped by pid) and forget them."""
        for state in self._upstreams.values():
            for task in list(state.opening.values()):
                task.cancel()
            sessions = state.sessions()
            state.shared = None
            state.legacy.clear()
            for session in sessions:
                await _quietly_close(session)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    def kill(self) -> None:
        """Stop every stdio process by pid now (SIGKILL), from any thread: the last resort
        when the event loop that opened them is gone."""
        for state in self._upstreams.values():
            for session in state.sessions():
                pid = _pid(session)
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)


def _key(name: str, principal: Any, era: Era | None, defn: UpstreamDefinition
         ) -> _SharedKey:
    """Shared once the upstream is known modern (or configured so); per principal else."""
    if era is Era.MODERN or (era is None and defn.era == "modern"):
        return (name, None)
    return (name, (str(getattr(principal, "tenant", "")), getattr(principal, "credential", None)))


def _opened(state: _Upstream, key: _SharedKey, task: asyncio.Task[ClientSession]) -> None:
    """An opening ended: forget it; its failure is its waiters' (retrieved here, so one whose
    every waiter timed out is not reported as never retrieved)."""
    if state.opening.get(key) is task:
        del state.opening[key]
    if not task.cancelled():
        task.exception()


def _pid(session: ClientSession) -> int | None:
    pid = getattr(session.transport, "pid", None)
    return pid if isinstance(pid, int) else None


async def _quietly_close(session: ClientSession) -> None:
    with contextlib.suppress(Exception):
        await session.aclose()
