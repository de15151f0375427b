"""Streamable HTTP client transport over httpx: real sockets, or an ASGI app in process.

A POST's answer is read as JSON or as server-sent events (notifications may come before the
response; reading stops at the response; a legacy server's request on the stream is answered
with a POST), within the exchange's time and byte bounds. Error
texts name the failure's kind, never the library's text (which may quote a URL with a secret).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import httpx

from toolkeeper.client.raw import EventLog, RawAnswer, RawRequest, is_answer, read_events
from toolkeeper.client.transport import (
    REFUSED,
    STREAM_OPEN,
    Exchange,
    ServerRequestHandler,
    find_response,
    too_deep,
    too_large,
    undecodable,
)
from toolkeeper.errors import (
    ClientAuthenticationError,
    ClientConnectionError,
    ClientError,
    ClientTimeoutError,
    JsonRpcError,
    RequestRefusedError,
    ServerUnavailableError,
)
from toolkeeper.protocol.client_requests import server_request_answer
from toolkeeper.protocol.envelope import MAX_DEPTH, decode_message, encode_message, nesting_exceeds
from toolkeeper.protocol.sse_events import SseDecoder
from toolkeeper.protocol.versions import Era, era_of

__all__ = ["HttpTransport"]

_BASE_HEADERS: Final = {"accept": "application/json, text/event-stream",
                        "content-type": "application/json"}
_SSE_ACCEPT: Final = {"accept": "text/event-stream"}
_ANSWER_S: Final = 10.0
"""The bound on POSTing the answer to a server's request (also within the exchange's own)."""


def _decode(data: bytes | str, where: str) -> Any:
    try:
        return decode_message(data)
    except JsonRpcError:
        if nesting_exceeds(data):
            raise too_deep(MAX_DEPTH) from None
        raise undecodable(where) from None


class HttpTransport:
    """POSTs to one URL through one ``httpx.AsyncClient`` (closed with the transport)."""

    def __init__(self, url: str, client: httpx.AsyncClient) -> None:
        self._url = url
        self._client = client

    async def exchange(self, message: Mapping[str, Any], headers: Mapping[str, str], *,
                       timeout: float, max_bytes: int,
                       on_message: Callable[[Any], None] | None = None,
                       on_request: ServerRequestHandler | None = None) -> Exchange:
        body = encode_message(message)
        sent = {**_BASE_HEADERS, **headers}
        try:
            async with asyncio.timeout(timeout):
                async with self._client.stream("POST", self._url, content=body,
                                               headers=sent) as response:
                    return await _read_answer(response, message.get("id"), max_bytes,
                                              self, headers, on_message, on_request)
        except (TimeoutError, httpx.HTTPError) as exc:
            raise _exchange_error(exc, timeout, self._url) from None

    async def _answer(self, request: dict[str, Any], headers: Mapping[str, str],
                      on_request: ServerRequestHandler | None = None) -> None:
        """Answer a request the server sent on a response stream or the standalone GET
        stream. Legacy: a POST of the response on the same session (with the same headers),
        within its own bound; a failed connection is the stream's to report. Modern: none, as
        the era has no server-to-client requests (they travel in ``input_required`` results)
        and no session an answer could be routed to (mcp-wire 0)."""
        version = next((v for k, v in headers.items() if k.lower() == "mcp-protocol-version"),
                       None)
        if era_of(version) is Era.MODERN:
            return
        answer = (server_request_answer(request)
                  if on_request is None or request.get("method") == "ping"
                  else await on_request(request))
        with contextlib.suppress(ClientError):
            await self.notify(answer, headers, timeout=_ANSWER_S)

    async def notify(self, message: Mapping[str, Any], headers: Mapping[str, str], *,
                     timeout: float) -> int | None:
        try:
            async with asyncio.timeout(timeout):
                # Only the status is wanted: the body (empty when accepted) is never read, so
                # an answer that does not end cannot hold the client or fill its memory.
                async with self._client.stream("POST", self._url,
                                               content=encode_message(message),
                                               headers={**_BASE_HEADERS, **headers}) as response:
                    return response.status_code
        except TimeoutError:
            raise ClientTimeoutError(f"no acknowledgement within {timeout}s") from None
        except httpx.HTTPError as exc:
            raise _connection_error(exc, self._url) from None

    async def stream(self, message: Mapping[str, Any] | None, headers: Mapping[str, str], *,
                     max_bytes: int) -> AsyncIterator[Any]:
        if message is None:
            request = self._client.stream("GET", self._url, headers={**_SSE_ACCEPT, **headers})
        else:
            request = self._client.stream("POST", self._url, content=encode_message(message),
                                          headers={**_BASE_HEADERS, **headers})
        try:
            async with request as response:
                _raise_for_refusal(response)
                if response.status_code != 200 or not response.headers.get(
                        "content-type", "").startswith("text/event-stream"):
                    body = await _read_bounded(response, max_bytes)
                    if body.strip() and response.headers.get("content-type", "").startswith(
                            "application/json"):
                        yield _decode(body, "stream answer")
                    elif response.status_code >= 400:
                        raise RequestRefusedError(
                            f"the server refused the stream (HTTP {response.status_code})",
                            data={"httpStatus": response.status_code})
                    return
                yield STREAM_OPEN
                decoder = SseDecoder()
                async for event in _events(response, decoder, max_bytes, per_event=True):
                    if isinstance(event, dict) and "method" in event and "id" in event:
                        await self._answer(event, headers)  # a server's request, as on calls
                    yield event
        except httpx.HTTPError as exc:
            raise _connection_error(exc, self._url) from None

    async def send_raw(self, request: RawRequest, *, timeout: float, max_bytes: int
                       ) -> RawAnswer:
        """Replay ``request`` byte for byte (:mod:`toolkeeper.client.raw`); no status is an
        error here. An event stream still open when ``timeout`` passes after its response
        came is recorded as not ended."""
        log = EventLog()
        head: list[tuple[int, dict[str, str]]] = []
        try:
            async with asyncio.timeout(timeout):
                async with self._client.stream(request.http_method, self._url,
                                               content=request.body or None,
                                               headers=list(request.headers)) as response:
                    headers = {k.lower(): v for k, v in response.headers.items()}
                    head.append((response.status_code, headers))
                    if not headers.get("content-type", "").startswith("text/event-stream"):
                        return await _read_plain(response, headers, max_bytes)
                    await read_events(_bounded_chunks(response, max_bytes),
                                      request.stop_after, log)
                    return log.answer(response.status_code, headers)
        except (TimeoutError, httpx.HTTPError) as exc:
            if (isinstance(exc, TimeoutError) and head
                    and any(is_answer(m) for m in log.messages)):
                return log.answer(*head[0])
            raise _exchange_error(exc, timeout, self._url) from None

    async def end_session(self, headers: Mapping[str, str], *, timeout: float) -> None:
        try:
            async with asyncio.timeout(timeout):  # the status is all there is to know
                async with self._client.stream("DELETE", self._url, headers=dict(headers)):
                    pass
        except (TimeoutError, httpx.HTTPError):
            pass  # best effort: the server reaps idle sessions anyway

    async def aclose(self) -> None:
        await self._client.aclose()


def _raise_for_refusal(response: httpx.Response) -> None:
    """503 and the credential refusals are answers about the connection, not about MCP."""
    if response.status_code in (401, 403):
        raise ClientAuthenticationError(
            f"the server refused the credential (HTTP {response.status_code})",
            data={"httpStatus": response.status_code})
    if response.status_code == 503:
        raise ServerUnavailableError("the server answered 503 (unavailable)",
                                     data={"httpStatus": 503,
                                           "retryAfter": response.headers.get("retry-after")})


def _exchange_error(exc: TimeoutError | httpx.HTTPError, timeout: float, url: str
                    ) -> ClientTimeoutError | ClientConnectionError:
    """What a request that awaits its answer raises when ``exc`` ended it: the caller's
    deadline passing, httpx's own timeout, or a connection failure."""
    if isinstance(exc, TimeoutError):
        return ClientTimeoutError(f"no complete answer within {timeout}s",
                                  data={"timeoutS": timeout})
    if isinstance(exc, httpx.TimeoutException):
        return ClientTimeoutError("the HTTP connection timed out")
    return _connection_error(exc, url)


