"""Limits: per-principal rate (token bucket) and concurrency on ``tools/call``, the same rate
on legacy HTTP ``initialize``, and per-tool call timeouts.

How A wires me: build :class:`LimitsSettings` from the ``[limits]`` table (``tenants`` from
``[limits.tenants.<t>]`` as :class:`TenantLimits`, ``tools`` from ``[limits.tools."<name>"]``
as :class:`ToolLimits`; field names are the TOML keys), call :func:`build_limits` and pass the
result to ``build_gateway(..., limits=...)``. It is None when every limit is 0: the gateway
then installs nothing, so an unlimited (or anonymous) deployment pays nothing per call.

Rate and concurrency are checked before a ``tools/call`` is dispatched (every call is
counted once, whatever its tool or outcome), per principal key: the principal's credential
(``Principal.credential``: an API key id or ``iss#sub``) when it has one, else its tenant, so
two keys of one tenant have a bucket each while every anonymous caller of a tenant shares
one. A tenant's override replaces the defaults for each of its principals. A legacy HTTP
``initialize`` (one that would open a session) takes a token of the same bucket
(:meth:`Admission.take`; the kernel's ``admit_initialize``), so a principal cannot open
sessions faster than it may call; concurrency does not apply to it. A refusal is the
JSON-RPC error :data:`~toolkeeper.protocol.codes.RATE_LIMITED` (``data.retryAfterS``,
``data.limit``): HTTP 429 with ``Retry-After`` in the modern era, 200 with ``Retry-After`` in a
legacy session (see the code's docstring for why). Buckets live in this process: N replicas
allow up to N times the rate (README, "Running N replicas").

A call timeout bounds an ``async`` handler (or the awaitable a handler returns): past it the
handler is cancelled (``CancelledError`` at its pending ``await``) and the call is answered
with :func:`timed_out_result`, its ``_meta`` marked with :data:`TIMEOUT_META_KEY`, and
logged ``timeout`` (:mod:`~toolkeeper.server.calls` does both). A plain synchronous handler runs to its
end on the event loop and cannot be interrupted; no timeout applies to it.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from types import CoroutineType
from typing import Any, Final

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import Call, Deferred, Emit, Finish, Method, MethodResult, Outcome, Pending
from toolkeeper.protocol.faults import rate_limited
from toolkeeper.server.content import ToolResult, text

__all__ = [
    "TIMEOUT_META_KEY",
    "Admission",
    "CallLimits",
    "CallTimeoutError",
    "LimitsSettings",
    "TenantLimits",
    "ToolLimits",
    "bounded",
    "bounded_rest",
    "build_limits",
    "principal_key",
    "timed_out_result",
]

TIMEOUT_META_KEY: Final = "io.toolkeeper/timeout"
"""The ``_meta`` key of a timed-out call's result: ``{"timeoutS": <the limit, seconds>}`` (a
stable marker beside the ``isError`` flag and the result's fixed text)."""

_CONCURRENCY_RETRY_S: Final = 1
"""``retryAfterS`` for a concurrency refusal: when a call ends is not known, so one second."""

_SWEEP_AT: Final = 10_000
"""Principal keys kept before idle ones (bucket full again, nothing in flight) are dropped."""


def _check(name: str, value: float, *, whole: bool = False) -> None:
    if whole and (type(value) is not int or value < 0):
        raise ValueError(f"{name} must be a whole number, 0 or more, not {value!r}")
    if not (isinstance(value, int | float) and 0 <= value < math.inf):  # refuses NaN too
        raise ValueError(f"{name} must be a finite number, 0 or more, not {value!r}")


@dataclass(frozen=True, slots=True)
class TenantLimits:
    """``[limits.tenants.<tenant>]``: each field set replaces the default (None keeps it)."""

    rate_per_s: float | None = None
    burst: int | None = None
    concurrency: int | None = None

    def __post_init__(self) -> None:
        for name in ("rate_per_s", "burst", "concurrency"):
            value = getattr(self, name)
            if value is not None:
                _check(name, value, whole=name != "rate_per_s")


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """``[limits.tools."<name>"]``: ``call_timeout_s`` for that tool (0: none; None keeps the
    default)."""

    call_timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.call_timeout_s is not None:
            _check("call_timeout_s", self.call_timeout_s)


