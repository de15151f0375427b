"""JSON-RPC error codes of both MCP eras, and the table from code to HTTP status (mcp-wire 4.5).

Each constant carries its own docstring. Codes in ``-32020..-32099`` are reserved for the MCP
specification; ``-32000..-32019`` are implementation-defined and toolkeeper does not emit them
(the spec asks new implementations not to). toolkeeper's own code, :data:`RATE_LIMITED`, lies
outside JSON-RPC's reserved ``-32768..-32000`` altogether, in the application-defined space.
Retired codes (``-32002`` resource not found, ``-32042`` URL elicitation required) are never
emitted (mcp-wire 5).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = [
    "HEADER_MISMATCH",
    "HTTP_STATUS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "RATE_LIMITED",
    "REQUEST_CANCELLED",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "http_status_for",
]

PARSE_ERROR: Final = -32700
"""The body is not JSON (or is nested deeper than the bound); answered with ``"id": null``."""

INVALID_REQUEST: Final = -32600
"""Not a single valid JSON-RPC request or notification (batches, posted responses, float or
null ids, wrong ``jsonrpc``), or a legacy request outside its session's lifecycle."""

METHOD_NOT_FOUND: Final = -32601
"""The method is not part of the era's surface or has no handler; ``data`` is the method."""

INVALID_PARAMS: Final = -32602
"""Bad params: a missing or malformed modern ``_meta`` envelope, a malformed method payload, an
unknown or invisible tool (one shape for both), or a schema-version gate rejection."""

INTERNAL_ERROR: Final = -32603
"""An unexpected server failure; the message is generic and never carries exception text."""

HEADER_MISMATCH: Final = -32020
"""Modern HTTP: a routing header disagrees with the body, is duplicated, or is malformed."""

MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
"""Modern: the request needs a client capability the envelope did not declare;
``data = {"requiredCapabilities": ClientCapabilities}``."""

UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
"""The request names a protocol version the endpoint does not serve on that path;
``data = {"supported": [every version served, both eras], "requested": <str>}``."""

REQUEST_CANCELLED: Final = -32800
"""Legacy HTTP only: the answer to a request whose client cancelled it with
``notifications/cancelled`` in the same session (the 2025 wire's code, as the SDK's server
sends it; the modern era never answers a cancelled request, mcp-wire 5)."""

RATE_LIMITED: Final = -31429
"""toolkeeper's own (application-defined; the digits recall HTTP 429): a ``tools/call`` refused
before dispatch because its principal is over its rate (token bucket) or has as many calls in
flight as its concurrency limit allows. ``data = {"retryAfterS": <int, seconds, at least 1>,
"limit": "rate" | "concurrency"}``; the HTTP reply carries ``Retry-After`` with the same
seconds. Modern HTTP: status 429. Legacy HTTP: 200 like every error that answers a dispatched
request (mcp-wire 4.5): the ``mcp`` 1.x client raises on any 4xx other than 404 inside its
transport's task group, which ends the whole session, whereas a 200 error reaches the caller
as an ``McpError`` with this code and data and the session lives on."""

HTTP_STATUS: Final[Mapping[int, int]] = MappingProxyType(
    {
        PARSE_ERROR: 400,
        INVALID_REQUEST: 400,
        INVALID_PARAMS: 400,
        HEADER_MISMATCH: 400,
        MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
        UNSUPPORTED_PROTOCOL_VERSION: 400,
        METHOD_NOT_FOUND: 404,
        RATE_LIMITED: 429,
    }
)
"""Modern era: JSON-RPC ``error.code`` -> HTTP status for a JSON (non-SSE) reply. Every code not
listed, ``-32603`` included, is sent with 200: a gateway must not infer success from HTTP 200."""

def http_status_for(code: int) -> int:
    """The modern-era HTTP status for an error code (200 when the table has no row for it)."""
    return HTTP_STATUS.get(code, 200)
