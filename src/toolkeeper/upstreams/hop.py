"""The HTTP client an upstream hop runs on: httpx's API (so :class:`~toolkeeper.client.
http_transport.HttpTransport` reads and bounds the answer as for every other server) over
aiohttp's connection pool and parser (``httpx-aiohttp``'s transport), which spend a fraction of
httpcore's CPU per request inside a busy gateway (``bench/README.md``, forwarding).

Errors keep httpx's meaning for the client's mapping: a refused connection is
:class:`httpx.ConnectError` and a connection lost before or during the answer is
:class:`httpx.ReadError` (``httpx-aiohttp`` maps both to a connect timeout), so a dead upstream
is ``upstream.unavailable``, never ``upstream.timeout``. The hop reads no proxy settings from
the environment: an upstream is reached directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

from toolkeeper.client import ClientTimeouts
from toolkeeper.client.http_transport import HttpTransport

__all__ = ["open_hop"]


def _remapped(exc: httpx.HTTPError) -> httpx.HTTPError:
    cause = exc.__cause__
    if isinstance(cause, aiohttp.ClientConnectorError):
        return httpx.ConnectError(str(exc))
    if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(
            cause, (aiohttp.ServerTimeoutError, asyncio.TimeoutError)):
        return httpx.ReadError(str(exc))
    return exc


class _Body(httpx.AsyncByteStream):
    """An answer's body, its errors remapped as the request's are."""

    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx.HTTPError as exc:
            raise _remapped(exc) from exc.__cause__

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Hop(AiohttpTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await super().handle_async_request(request)
        except httpx.HTTPError as exc:
            raise _remapped(exc) from exc.__cause__
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Body(response.stream)
        return response


def open_hop(url: str, timeouts: ClientTimeouts) -> HttpTransport:
    """A transport to the upstream at ``url`` (the exchange's own deadlines bound each request;
    the connection attempt is bounded by ``timeouts.connect_s``)."""
    client = httpx.AsyncClient(transport=_Hop(trust_env=False),
                               timeout=httpx.Timeout(None, connect=timeouts.connect_s),
                               follow_redirects=False, trust_env=False)
    return HttpTransport(url, client)