def _connection_error(exc: httpx.HTTPError, url: str) -> ClientConnectionError:
    """The failure, naming the URL tried (without its user information, query or fragment,
    where a credential could sit), so a wrong port or path shows in the message."""
    tried = str(httpx.URL(url).copy_with(userinfo=b"", query=None, fragment=None))
    if isinstance(exc, httpx.ConnectError):
        return ClientConnectionError(f"the connection to {tried} was refused", code=REFUSED,
                                     data={"kind": type(exc).__name__, "url": tried})
    return ClientConnectionError(f"the connection to {tried} failed ({type(exc).__name__})",
                                 data={"kind": type(exc).__name__, "url": tried})


async def _events(response: httpx.Response, decoder: SseDecoder, max_bytes: int, *,
                  per_event: bool) -> AsyncIterator[Any]:
    """Decoded ``message`` events; the byte bound applies to the whole answer, or with
    ``per_event`` to each event (a long-lived stream)."""
    seen = 0
    async for chunk in response.aiter_bytes():
        seen += len(chunk)
        if seen > max_bytes:
            raise too_large(max_bytes)
        for event in decoder.feed(chunk):
            if per_event:
                seen = 0
            if event.event == "message":
                yield _decode(event.data, "SSE event")
    for event in decoder.end():
        if event.event == "message":
            yield _decode(event.data, "SSE event")


