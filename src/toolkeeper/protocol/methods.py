"""The method table the kernel dispatches through, and the values a method handler sees.

A handler is a plain function of a :class:`Call`; it returns a result object, or a
:class:`Deferred` when it has async work to do (a tool handler that may stream progress). The
kernel turns a Deferred into a :class:`~toolkeeper.protocol.outcome.Pending` the transport
awaits, so routing and validation stay pure while user code runs on the adapter's loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from toolkeeper.protocol.envelope import RequestId
from toolkeeper.protocol.headers import HeaderView
from toolkeeper.protocol.outcome import Emit, Finish, Outcome
from toolkeeper.protocol.versions import Era

__all__ = [
    "Backchannel",
    "CacheHint",
    "Call",
    "Deferred",
    "Emit",
    "Method",
    "MethodResult",
    "MethodTable",
    "TransportFacts",
]

@runtime_checkable
class Backchannel(Protocol):
    """An :data:`Emit` that can do more, which a transport hands a legacy-era handler where
    it can (a stateful HTTP session's call, a stdio connection)."""

    async def __call__(self, message: dict[str, Any]) -> None:
        """Send a notification (as any Emit)."""

    async def close_stream(self) -> bool:
        """End the response stream now while the request goes on (the client resumes it
        with ``Last-Event-ID``); False where the stream cannot be resumed."""

    async def ask(self, method: str, params: Mapping[str, Any], *, key: str | None = None
                  ) -> Mapping[str, Any]:
        """Send the client the request ``method`` with ``params`` on this call's stream and
        return its result (``key`` is ignored: JSON-RPC ids name legacy requests); raises
        :class:`~toolkeeper.errors.AskError` when no result comes."""


# TransportFacts and Call are built for every request: immutable msgspec Structs (like frozen
# dataclasses, but built about ten times faster).


class TransportFacts(msgspec.Struct, frozen=True):
    """What the transport knows about a message besides its body: the input of principal
    resolution and of the header rungs."""

    transport: str
    headers: HeaderView = msgspec.field(default_factory=HeaderView)
    peer: str | None = None
    received_ns: int = 0
    """``time.perf_counter_ns()`` when the transport had the whole request (0: not known). A
    registry check begun after it is as current as the request can tell apart."""


class Call(msgspec.Struct, frozen=True):
    """One request that passed its era's ladder, as a method handler sees it."""

    request_id: RequestId
    method: str
    params: Mapping[str, Any]
    era: Era
    protocol_version: str
    client_capabilities: Mapping[str, Any]
    client_info: Mapping[str, Any] | None
    log_level: str | None
    progress_token: str | int | None
    facts: TransportFacts
    principal: Any = None


class Deferred(msgspec.Struct, frozen=True):
    """Async work a handler hands back: ``run(emit)`` returns the result object. ``stream``: the
    response is a notification stream (``subscriptions/listen``): always SSE on HTTP, even in
    JSON mode, so the client must accept ``text/event-stream``; on stdio it is cancelled at end
    of input instead of awaited. (An immutable msgspec Struct: one is built per tool call,
    about five times faster than a frozen dataclass.)"""

    run: Callable[[Emit], Awaitable[dict[str, Any]]]
    stream: bool = False


MethodResult = dict[str, Any] | Deferred


@dataclass(frozen=True, slots=True)
class CacheHint:
    """``ttlMs``/``cacheScope`` stamped on a cacheable modern result (mcp-wire 7.6)."""

    ttl_ms: int = 0
    scope: Literal["public", "private"] = "private"


@dataclass(frozen=True, slots=True)
class Method:
    """A row of the method table."""

    name: str
    handler: Callable[[Call], MethodResult]
    eras: frozenset[Era] = frozenset(Era)
    cache: CacheHint | None = None
    header_schema: Callable[[Call], dict[str, Any] | None] | None = None
    """For methods with ``x-mcp-header`` arguments (``tools/call``): the input schema whose
    annotations the ``Mcp-Param-*`` headers are checked against, or None to skip."""
    express: Callable[[Call, Finish], Outcome | None] | None = None
    """The method's express lane (HTTP, either era): given a call that passed the ladder up to
    the ``Mcp-Param-*`` rung (modern) or the gates up to dispatch in a live session (legacy),
    the whole answer for the common case, its result finished with the kernel's ``Finish`` of
    the call's era (handed over: a dict of its own, with a ``_meta`` dict of its own in the
    modern era, which the kernel stamps in place); or None, before anything is dispatched or
    logged, to take the ordinary path (modern: rung 15, then ``handler``; legacy: ``handler``)
    with the same call. It must answer exactly as that path would; an exception it raises is
    answered as the ordinary path answers one."""


class MethodTable:
    """Method name -> :class:`Method`, looked up per era (a method outside an era's surface is
    -32601 in that era)."""

    def __init__(self, methods: Iterable[Method] = ()) -> None:
        self._methods: dict[str, Method] = {}
        self._express: dict[str, Method] = {}
        for method in methods:
            self.add(method)

    def add(self, method: Method) -> None:
        if method.name in self._methods:
            raise ValueError(f"method {method.name!r} is already in the table")
        self._methods[method.name] = method
        if method.express is not None and Era.MODERN in method.eras:
            self._express[method.name] = method

    def lookup(self, name: str, era: Era) -> Method | None:
        method = self._methods.get(name)
        return method if method is not None and era in method.eras else None

    def express(self, name: str) -> Method | None:
        """The method ``name`` when it has an express lane (and serves the modern era; the
        legacy lane checks the method serves that era too)."""
        return self._express.get(name)

    def names(self, era: Era) -> list[str]:
        return sorted(n for n, m in self._methods.items() if era in m.eras)
