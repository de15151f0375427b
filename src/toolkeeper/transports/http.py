"""Streamable HTTP: a plain ASGI app around the protocol kernel (SPEC 3.2, mcp-wire 4).

Checks run in the order of mcp-wire 4.4; the rest of the ladder is the kernel's:

=====  ===================================================  ===============================
step   check                                                failure
=====  ===================================================  ===============================
0a     POST body within ``max_body_bytes`` (4 MiB)           413 text/plain
1      POST ``Content-Type`` is ``application/json``         400 text/plain
2      ``Host`` allowed / ``Origin`` absent or allowed        421 / 403 text/plain
3      method: POST; DELETE ends a legacy session            405 ``Allow: POST`` (GET and the
                                                             rest; DELETE without a session)
4      ``Accept`` lists JSON and SSE (JSON in JSON mode)     406
5      the credential (:meth:`ServerKernel.authenticate`;   401 ``WWW-Authenticate``, fixed
       GET and DELETE too, before their 405 or session)      JSON body
6+     body -> :meth:`ServerKernel.handle_http`              JSON-RPC error, table status
=====  ===================================================  ===============================

A reply is JSON with the status from the code table; an accepted notification is 202 with an
empty body. Any other path is 404, except the static documents of :attr:`HttpConfig.documents`
(the RFC 9728 metadata) and, with :attr:`HttpConfig.probes`, ``/healthz`` and ``/readyz``
(:mod:`~toolkeeper.transports.probes`: before every check, uncounted). A request whose
handler emits a notification (progress, log) is committed to SSE at the first one, and so is
one silent for ``keepalive_s`` (then pinged);
once committed the status is 200 and the response is the last event. A stream method
(``subscriptions/listen``) is SSE in every mode and needs ``text/event-stream`` in ``Accept``
(406). A client that disconnects cancels its handler. A legacy session's calls
(:mod:`~toolkeeper.transports.legacy_calls`) can also be cancelled by
``notifications/cancelled``, can send their client requests whose responses come back as
POSTs, and, in a 2025-11-25 session, stream resumably: a GET with ``Last-Event-ID`` takes a
dropped stream up again. With a change feed, a legacy session may open its standalone GET
stream (:mod:`~toolkeeper.transports.session_stream`); without one, any other GET is 405.
:meth:`StreamableHTTPApp.begin_shutdown` ends every stream so the server can stop; a request
the server then cancels (its graceful wait is over) is logged and answered 503 if nothing was
sent yet. No exception escapes to the server: a transport fault is logged and
answered 500 with a fixed text, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Iterable, Mapping
from functools import lru_cache, partial
from typing import Final, Protocol

from toolkeeper.protocol import (
    Accepted,
    HeaderView,
    Pending,
    Reply,
    ServerKernel,
    TransportFacts,
)
from toolkeeper.protocol.headers import (
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
)
from toolkeeper.protocol.raw_headers import asgi_index, header_text
from toolkeeper.protocol.versions import HANDSHAKE_VERSIONS
from toolkeeper.transports.asgi_io import (
    ASGIApp,
    BodyTimeout,
    BodyTooLarge,
    ClientDisconnected,
    Message,
    Receive,
    Scope,
    Send,
    encode_headers,
    read_body,
    respond,
    respond_plain,
    send_reply,
    serve_lifespan,
)
from toolkeeper.transports.asks import (
    PendingAsks,
)
from toolkeeper.transports.http_config import HttpConfig
from toolkeeper.transports.http_rungs import (
    MEMO_LONGEST,
    STREAM_METHOD,
    accepts,
    asks_for_a_stream,
    check_post_headers,
    is_json_type,
    length_refusal,
    short_memo,
)
from toolkeeper.transports.legacy_calls import LegacyCalls
from toolkeeper.transports.pending import answer_pending
from toolkeeper.transports.probes import PROBE_PATHS, answer_probe
from toolkeeper.transports.session_stream import ChangeFeed, SessionStreams

__all__ = ["ASGIApp", "HttpConfig", "StreamableHTTPApp", "create_asgi_app"]

_log = logging.getLogger("toolkeeper.transports.http")

_PLAIN: Final = (b"content-type", b"text/plain; charset=utf-8")
_CLOSE: Final = (b"connection", b"close")  # the rest of a stalled body is never read
LAST_EVENT_ID: Final = "last-event-id"


class ResponseObserver(Protocol):
    """Told of every HTTP response the app starts (the gateway's metrics): its status, and
    for a ``text/event-stream`` response its opening and its end (its last body message, or
    the end of the request, whichever comes first)."""

    def responded(self, status: int) -> None: ...

    def stream_opened(self) -> None: ...

    def stream_closed(self) -> None: ...


def _is_stream(start: Message) -> bool:
    """Whether the response's Content-Type is ``text/event-stream`` (the first Content-Type
    field decides: the transport writes one, first, in every response it starts)."""
    headers: Iterable[tuple[bytes, bytes]] = start.get("headers", ())
    if type(headers) is list and headers and (first := headers[0])[0] == b"content-type":
        value: bytes = first[1]  # as the transport starts them
        return value.startswith(b"text/event-stream")
    for name, value in headers:
        if name == b"content-type" or name.lower() == b"content-type":
            return value.startswith(b"text/event-stream")
    return False


class StreamableHTTPApp:
    """The MCP endpoint as an ASGI callable."""

    def __init__(self, kernel: ServerKernel, config: HttpConfig | None = None, *,
                 changes: ChangeFeed | None = None) -> None:
        self.kernel = kernel
        self._config = config if config is not None else HttpConfig()
        # The allow-list checks are pure functions of one header value each: memoized.
        self._host_allowed = short_memo(self._config.policy.host_allowed, 256)
        self._origin_allowed = short_memo(self._config.policy.origin_allowed, 256)
        # The express lane's verdict on the raw (type, host, origin, accept) values, memoized
        # when they are 1 KiB together at most (see _express_checks).
        self._express_verdict = lru_cache(maxsize=256)(self._judge_raw)
        # A Content-Length of ASCII digits shorter than the body limit's is under it.
        self._short_length = len(str(self._config.max_body_bytes))
        self.express = True
        """POSTs whose header names are all lowercase and unrepeated take the express lane:
        the transport's checks on the raw values, the kernel's
        :meth:`~toolkeeper.protocol.ServerKernel.handle_asgi`. The answer is the same either
        way (False: the transport judges every request through a HeaderView; the kernel's own
        lane is unaffected; ``tests/transports/test_http_express.py`` compares them)."""
        self._changes = changes
        self._stopping = False
        self._observer: ResponseObserver | None = None
        self._session_streams = (None if changes is None else SessionStreams(
            kernel, changes, keepalive_s=self._config.keepalive_s))
        config = self._config
        self._legacy = LegacyCalls(
            config.replay, PendingAsks(config.ask_timeout_s, config.max_pending_asks,
                                       max_per_session=config.max_pending_asks_per_session,
                                       remaining=kernel.sessions.remaining),
            keepalive_s=config.keepalive_s, json_response=config.json_response)
        # However a session ends (DELETE, expiry, eviction), what its calls keep goes with it,
        # and its standalone GET stream ends then, not at its next keepalive.
        kernel.sessions.ended.append(self._legacy.end_session)
        if self._session_streams is not None:
            kernel.sessions.ended.append(self._session_streams.end)

    @property
    def config(self) -> HttpConfig:
        """The transport options (fixed for the app's life: its checks are memoized)."""
        return self._config

    def observe_responses(self, observer: ResponseObserver) -> None:
        """Tell ``observer`` of every response from now on (in the app's own send wrapper,
        so counting costs no ASGI layer of its own)."""
        self._observer = observer

    def begin_shutdown(self) -> None:
        """The server is stopping: end every stream (listen and standalone) so each response
        can finish; called by the runner before it waits for connections to close."""
        self._stopping = True
        if self._changes is not None:
            self._changes.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await serve_lifespan(receive, send)
        elif kind == "http":
            probes = self._config.probes
            if probes is not None and self._probe_path(scope["path"]):
                await answer_probe(probes, scope, send)  # not counted, checked or logged
                return
            started: list[bool] = []
            observer = self._observer
            streaming: list[bool] = []

            def tracking_send(message: Message) -> Awaitable[None]:
                # A plain function handing back send's own awaitable: no extra coroutine.
                if not started:
                    if message["type"] == "http.response.start":
                        started.append(True)
                        if observer is not None:
                            observer.responded(message["status"])
                            if _is_stream(message):
                                streaming.append(True)
                                observer.stream_opened()
                elif (streaming and message["type"] == "http.response.body"
                      and not message.get("more_body")):
                    streaming.clear()
                    assert observer is not None
                    observer.stream_closed()
                return send(message)

            try:
                await self._http(scope, receive, tracking_send)
            except ClientDisconnected:
                return
            except asyncio.CancelledError:
                if not self._stopping:
                    raise
                # The server cancels what is still running once its graceful wait is over: an
                # answer if none began (the handler's call is logged cancelled), no traceback.
                _log.info("request cancelled at shutdown: %s %s", scope.get("method"),
                          scope.get("path"))
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                if not started:
                    await respond_plain(tracking_send, 503,
                                        b"Service Unavailable: the server is stopping")
            except Exception:
                _log.exception("transport fault while serving %s %s", scope.get("method"),
                               scope.get("path"))
                if not started:
                    await respond_plain(tracking_send, 500, b"Internal Server Error")
            finally:
                if streaming:
                    assert observer is not None
                    observer.stream_closed()
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    def _probe_path(self, path: str) -> bool:
        endpoint = self._config.path
        return endpoint is not None and path != endpoint and path in PROBE_PATHS

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        config = self.config
        if config.path is not None and scope["path"] != config.path:
            document = config.documents.get(scope["path"])
            if document is not None:
                await _serve_document(scope["method"], document, send)
            else:
                await respond_plain(send, 404, b"Not Found")
            return
        raw = scope["headers"]
        if not isinstance(raw, list | tuple):  # ASGI promises an iterable: read it once
            raw = list(raw)
        method = scope["method"]
        if method == "POST" and self.express:
            index = asgi_index(raw)
            sse_ok = None if index is None else self._express_checks(index)
            if sse_ok is not None:
                await self._post(scope, receive, send, raw, None, index, sse_ok)
                return
        # RFC 9110 5.5: a field value excludes leading and trailing OWS; not every ASGI server's
        # parser strips it (httptools keeps trailing OWS), so the transport does.
        headers = HeaderView.from_asgi(raw)
        if method == "POST":
            refusal = check_post_headers(headers, config.max_body_bytes)
            if refusal is not None:
                await respond_plain(send, *refusal)
                return
        repeated = headers.repeated
        if repeated and ("host" in repeated or "origin" in repeated):
            # RFC 9112 3.2: several Host fields are a 400; a proxy and this server could each
            # read a different one (the same for Origin, which guards against DNS rebinding).
            await respond_plain(send, 400, b"Duplicate Host or Origin header")
            return
        if not self._host_allowed(headers.get("host")):
            await respond_plain(send, 421, b"Invalid Host header")
            return
        if not self._origin_allowed(headers.get("origin")):
            await respond_plain(send, 403, b"Invalid Origin header")
            return
        if method != "POST":
            await self._other_method(method, headers, scope, receive, send)
            return
        sse_ok = self._sse_ok(headers.get("accept"))
        if sse_ok is None:
            await respond(send, 406, [], b"")
            return
        await self._post(scope, receive, send, raw, headers, None, sse_ok)

    def _sse_ok(self, accept: str | None) -> bool | None:
        """Step 4: whether an SSE answer is acceptable, or None when the Accept header rules
        out every answer this mode gives (406)."""
        json_ok, sse_ok = accepts(accept)
        if not json_ok or not (sse_ok or self._config.json_response):
            return None
        return sse_ok

    def _express_checks(self, index: Mapping[bytes, bytes]) -> bool | None:
        """Steps 0a to 4 for a POST whose header names are all lowercase and appear once
        (``index``, see :func:`~toolkeeper.protocol.raw_headers.asgi_index`), judged on the raw
        values: whether SSE is acceptable when every step passes, else None, and the general
        path answers the refusal. Content-Length is judged by the general path's own rule;
        the other four values get one memoized verdict per combination."""
        length = index.get(b"content-length")
        try:
            if length is not None and not (
                    length.isdigit() and len(length) < self._short_length) and length_refusal(
                    [header_text(length)], self._config.max_body_bytes) is not None:
                return None
            content_type, host = index.get(b"content-type"), index.get(b"host")
            origin, accept = index.get(b"origin"), index.get(b"accept")
            values = (content_type, host, origin, accept)
            if (len(content_type or b"") + len(host or b"") + len(origin or b"")
                    + len(accept or b"")) > 4 * MEMO_LONGEST:
                return self._judge_raw(values)  # too long to keep: judged afresh
            return self._express_verdict(values)
        except (TypeError, AttributeError):  # a value that is not bytes
            return None

    def _judge_raw(self, raw: tuple[bytes | None, ...]) -> bool | None:
        content_type, host, origin, accept = (
            None if value is None else header_text(value) for value in raw)
        if (not is_json_type(content_type) or not self._host_allowed(host)
                or not self._origin_allowed(origin)):
            return None
        return self._sse_ok(accept)

    async def _post(self, scope: Scope, receive: Receive, send: Send,
                    raw: list[tuple[bytes, bytes]] | tuple[tuple[bytes, bytes], ...],
                    headers: HeaderView | None, index: Mapping[bytes, bytes] | None,
                    sse_ok: bool) -> None:
        """Step 5 on: read the body, let the kernel answer it, write the answer."""
        config = self.config
        try:
            body = await read_body(receive, config.max_body_bytes, config.body_timeout_s)
        except BodyTooLarge:
            await respond_plain(send, 413, b"Request body too large")
            return
        except BodyTimeout:
            await respond(send, 408, [_PLAIN, _CLOSE], b"Request body timed out")
            return
        if not sse_ok and STREAM_METHOD in body and asks_for_a_stream(body, raw, headers):
            await respond(send, 406, [], b"")  # rung 8, before the kernel's rungs 9 to 18
            return
        client = scope.get("client")
        outcome = self.kernel.handle_asgi(body, raw,
                                          f"{client[0]}:{client[1]}" if client else None,
                                          headers, index, time.perf_counter_ns())
        if isinstance(outcome, Pending) and outcome.stream and not sse_ok:
            await respond(send, 406, [], b"")
        elif isinstance(outcome, Reply):
            await send_reply(send, outcome)
        elif isinstance(outcome, Accepted):
            if outcome.headers:
                self._legacy.accepted(outcome)
            await respond(send, 202, encode_headers(outcome.headers), b"")
        elif outcome.headers:  # a legacy session's call
            await self._legacy.answer(outcome, receive, send, sse_ok)
        else:
            await answer_pending(outcome, receive, send, partial(send_reply, send), [],
                                 json_only=config.json_response and not outcome.stream,
                                 keepalive_s=config.keepalive_s)

    async def _other_method(self, method: str, headers: HeaderView, scope: Scope,
                            receive: Receive, send: Send) -> None:
        facts = TransportFacts("http", headers)
        refusal = self.kernel.authenticate(facts)  # who is asking comes first, as for POST
        if refusal is not None:
            await send_reply(send, refusal)
            return
        versions = headers.get_all(MCP_PROTOCOL_VERSION)
        modern = any(v not in HANDSHAKE_VERSIONS for v in versions)
        session_id = headers.get(MCP_SESSION_ID)
        if method == "DELETE" and not modern and session_id is not None:
            await respond(send, self.kernel.end_session(facts), [], b"")
            return
        last_event_id = headers.get(LAST_EVENT_ID)
        if (method == "GET" and not modern and session_id is not None
                and last_event_id is not None and self._legacy.resumable is not None):
            await self._resume(facts, last_event_id, accepts(headers.get("accept"))[1],
                               receive, send)
            return
        streams = self._session_streams
        if method == "GET" and not modern and session_id is not None and streams is not None:
            await streams.serve(facts, accepts(headers.get("accept"))[1],
                                receive, send)
            return
        await respond(send, 405, [(b"allow", b"POST")], b"")


    async def _resume(self, facts: TransportFacts, last_event_id: str, sse_ok: bool,
                      receive: Receive, send: Send) -> None:
        """GET with ``Last-Event-ID``: a live session's stream taken up again (406 without
        SSE in ``Accept``; the session refusals of the standalone stream)."""
        if not sse_ok:
            await respond(send, 406, [], b"")
            return
        target = self.kernel.session_for_stream(facts)
        if isinstance(target, Reply):
            await send_reply(send, target)
            return
        await self._legacy.resume(target, last_event_id, receive, send)


async def _serve_document(method: str, document: bytes, send: Send) -> None:
    if method != "GET":
        await respond(send, 405, [(b"allow", b"GET")], b"")
        return
    await respond(send, 200, [(b"content-type", b"application/json")], document)


def create_asgi_app(kernel: ServerKernel, config: HttpConfig | None = None, *,
                    changes: ChangeFeed | None = None) -> StreamableHTTPApp:
    """The ASGI app serving ``kernel`` (see :class:`HttpConfig`); ``changes`` (the gateway's
    change hub) enables the legacy standalone GET stream and ends streams at shutdown."""
    return StreamableHTTPApp(kernel, config, changes=changes)