async def _read_answer(response: httpx.Response, request_id: object, max_bytes: int,
                       transport: HttpTransport, sent: Mapping[str, str],
                       on_message: Callable[[Any], None] | None = None,
                       on_request: ServerRequestHandler | None = None) -> Exchange:
    """The answer to the request sent with headers ``sent``; a server's request on its event
    stream is answered through ``transport`` (by ``on_request`` when given); each
    notification is handed to ``on_message`` as it arrives."""
    _raise_for_refusal(response)
    headers = {k.lower(): v for k, v in response.headers.items()}
    status = response.status_code
    if headers.get("content-type", "").startswith("text/event-stream"):
        messages: list[Any] = []
        async for message in _events(response, SseDecoder(), max_bytes, per_event=False):
            messages.append(message)
            if isinstance(message, dict) and "method" in message and "id" in message:
                # the server may wait for the answer before it responds
                await transport._answer(message, sent, on_request)
            elif on_message is not None and isinstance(message, dict) and "method" in message:
                on_message(message)
            exchange = Exchange(status, headers, tuple(messages), streamed=True)
            if find_response(exchange, request_id) is not None:
                return exchange
        # The stream closed before the response: the connection was lost (the request may
        # or may not have run), a transient failure the retry policy judges, not a bad answer.
        raise ClientConnectionError("the event stream ended before the response",
                                    data={"httpStatus": status, "messages": len(messages)})
    body = await _read_bounded(response, max_bytes)
    if not body.strip() or not headers.get("content-type", "").startswith("application/json"):
        return Exchange(status, headers, (), len(body))
    return Exchange(status, headers, (_decode(body, "JSON body"),), len(body))


async def _read_plain(response: httpx.Response, headers: dict[str, str], max_bytes: int
                      ) -> RawAnswer:
    body = await _read_bounded(response, max_bytes)
    status = response.status_code
    if not body.strip():
        return RawAnswer(status, headers, (), body)
    try:
        return RawAnswer(status, headers, (decode_message(body),), body)
    except JsonRpcError:
        return RawAnswer(status, headers, (), body, undecodable=True)


async def _bounded_chunks(response: httpx.Response, max_bytes: int) -> AsyncIterator[bytes]:
    seen = 0
    async for chunk in response.aiter_bytes():
        seen += len(chunk)
        if seen > max_bytes:
            raise too_large(max_bytes)
        yield chunk


async def _read_bounded(response: httpx.Response, max_bytes: int) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise too_large(max_bytes)
    return bytes(body)