@dataclass(frozen=True, slots=True)
class LimitsSettings:
    """``[limits]``. ``rate_per_s``: calls per second per principal (0: unlimited); ``burst``:
    the bucket's size (0: ``max(1, ceil(rate_per_s))``); ``concurrency``: calls in flight per
    principal (0: unlimited); ``call_timeout_s``: per call (0: none)."""

    rate_per_s: float = 0.0
    burst: int = 0
    concurrency: int = 0
    call_timeout_s: float = 0.0
    tenants: Mapping[str, TenantLimits] = field(default_factory=dict)
    tools: Mapping[str, ToolLimits] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check("rate_per_s", self.rate_per_s)
        _check("burst", self.burst, whole=True)
        _check("concurrency", self.concurrency, whole=True)
        _check("call_timeout_s", self.call_timeout_s)


@dataclass(frozen=True, slots=True)
class _Rule:
    """The limits that apply to one principal key (rate 0 / concurrency 0: unlimited)."""

    rate_per_s: float
    burst: float
    concurrency: int


def _rule(rate: float, burst: int, concurrency: int) -> _Rule:
    return _Rule(rate, float(burst or max(1, math.ceil(rate))), concurrency)


class _State:
    """One principal key's bucket and in-flight count."""

    __slots__ = ("in_flight", "rule", "stamp", "tokens")

    def __init__(self, rule: _Rule, now: float) -> None:
        self.rule = rule
        self.tokens = rule.burst
        self.stamp = now
        self.in_flight = 0

    def refill(self, now: float) -> None:
        rule = self.rule
        self.tokens = min(rule.burst, self.tokens + (now - self.stamp) * rule.rate_per_s)
        self.stamp = now

    def idle(self) -> bool:
        return self.in_flight == 0 and self.tokens >= self.rule.burst


def principal_key(principal: Any) -> tuple[str | None, str | None]:
    """The key a principal is limited by: (tenant, credential), the credential None for a
    principal without one (every such principal of a tenant shares the key)."""
    tenant = getattr(principal, "tenant", None)
    credential = getattr(principal, "credential", None)
    return (tenant if isinstance(tenant, str) else None,
            credential if isinstance(credential, str) else None)


