"""Hand-built proxy exchanges for the detector and evidence tests: a modern ``tools/call``
through a transparent proxy by default, each hop's headers, bodies and statuses overridable."""

from __future__ import annotations

import json
from typing import Any

from toolkeeper.conformance import ExchangeEvidence, RawRequest, RawResponse, build_exchange

__all__ = ["CALL", "ERROR_32020", "HEADERS", "RESULT", "body", "make_exchange", "with_header"]

HEADERS: tuple[tuple[str, str], ...] = (
    ("content-type", "application/json"), ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"),
    ("mcp-name", "payments.lookup"))
CALL: dict[str, Any] = {
    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {"name": "payments.lookup", "arguments": {"reference": "PMT-771"},
               "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {}}}}
RESULT: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "result": {
    "content": [{"type": "text", "text": "PMT-771: HELD"}], "isError": False,
    "resultType": "complete"}}
ERROR_32020: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "error": {
    "code": -32020, "message": "mcp-name header does not match the request body's 'name'"}}
_JSON = (("content-type", "application/json"),)


def body(value: Any) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


def with_header(headers: tuple[tuple[str, str], ...], name: str, value: str | None
                ) -> tuple[tuple[str, str], ...]:
    """``headers`` with ``name`` replaced by ``value`` (None: dropped)."""
    kept = tuple((n, v) for n, v in headers if n != name)
    return kept if value is None else (*kept, (name, value))


def make_exchange(*, headers: tuple[tuple[str, str], ...] = HEADERS, request: Any = CALL,
                  forwarded_headers: tuple[tuple[str, str], ...] | None = None,
                  forwarded: bool = True, origin_status: int = 200, origin: Any = RESULT,
                  egress_status: int | None = None, egress: Any = None,
                  egress_headers: tuple[tuple[str, str], ...] = _JSON,
                  origin_headers: tuple[tuple[str, str], ...] = _JSON,
                  received_at: float = 0.0, sent_at: float = 0.0, path: str = "/mcp",
                  name: str = "case") -> ExchangeEvidence:
    """One exchange; by default the proxy forwards the request as it came and returns the
    origin's answer unchanged."""
    sent = RawRequest("POST", path, headers, body(request))
    fwd = RawRequest("POST", path, headers if forwarded_headers is None else forwarded_headers,
                     body(request))
    answered = RawResponse(origin_status, origin_headers, body(origin))
    response = RawResponse(origin_status if egress_status is None else egress_status,
                           egress_headers, body(origin if egress is None else egress))
    return build_exchange(name, sent, response, forwarded=fwd if forwarded else None,
                          answered=answered if forwarded else None,
                          received_at=received_at, sent_at=sent_at)
