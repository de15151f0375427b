"""Requests as a client sends them in each era: the body and the HTTP headers that must agree
with it (mcp-wire 1, 4.1; SPEC 5.2). Pure values; the client session and the conformance
harness build their golden requests here.

Modern: ``params._meta`` carries exactly the protocol version and the client capabilities
(plus the client's identity); ``MCP-Protocol-Version`` and ``Mcp-Method`` repeat the version and
method, ``Mcp-Name`` the routing name (base64-sentinel-encoded when it is not a plain value),
``Mcp-Param-*`` the arguments the tool's schema marks with ``x-mcp-header``. Legacy: the
negotiated version and the session id in headers (none before ``initialize``), no envelope.

A request the server sends the client (legacy only: ``ping``, ``roots/list``,
``sampling/createMessage``, ``elicitation/create``; mcp-wire 0) gets one answer whatever the
transport: :func:`server_request_answer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolkeeper.protocol.codes import METHOD_NOT_FOUND
from toolkeeper.protocol.envelope import (
    RequestId,
    error_message,
    notification_message,
    request_message,
    result_message,
)
from toolkeeper.protocol.headers import NAME_PARAMS, encode_header_value, param_headers
from toolkeeper.protocol.meta import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    PROTOCOL_VERSION_KEY,
)
from toolkeeper.protocol.versions import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

__all__ = [
    "CLIENT_INFO",
    "Request",
    "initialize_params",
    "legacy_headers",
    "legacy_notification",
    "legacy_request",
    "modern_request",
    "server_request_answer",
]

CLIENT_INFO: Final = {"name": "toolkeeper", "version": "0.1.0"}

Request = tuple[dict[str, Any], dict[str, str]]
"""A message and the HTTP headers that go with it (ignored by stdio)."""

_SERVER_REQUEST_RESULTS: Final[Mapping[str, Mapping[str, Any]]] = {"ping": {}}
"""The server requests the client serves, and their results. The client declares no capability
that invites any other (roots, sampling, elicitation), so the rest are -32601."""


def modern_request(request_id: RequestId, method: str, params: Mapping[str, Any] | None = None,
                   *, meta: Mapping[str, Any] | None = None,
                   capabilities: Mapping[str, Any] | None = None,
                   input_schema: dict[str, Any] | None = None,
                   version: str = LATEST_MODERN_VERSION,
                   client_info: Mapping[str, Any] = CLIENT_INFO) -> Request:
    """A modern request: caller's ``meta`` keys first, the envelope keys over them; with the
    tool's ``input_schema`` a ``tools/call`` gets its ``Mcp-Param-*`` headers."""
    body = dict(params or {})
    body["_meta"] = {**(meta or {}), PROTOCOL_VERSION_KEY: version,
                     CLIENT_CAPABILITIES_KEY: dict(capabilities or {}),
                     CLIENT_INFO_KEY: dict(client_info)}
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    name_key = NAME_PARAMS.get(method)
    name = body.get(name_key) if name_key is not None else None
    if isinstance(name, str):
        headers["Mcp-Name"] = encode_header_value(name)
    arguments = body.get("arguments")
    if input_schema is not None and method == "tools/call" and isinstance(arguments, dict):
        headers.update(param_headers(input_schema, arguments))
    return request_message(request_id, method, body), headers


def legacy_headers(version: str | None, session_id: str | None) -> dict[str, str]:
    """The headers of a legacy request after ``initialize`` (none before it)."""
    headers: dict[str, str] = {}
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    return headers


def legacy_request(request_id: RequestId, method: str, params: Mapping[str, Any] | None = None,
                   *, meta: Mapping[str, Any] | None = None, version: str | None = None,
                   session_id: str | None = None) -> Request:
    """A legacy request (``_meta`` only when the caller gives one)."""
    body = dict(params or {})
    if meta:
        body["_meta"] = dict(meta)
    return request_message(request_id, method, body), legacy_headers(version, session_id)


def legacy_notification(method: str, *, version: str | None, session_id: str | None
                        ) -> Request:
    return notification_message(method, {}), legacy_headers(version, session_id)


def initialize_params(client_info: Mapping[str, Any] = CLIENT_INFO,
                      capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``initialize`` offer: the latest handshake revision, and the client's optional
    capabilities (none unless given)."""
    return {"protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": dict(capabilities or {}), "clientInfo": dict(client_info)}


def server_request_answer(request: Mapping[str, Any]) -> dict[str, Any]:
    """The client's response to ``request``, a request the server sent: ``ping`` gets ``{}``,
    anything else -32601 with the method as data."""
    method = request.get("method")
    result = _SERVER_REQUEST_RESULTS.get(method) if isinstance(method, str) else None
    if result is not None:
        return result_message(request["id"], dict(result))
    return error_message(request["id"], {"code": METHOD_NOT_FOUND,
                                         "message": "Method not found", "data": method})
