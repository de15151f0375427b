"""Where a client connects: a URL, a stdio command, or an ASGI app driven in process (the twin
of the HTTP transport, with no socket: :class:`~toolkeeper.client.asgi_transport.
StreamingASGITransport` underneath)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from toolkeeper.client.asgi_transport import StreamingASGITransport
from toolkeeper.client.http_transport import HttpTransport
from toolkeeper.client.stdio_transport import StdioTransport
from toolkeeper.client.timeouts import ClientTimeouts
from toolkeeper.client.transport import Transport
from toolkeeper.contracts.redaction import redact_text
from toolkeeper.errors import ClientError

__all__ = ["Target", "TargetKind"]

_TWIN_URL = "http://127.0.0.1/mcp"


def _well_formed(url: str) -> bool:
    """An http(s) URL both urllib and httpx parse, whose port (``.port`` checks the range)
    a socket can use."""
    try:
        parts = urlsplit(url)
        _ = parts.port
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


class TargetKind(enum.Enum):
    HTTP = "http"
    STDIO = "stdio"
    ASGI = "asgi"


@dataclass(frozen=True)
class Target:
    """An MCP endpoint; build it with :meth:`from_url`, :meth:`from_stdio` or :meth:`from_asgi`."""

    kind: TargetKind
    url: str | None = None
    argv: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    app: Any = None
    stderr: Callable[[str], None] | None = field(default=None, compare=False)
    """A stdio server's standard error, line by line (default: discarded)."""

    @classmethod
    def from_url(cls, url: str) -> Target:
        """A Streamable HTTP endpoint (``http://`` or ``https://``, with a valid host and
        a port in 0-65535)."""
        if not _well_formed(url):
            shown = redact_text(url)  # the URL may carry a password or a token
            raise ClientError(f"not an http(s) URL: {shown!r}", code="client.bad_target",
                              data={"target": shown})
        return cls(TargetKind.HTTP, url=url)

    @classmethod
    def from_stdio(cls, argv: Sequence[str], env: Mapping[str, str] | None = None, *,
                   stderr: Callable[[str], None] | None = None) -> Target:
        """A server started as a subprocess speaking JSON-RPC lines on stdin/stdout; its
        standard error goes to ``stderr`` line by line, or is discarded."""
        if not argv:
            raise ClientError("the stdio command is empty", code="client.bad_target")
        return cls(TargetKind.STDIO, argv=tuple(argv), env=env, stderr=stderr)

    @classmethod
    def from_asgi(cls, app: Any, url: str = _TWIN_URL) -> Target:
        """An ASGI app (toolkeeper's gateway app, or any MCP server app) called in process."""
        return cls(TargetKind.ASGI, url=url, app=app)

    @property
    def origin(self) -> str:
        """What an era allow-list names: the URL's scheme://host[:port], or the command."""
        if self.kind is TargetKind.STDIO:
            return " ".join(self.argv)
        parts = urlsplit(self.url or "")
        return f"{parts.scheme}://{parts.netloc}"

    async def open(self, timeouts: ClientTimeouts) -> Transport:
        """A connected transport to the endpoint."""
        if self.kind is TargetKind.STDIO:
            return await StdioTransport.start(
                self.argv, env=self.env, close_s=timeouts.close_s,
                max_line_bytes=max(timeouts.max_response_bytes, timeouts.probe_max_bytes),
                stderr=self.stderr)
        timeout = httpx.Timeout(None, connect=timeouts.connect_s)
        assert self.url is not None
        if self.kind is TargetKind.ASGI:
            client = httpx.AsyncClient(
                transport=StreamingASGITransport(self.app, close_s=timeouts.close_s),
                timeout=timeout)
        else:
            client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        return HttpTransport(self.url, client)
