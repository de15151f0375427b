"""One client connection with its era already selected: list tools, call tools, hear changes.

Every answer goes through the era's validator (:func:`toolkeeper.protocol.responses.
validate_response`); one it rejects raises :class:`~toolkeeper.errors.ProtocolViolationError`
with the problems as data. A JSON-RPC error answering ``tools/call`` is a value
(:attr:`CallReply.error`), since callers act on it (a re-list refusal, a -32020); answering
``tools/list`` it raises :class:`~toolkeeper.errors.RequestRefusedError`.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from toolkeeper.client.stdio_transport import StdioTransport
from toolkeeper.client.timeouts import ClientTimeouts
from toolkeeper.client.transport import (
    STREAM_OPEN,
    Exchange,
    ServerRequestHandler,
    Transport,
    find_response,
)
from toolkeeper.contracts.headers import find_invalid_x_mcp_header
from toolkeeper.errors import ClientError, ProtocolViolationError, RequestRefusedError
from toolkeeper.protocol.client_requests import (
    Request,
    initialize_params,
    legacy_headers,
    legacy_notification,
    legacy_request,
    modern_request,
)
from toolkeeper.protocol.codes import INVALID_PARAMS
from toolkeeper.protocol.envelope import RequestId, notification_message
from toolkeeper.protocol.era_selection import EraDecision
from toolkeeper.protocol.meta import SUBSCRIPTION_ID_KEY
from toolkeeper.protocol.responses import (
    check_session_id,
    descriptor_problems,
    descriptor_warnings,
    validate_response,
)
from toolkeeper.protocol.versions import Era

__all__ = ["CallReply", "ClientSession", "ToolListing"]

MAX_PAGES: Final = 100
"""``tools/list`` pages followed at most (the official SDK's bound): a server that hands out
cursors forever cannot keep a client listing."""

_SESSION_GONE: Final = 404
"""The 2025-11-25 transport's answer to a request whose ``Mcp-Session-Id`` the server no longer
knows; only a legacy session has an id, so only it is ever renewed."""

_STREAM_SIGNALS: Final = frozenset({"notifications/tools/list_changed",
                                    "notifications/subscriptions/acknowledged"})
"""The stream messages :meth:`ClientSession.tools_changed` yields on (an acknowledgement
opens a modern listen stream; the legacy era has none)."""


_LISTING_KEYS: Final = frozenset({"tools", "nextCursor", "ttlMs", "cacheScope"})
"""The result fields :class:`ToolListing` holds as its own (or, the cursor, follows)."""


@dataclass(frozen=True)
class ToolListing:
    """Every tool of every page (raw descriptor dicts, in the server's order), and the first
    page's cache hints (modern era; None in the legacy era). A malformed descriptor (no
    non-empty name, a name already listed, an ``inputSchema`` that is not an object schema;
    seed 004) is dropped, and so, in the modern era, is a tool whose ``x-mcp-header``
    annotations are invalid, as clients must (mcp-wire 4.3): ``dropped`` names each (its
    name, or "" when it has none) with the path and reason, and the other tools stay listed.
    ``warnings`` names listed tools that lack what they should have (a description).
    ``fields`` is every other field of the first page's result as the server sent it
    (``_meta``, ``resultType``, and additive fields the client does not interpret), so an
    intermediary can hand on what it received; the paging cursor is not among them."""

    tools: list[dict[str, Any]]
    ttl_ms: int | None = None
    cache_scope: str | None = None
    dropped: tuple[dict[str, str], ...] = ()
    warnings: tuple[dict[str, str], ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallReply:
    """A ``tools/call`` answer: exactly one of ``result`` and ``error`` is set; ``http_status``
    is None on stdio; ``notifications`` arrived before the response (progress, logs)."""

    result: dict[str, Any] | None
    error: dict[str, Any] | None
    http_status: int | None
    notifications: tuple[Any, ...] = field(default=())


class ClientSession:
    """A connection in one era; use ``async with`` or call :meth:`aclose`."""

    def __init__(self, transport: Transport, decision: EraDecision, *, token: str | None,
                 timeouts: ClientTimeouts, session_id: str | None = None,
                 server: Mapping[str, Any] | None = None, first_id: int = 1,
                 capabilities: Mapping[str, Any] | None = None) -> None:
        assert decision.era is not None and decision.version is not None
        self.era: Era = decision.era
        self.version: str = decision.version
        self.decision = decision
        self.server: dict[str, Any] = dict(server or {})
        """The discover result (modern) or the initialize result (legacy) of the selection."""
        self._transport = transport
        self._timeouts = timeouts
        self._session_id = session_id
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._ids = itertools.count(first_id)
        self._schemas: dict[str, dict[str, Any]] = {}
        self._closed = False
        self._capabilities = dict(capabilities or {})

    @property
    def transport(self) -> Transport:
        """The connection (the conformance harness replays raw requests over it)."""
        return self._transport

    @property
    def session_id(self) -> str | None:
        """The legacy HTTP session id ``initialize`` minted (None elsewhere)."""
        return self._session_id

    async def __aenter__(self) -> ClientSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _request(self, request_id: RequestId, method: str, params: Mapping[str, Any],
                 meta: Mapping[str, Any] | None, schema: dict[str, Any] | None = None,
                 capabilities: Mapping[str, Any] | None = None) -> Request:
        if self.era is Era.MODERN:
            message, headers = modern_request(request_id, method, params, meta=meta,
                                              capabilities=capabilities,
                                              input_schema=schema, version=self.version)
        else:
            message, headers = legacy_request(request_id, method, params, meta=meta,
                                              version=self.version,
                                              session_id=self._session_id)
        return message, {**headers, **self._auth}

    async def _send(self, method: str, params: Mapping[str, Any], *,
                    meta: Mapping[str, Any] | None = None, request_id: RequestId | None = None,
                    schema: dict[str, Any] | None = None,
                    on_message: Callable[[Any], None] | None = None,
                    on_request: ServerRequestHandler | None = None,
                    capabilities: Mapping[str, Any] | None = None
                    ) -> tuple[dict[str, Any], Exchange]:
        rid = next(self._ids) if request_id is None else request_id
        exchange = await self._exchange(rid, method, params, meta, schema, on_message,
                                        on_request, capabilities)
        if exchange.status == _SESSION_GONE and self._session_id is not None:
            # 2025-11-25 transport: a 404 to a request with Mcp-Session-Id means the server
            # forgot the session (and never dispatched the request): start a new one, once.
            await self._renew()
            exchange = await self._exchange(rid, method, params, meta, schema, on_message,
                                            on_request, capabilities)
            if exchange.status == _SESSION_GONE:
                raise _session_lost(exchange.status)
        response = find_response(exchange, rid)
        if response is None:
            raise ProtocolViolationError(
                f"no response to {method}", code="client.no_response",
                data={"problems": ["$: no JSON-RPC response to the request"],
                      "httpStatus": exchange.status})
        problems = validate_response(response, rid, self.era, method,
                                     drop_descriptors=method == "tools/list")
        if problems:
            raise ProtocolViolationError(f"the {method} answer is invalid: {problems[0]}",
                                         data={"problems": problems, "method": method})
        return response, exchange

    async def _exchange(self, rid: RequestId, method: str, params: Mapping[str, Any],
                        meta: Mapping[str, Any] | None, schema: dict[str, Any] | None,
                        on_message: Callable[[Any], None] | None = None,
                        on_request: ServerRequestHandler | None = None,
                        capabilities: Mapping[str, Any] | None = None) -> Exchange:
        message, headers = self._request(rid, method, params, meta, schema, capabilities)
        # (the hooks only when given: a transport written before them still works)
        extra: dict[str, Any] = {} if on_message is None else {"on_message": on_message}
        if on_request is not None:
            extra["on_request"] = on_request
        return await self._transport.exchange(message, headers,
                                              timeout=self._timeouts.request_s,
                                              max_bytes=self._timeouts.max_response_bytes,
                                              **extra)

    async def _renew(self) -> None:
        """A new legacy session in place of a forgotten one: ``initialize`` without a session
        id, which must validate and negotiate this session's revision, then
        ``notifications/initialized`` (``client.session_lost`` otherwise)."""
        rid = next(self._ids)
        message, headers = legacy_request(rid, "initialize",
                                          initialize_params(capabilities=self._capabilities))
        exchange = await self._transport.exchange(message, {**headers, **self._auth},
                                                  timeout=self._timeouts.request_s,
                                                  max_bytes=self._timeouts.max_response_bytes)
        response = find_response(exchange, rid)
        result = response.get("result") if isinstance(response, dict) else None
        session_id = exchange.headers.get("mcp-session-id")
        if response is None or validate_response(response, rid, Era.LEGACY, "initialize") \
                or not isinstance(result, dict) or result.get("protocolVersion") != self.version \
                or session_id is None or check_session_id(session_id):
            raise _session_lost(exchange.status)
        self._session_id = session_id
        note, note_headers = legacy_notification("notifications/initialized",
                                                 version=self.version, session_id=session_id)
        await self._transport.notify(note, {**note_headers, **self._auth},
                                     timeout=self._timeouts.request_s)

    async def list_tools(self) -> ToolListing:
        """Every page of ``tools/list`` (``nextCursor`` followed, at most :data:`MAX_PAGES`).
        A cursor the server refuses with ``data.relist: true`` (the list changed between
        pages, e.g. a publish) restarts the listing from the first page, once: the pages
        already read may belong to the old list. A second refusal raises."""
        tools: list[dict[str, Any]] = []
        first: dict[str, Any] | None = None
        cursor: str | None = None
        restarted = False
        pages = 0
        while pages < MAX_PAGES:
            pages += 1
            response, exchange = await self._send("tools/list",
                                                  {} if cursor is None else {"cursor": cursor})
            if "error" in response:
                if cursor is not None and not restarted and _relist_asked(response["error"]):
                    restarted, tools, first, cursor, pages = True, [], None, None, 0
                    continue
                raise RequestRefusedError("the server refused tools/list",
                                          data={"error": response["error"],
                                                "httpStatus": exchange.status})
            page = response["result"]
            first = first or page
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        malformed = descriptor_problems(tools)
        warnings = [_named(tools[index], index, problem)
                    for index, found in sorted(descriptor_warnings(tools).items())
                    if index not in malformed for problem in found]
        tools, dropped = _without_malformed(tools, malformed)
        if self.era is Era.MODERN:
            tools, more = _without_invalid_header_annotations(tools)
            dropped += more
            kept = {tool["name"] for tool in tools}
            warnings = [w for w in warnings if w["name"] in kept]
        self._schemas = {tool["name"]: tool["inputSchema"] for tool in tools}
        assert first is not None
        return ToolListing(tools, first.get("ttlMs"), first.get("cacheScope"), tuple(dropped),
                           tuple(warnings), {key: value for key, value in first.items()
                                             if key not in _LISTING_KEYS})

    async def call_tool(self, name: str, arguments: Mapping[str, Any], *,
                        meta: Mapping[str, Any] | None = None,
                        request_id: RequestId | None = None,
                        on_notification: Callable[[Any], None] | None = None,
                        on_request: ServerRequestHandler | None = None,
                        capabilities: Mapping[str, Any] | None = None,
                        retry: Mapping[str, Any] | None = None) -> CallReply:
        """One ``tools/call``; ``meta`` (e.g. ``{"schemaVersion": ...}``) goes into
        ``params._meta``; ``request_id`` reuses a request identity (an idempotent retry);
        ``on_notification`` is called with each notification (progress, logs) as it arrives,
        before the response (they are in :attr:`CallReply.notifications` too); ``on_request``
        answers the server's requests during the call (legacy era: elicitation, sampling,
        roots; the session must have declared the capability, see :func:`connect`).
        Modern era: ``capabilities`` are this request's ``clientCapabilities`` (default
        none), and ``retry`` the ``inputResponses`` and ``requestState`` of a retry after an
        ``input_required`` result (SEP-2322), added to the params as given."""
        params = {"name": name, "arguments": dict(arguments), **(retry or {})}
        response, exchange = await self._send(
            "tools/call", params, meta=meta,
            request_id=request_id, schema=self._schemas.get(name),
            on_message=on_notification, on_request=on_request, capabilities=capabilities)
        notes = tuple(m for m in exchange.messages if m is not response)
        return CallReply(response.get("result"), response.get("error"), exchange.status, notes)

    async def tools_changed(self) -> AsyncIterator[None]:
        """Yields once when the change stream is open (anything may have changed since the
        last listing, so a cache refetches), then once per
        ``notifications/tools/list_changed``. Modern: a ``subscriptions/listen`` stream
        (open = its acknowledgement); legacy: the standalone GET stream (open = its 200 SSE
        head), or on stdio what the server sends unasked. Ends with the stream; a refusal
        raises :class:`~toolkeeper.errors.RequestRefusedError`. Iterate it in a task and
        cancel the task to stop listening (one listener per session on stdio)."""
        listen_id: RequestId | None = None
        if self.era is Era.MODERN:
            listen_id = next(self._ids)
            message: dict[str, Any] | None
            message, headers = self._request(
                listen_id, "subscriptions/listen",
                {"notifications": {"toolsListChanged": True}}, None)
        else:
            message, headers = None, {**legacy_headers(self.version, self._session_id),
                                      **self._auth}
        stream = self._transport.stream(message, headers,
                                        max_bytes=self._timeouts.max_response_bytes)
        async for item in stream:
            if item is STREAM_OPEN or not isinstance(item, dict):
                if item is STREAM_OPEN and listen_id is None:
                    yield None
                continue
            method = item.get("method")
            if method is None:
                if "error" in item:
                    raise RequestRefusedError("the server refused the change stream",
                                              data={"error": item["error"]})
                return
            if method in _STREAM_SIGNALS and (
                    listen_id is None or _subscription_of(item) in (None, listen_id)):
                yield None

    async def cancel(self, request_id: RequestId, reason: str | None = None) -> None:
        """Tell the server a request of this session is abandoned
        (``notifications/cancelled``), best effort. Legacy era, and the modern era on stdio;
        on modern HTTP a request is cancelled by closing its stream (which the abandoning of
        its exchange did), so nothing is sent."""
        params: dict[str, Any] = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        if self.era is Era.LEGACY:
            headers = {**legacy_headers(self.version, self._session_id), **self._auth}
        elif isinstance(self._transport, StdioTransport):
            headers = {}
        else:
            return
        with contextlib.suppress(ClientError):
            await self._transport.notify(notification_message("notifications/cancelled",
                                                              params),
                                         headers, timeout=self._timeouts.close_s)

    async def aclose(self) -> None:
        """End the legacy HTTP session (best effort) and release the transport."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.era is Era.LEGACY and self._session_id is not None:
                await self._transport.end_session(
                    {**legacy_headers(self.version, self._session_id), **self._auth},
                    timeout=self._timeouts.close_s)
        finally:
            await self._transport.aclose()


