"""The one exception-to-wire boundary, and constructors for the errors the core raises.

Every layer raises :class:`~toolkeeper.errors.JsonRpcError` (or lets anything else escape);
:func:`wire_error` is the single function that turns an exception into a JSON-RPC ``error``
object. An unexpected exception becomes -32603 with a generic message: no exception text,
no traceback, nothing from a library reaches the wire (it is logged server-side instead).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import codes
from toolkeeper.protocol.versions import supported_versions

__all__ = [
    "header_mismatch",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "method_not_found",
    "missing_capability",
    "rate_limited",
    "request_cancelled",
    "server_stopping",
    "unsupported_version",
    "wire_error",
]

_log = logging.getLogger("toolkeeper.protocol")

INTERNAL_MESSAGE = "Internal error"


def wire_error(exc: BaseException) -> dict[str, Any]:
    """The JSON-RPC ``error`` object for an exception (the only exception-to-wire mapping)."""
    if (isinstance(exc, JsonRpcError) and type(exc.rpc_code) is int
            and isinstance(exc.message, str)):  # (one built elsewhere may be malformed)
        out: dict[str, Any] = {"code": exc.rpc_code, "message": exc.message}
        if exc.rpc_data is not None:
            out["data"] = exc.rpc_data
        return out
    _log.error("unexpected error while serving a request", exc_info=exc)
    return {"code": codes.INTERNAL_ERROR, "message": INTERNAL_MESSAGE}


def request_cancelled() -> JsonRpcError:
    """Legacy HTTP: the answer to a request its client cancelled (-32800, mcp-wire 5)."""
    return JsonRpcError(codes.REQUEST_CANCELLED, "Request cancelled")


def server_stopping() -> JsonRpcError:
    """The answer to a request the server abandons because it is stopping (-32603), sent as
    the last event of a response already streaming (one not yet begun gets HTTP 503)."""
    return JsonRpcError(codes.INTERNAL_ERROR, "Server is stopping")


def invalid_request(message: str) -> JsonRpcError:
    return JsonRpcError(codes.INVALID_REQUEST, message)


def method_not_found(method: str) -> JsonRpcError:
    return JsonRpcError(codes.METHOD_NOT_FOUND, "Method not found", method)


def invalid_params(message: str, data: Any = None) -> JsonRpcError:
    return JsonRpcError(codes.INVALID_PARAMS, message, data)


def internal_error() -> JsonRpcError:
    return JsonRpcError(codes.INTERNAL_ERROR, INTERNAL_MESSAGE)


def header_mismatch(message: str) -> JsonRpcError:
    return JsonRpcError(codes.HEADER_MISMATCH, message)


def unsupported_version(requested: str, supported: list[str] | None = None,
                        message: str = "Unsupported protocol version") -> JsonRpcError:
    """-32022. ``supported`` defaults to every version the server speaks (both eras); a
    connection already fixed to one era passes that era's versions (so a client re-probing
    at a version from the list is never sent back to the one it was refused)."""
    return JsonRpcError(codes.UNSUPPORTED_PROTOCOL_VERSION, message,
                        {"supported": supported if supported is not None
                         else supported_versions(), "requested": requested})


def missing_capability(required: Mapping[str, Any]) -> JsonRpcError:
    return JsonRpcError(codes.MISSING_REQUIRED_CLIENT_CAPABILITY,
                        "Missing required client capability",
                        {"requiredCapabilities": dict(required)})


def rate_limited(retry_after_s: int, limit: str) -> JsonRpcError:
    """:data:`~toolkeeper.protocol.codes.RATE_LIMITED`: ``limit`` is ``rate`` or
    ``concurrency``; ``retry_after_s`` whole seconds (the reply's ``Retry-After``)."""
    return JsonRpcError(codes.RATE_LIMITED, "Rate limit exceeded",
                        {"retryAfterS": retry_after_s, "limit": limit})