class Admission:
    """Per-principal rate and concurrency (thread-safe; the clock is injected).

    :meth:`enter` admits a call or raises the RATE_LIMITED error; every admitted call is
    :meth:`leave`-d exactly once when it ends. :meth:`wrap` puts both around a method."""

    def __init__(self, settings: LimitsSettings, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self._default = _rule(settings.rate_per_s, settings.burst, settings.concurrency)
        self._tenants = {
            tenant: _rule(
                settings.rate_per_s if over.rate_per_s is None else over.rate_per_s,
                settings.burst if over.burst is None else over.burst,
                settings.concurrency if over.concurrency is None else over.concurrency)
            for tenant, over in settings.tenants.items()}
        self._clock = clock
        self._states: dict[tuple[str | None, str | None], _State] = {}
        self._sweep_at = _SWEEP_AT
        self._last: tuple[Any, _State] | None = None
        """The principal admitted last and its state: the same object again (a cached
        credential's, the local principal) skips reading its key. Cleared by a sweep, so a
        state dropped from the table is never used again."""
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Whether any principal has a limit (else :meth:`enter` never refuses)."""
        return any(r.rate_per_s or r.concurrency for r in (self._default, *self._tenants.values()))

    def take(self, principal: Any) -> None:
        """Count one legacy ``initialize`` of ``principal`` against its rate (a token of the
        same bucket its calls take), or raise RATE_LIMITED when the bucket is empty. Nothing
        stays in flight, so concurrency does not apply."""
        key = principal_key(principal)
        with self._lock:
            now = self._clock()
            state = self._state(key, now)
            if state.rule.rate_per_s:
                self._spend(state, now)

    def _state(self, key: tuple[str | None, str | None], now: float) -> _State:
        state = self._states.get(key)
        if state is None:
            if len(self._states) >= self._sweep_at:
                self._sweep(now)
            state = self._states[key] = _State(
                self._tenants.get(key[0], self._default) if key[0] is not None
                else self._default, now)
        return state

    @staticmethod
    def _spend(state: _State, now: float) -> None:
        """Take a token of the state's bucket, or raise RATE_LIMITED (taking none)."""
        rule = state.rule
        state.refill(now)
        if state.tokens < 1.0:
            wait = (1.0 - state.tokens) / rule.rate_per_s
            raise rate_limited(max(1, math.ceil(wait - 1e-9)), "rate")
        state.tokens -= 1.0

    def enter(self, principal: Any) -> _State:
        """Admit one call of ``principal`` (its slot, for :meth:`leave`), or raise
        RATE_LIMITED: ``concurrency`` calls already in flight, or an empty bucket (the
        refusal takes no token: ``retryAfterS`` is when one will be there)."""
        with self._lock:
            now = self._clock()
            # (inlined rather than through _state and _spend: this runs once per call)
            last = self._last
            if last is not None and last[0] is principal:  # a resolver's cached principal
                state = last[1]
            else:
                state = self._state(principal_key(principal), now)
                self._last = (principal, state)
            rule = state.rule
            if rule.concurrency and state.in_flight >= rule.concurrency:
                raise rate_limited(_CONCURRENCY_RETRY_S, "concurrency")
            rate = rule.rate_per_s
            if rate:
                tokens = state.tokens + (now - state.stamp) * rate
                if tokens > rule.burst:
                    tokens = rule.burst
                state.stamp = now
                if tokens < 1.0:
                    state.tokens = tokens
                    raise rate_limited(max(1, math.ceil((1.0 - tokens) / rate - 1e-9)), "rate")
                state.tokens = tokens - 1.0
            state.in_flight += 1
            return state

    def leave(self, state: _State) -> None:
        with self._lock:
            state.in_flight -= 1

    def _sweep(self, now: float) -> None:
        """Drop idle keys (a fresh state is the same as theirs); keep at most twice as many
        as remain before sweeping again (amortized O(1) per call)."""
        self._last = None
        for key, state in list(self._states.items()):
            state.refill(now)
            if state.idle():
                del self._states[key]
        self._sweep_at = max(_SWEEP_AT, 2 * len(self._states))

    def wrap(self, method: Method,
             refused: Callable[[Call, JsonRpcError], None] | None = None, *,
             express: bool = True) -> Method:
        """``method`` with every call admitted first and left when it ends: its handler's
        (after the result, or the Deferred's completion), and its express lane's Pending (a
        call the lane declines is admitted on the ordinary path instead, so once). A call
        the admission refuses is told to ``refused`` (the refusal log) before the error
        propagates; an admitted one costs nothing more (a ``try`` is free until it raises).
        ``express=False`` leaves the express lane as it is, for a lane that admits the
        Pendings it makes itself (``tools/call``'s: one coroutine less per call)."""
        handler = method.handler
        express_lane = method.express if express else None

        def limited(call: Call) -> MethodResult:
            try:
                state = self.enter(call.principal)
            except JsonRpcError as exc:
                if refused is not None:
                    refused(call, exc)
                raise
            try:
                result = handler(call)
            except BaseException:
                self.leave(state)
                raise
            if isinstance(result, Deferred):
                return Deferred(partial(self._held, result.run, state), result.stream)
            self.leave(state)
            return result

        def limited_express(call: Call, finish: Finish) -> Outcome | None:
            assert express_lane is not None
            outcome = express_lane(call, finish)
            if outcome is None:
                return None
            try:
                state = self.enter(call.principal)  # a refusal: the kernel answers it
            except JsonRpcError as exc:
                if refused is not None:
                    refused(call, exc)
                raise
            if isinstance(outcome, Pending):
                return Pending(outcome.request_id, partial(self._held, outcome.run, state),
                               outcome.headers, outcome.stream)
            self.leave(state)
            return outcome

        return replace(method, handler=limited,
                       express=method.express if express_lane is None else limited_express)

    async def _held(self, run: Callable[[Emit], Awaitable[Any]], state: _State,
                    emit: Emit) -> Any:
        try:
            return await run(emit)
        finally:
            self.leave(state)


class CallTimeoutError(Exception):
    """A handler ran past its call timeout and was cancelled: a signal inside the gateway (as
    :mod:`~toolkeeper.server.calls`' invalid-output one), turned into a result there and never
    raised to a caller, hence not in :mod:`toolkeeper.errors`' tree."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(timeout_s)
        self.timeout_s = timeout_s


async def bounded(awaitable: Awaitable[Any], timeout_s: float) -> Any:
    """``await awaitable``, cancelled after ``timeout_s`` (then CallTimeoutError; a
    TimeoutError the handler raises itself passes through as its own).

    A coroutine is first run to its first suspension with no timer: one that finishes without
    suspending (an ``async`` handler that awaited nothing pending) had no point at which it
    could be cancelled, so it costs no timer. One that suspends finishes under a timeout at
    the same deadline, counted from before that first step (:func:`bounded_rest`; the tools/call
    express lane takes the first step itself, with no coroutine of this one)."""
    if type(awaitable) is CoroutineType:
        deadline = asyncio.get_running_loop().time() + timeout_s
        try:
            pending = awaitable.send(None)
        except StopIteration as done:
            return done.value
        return await bounded_rest(awaitable, pending, timeout_s, deadline)
    scope = asyncio.timeout(timeout_s)
    try:
        async with scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise CallTimeoutError(timeout_s) from None
        raise


async def bounded_rest(coro: CoroutineType[Any, Any, Any], pending: Any, timeout_s: float,
                       deadline: float) -> Any:
    """The rest of a coroutine that suspended at its first step (``pending``: what it
    yielded), under a timeout at ``deadline`` (the running loop's clock): its value, or
    CallTimeoutError once the deadline passed (a TimeoutError of its own passes through)."""
    scope = asyncio.timeout_at(deadline)
    try:
        async with scope:
            return await _Resumed(coro, pending)
    except TimeoutError:
        if scope.expired():
            raise CallTimeoutError(timeout_s) from None
        raise


class _Resumed:
    """A coroutine suspended at its first ``await`` (``pending``: what it yielded), awaited
    the rest of the way: ``yield from``'s delegation (PEP 380), written out because the first
    step was taken by hand."""

    __slots__ = ("_coro", "_pending")

    def __init__(self, coro: CoroutineType[Any, Any, Any], pending: Any) -> None:
        self._coro = coro
        self._pending = pending

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, pending = self._coro, self._pending
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation thrown in: to the handler
                try:
                    pending = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    pending = coro.send(sent)
                except StopIteration as done:
                    return done.value


def timed_out_result(name: str, timeout_s: float) -> ToolResult:
    """The answer to a timed-out call: ``isError``, one fixed text block
    ``Tool '<name>' timed out after <seconds> s and was cancelled.``"""
    return ToolResult((text(f"Tool {name!r} timed out after {timeout_s:g} s and was "
                            "cancelled."),), is_error=True)


@dataclass(frozen=True, slots=True)
class CallLimits:
    """What :func:`build_limits` gives the gateway: the admission (None: no principal has a
    rate or concurrency limit) and the timeouts (None: no tool has one)."""

    admission: Admission | None
    call_timeout: Callable[[str], float | None] | None


def _timeouts(settings: LimitsSettings) -> Callable[[str], float | None] | None:
    default = settings.call_timeout_s or None
    per_tool = {name: tool.call_timeout_s or None for name, tool in settings.tools.items()
                if tool.call_timeout_s is not None}
    if default is None and not any(per_tool.values()):
        return None

    def call_timeout(name: str) -> float | None:
        return per_tool.get(name, default)
    return call_timeout


def build_limits(settings: LimitsSettings, clock: Callable[[], float] = time.monotonic
                 ) -> CallLimits | None:
    """The gateway's limits from ``[limits]``, or None when nothing is limited."""
    admission = Admission(settings, clock)
    timeouts = _timeouts(settings)
    if not admission.active and timeouts is None:
        return None
    return CallLimits(admission if admission.active else None, timeouts)