def _named(tool: Any, index: int, problem: str) -> dict[str, str]:
    """A dropped or warned descriptor: its name ("" when it has none), the path of the
    problem in the listing (``$.tools[i]...``) and the reason."""
    name = tool.get("name") if isinstance(tool, dict) else None
    path, _, reason = problem.partition(": ")
    return {"name": name if isinstance(name, str) else "",
            "path": f"$.tools[{index}]{path[1:]}", "reason": reason}


def _without_malformed(tools: list[Any], found: Mapping[int, list[str]]
                       ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The descriptors without the malformed ones (``found``: index -> problems), and one
    entry per problem of each dropped one (paths index the listing as the server sent it)."""
    dropped = [_named(tools[index], index, problem)
               for index in sorted(found) for problem in found[index]]
    return [tool for index, tool in enumerate(tools) if index not in found], dropped


def _without_invalid_header_annotations(tools: list[dict[str, Any]]
                                        ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, str]] = []
    for tool in tools:
        invalid = find_invalid_x_mcp_header(tool["inputSchema"])
        if invalid is None:
            kept.append(tool)
        else:
            dropped.append({"name": tool["name"], "path": invalid[0], "reason": invalid[1]})
    return kept, dropped


def _relist_asked(error: Any) -> bool:
    """Whether a ``tools/list`` error refuses the cursor and asks for a listing from the
    start (-32602 with ``data.relist: true``)."""
    if not isinstance(error, dict) or error.get("code") != INVALID_PARAMS:
        return False
    data = error.get("data")
    return isinstance(data, dict) and data.get("relist") is True


def _session_lost(status: int | None) -> ProtocolViolationError:
    return ProtocolViolationError("the server forgot the legacy session and no new one could "
                                  "be started", code="client.session_lost",
                                  data={"httpStatus": status})


def _subscription_of(notification: dict[str, Any]) -> object:
    params = notification.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
