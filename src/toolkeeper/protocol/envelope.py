"""JSON-RPC 2.0 messages as MCP uses them: decoding, classification and construction.

Pure values in and out, usable from both ends of a connection: a server classifies what it
receives with :func:`classify_inbound`, a client checks what comes back with
:func:`check_response`. Ids are integers or strings (never booleans, floats or null); ``params``
is an object when present (MCP never uses positional params); batches are not MCP messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.json_values import has_non_finite
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.codes import INVALID_REQUEST, PARSE_ERROR

__all__ = [
    "MAX_DEPTH",
    "InboundNotification",
    "InboundRequest",
    "InboundResponse",
    "RequestId",
    "check_response",
    "classify_inbound",
    "decode_message",
    "encode_message",
    "error_message",
    "is_request_id",
    "nesting_exceeds",
    "notification_message",
    "request_message",
    "result_message",
    "safe_id",
]

RequestId = int | str

MAX_DEPTH: Final = 64
"""Deepest JSON nesting accepted in one message. Deeper input is refused as a parse error
(-32700): the decoder declines to build it, whatever the content."""

_DECODER: Final = msgspec.json.Decoder()


def decode_message(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Decode one JSON text; invalid JSON or UTF-8, or nesting beyond ``max_depth``, raises a
    -32700 :class:`JsonRpcError`. Integers stay exact."""
    try:
        value = _DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise JsonRpcError(PARSE_ERROR, "Parse error") from None
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    # Cheap bound: nesting cannot exceed the number of openers, so most bodies skip the walk.
    if data.count(b"[") + data.count(b"{") > max_depth and _depth_exceeds(value, max_depth):
        raise JsonRpcError(PARSE_ERROR, "Parse error")
    return value


def nesting_exceeds(raw: bytes | str, max_depth: int = MAX_DEPTH) -> bool:
    """Whether ``raw`` nests arrays and objects deeper than ``max_depth`` (brackets inside
    strings not counted): why :func:`decode_message` refused it, when it did, so a reader
    can say "too deep" rather than "not JSON". A scan of the bytes, for the error path."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))
    return False


def encode_message(message: Mapping[str, Any]) -> bytes:
    """Canonical (sorted-key, compact) JSON bytes of a message; ``msgspec.Raw`` values are
    spliced in verbatim. A NaN or an infinity is a ValueError: JSON has no such number, and
    msgspec would write ``null``, silently changing the data (the walk that finds them runs
    only when the output holds a ``null``)."""
    encoded = canonical_json(message)
    if b"null" in encoded and has_non_finite(message):
        raise ValueError("NaN and infinities are not JSON numbers")
    return encoded


def is_request_id(value: object) -> bool:
    """A JSON-RPC id MCP accepts: an integer (not a boolean) or a string."""
    return type(value) is int or type(value) is str


def safe_id(message: object) -> RequestId | None:
    """``message.get("id")`` when it is a valid id, else None: the id an envelope error is
    answered with (seed 000: the id may be the thing that is malformed)."""
    if isinstance(message, dict):
        candidate = message.get("id")
        if is_request_id(candidate):
            return candidate
    return None


# Inbound classifications are built for every message: immutable msgspec Structs (like frozen
# dataclasses, but built about ten times faster).


class InboundRequest(msgspec.Struct, frozen=True):
    """A well-formed request: id, method and the params object (``{}`` when absent)."""

    id: RequestId
    method: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class InboundNotification(msgspec.Struct, frozen=True):
    """A well-formed notification (no ``id`` member)."""

    method: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


class InboundResponse(msgspec.Struct, frozen=True):
    """A response or error object sent *to* us: the answer to a request the server sent its
    client (legacy era), routed by the transport to whoever awaits that id (else dropped).
    Exactly one of ``result`` and ``error`` was present (either may be any JSON value)."""

    id: Any
    result: Any = None
    error: Any = None


def _invalid(message: str) -> JsonRpcError:
    return JsonRpcError(INVALID_REQUEST, message)


def classify_inbound(value: Any) -> InboundRequest | InboundNotification | InboundResponse:
    """Classify one decoded message; anything that is not a single valid request,
    notification or response raises a -32600 :class:`JsonRpcError`."""
    if not isinstance(value, dict):
        raise _invalid("Body must be a single JSON-RPC request or notification object")
    if value.get("jsonrpc") != "2.0":
        raise _invalid('"jsonrpc" must be exactly "2.0"')
    if "method" not in value:
        if "id" in value and ("result" in value) != ("error" in value):
            return InboundResponse(value["id"], value.get("result"), value.get("error"))
        raise _invalid('a request needs a string "method"')
    method = value["method"]
    if not isinstance(method, str) or not method:
        raise _invalid('"method" must be a non-empty string')
    if "result" in value or "error" in value:
        raise _invalid("a request must not carry result or error")
    params = value.get("params", {})
    if not isinstance(params, dict):
        raise _invalid('"params" must be an object when present')
    if "id" not in value:
        return InboundNotification(method, params)
    request_id = value["id"]
    if not is_request_id(request_id):
        raise _invalid('"id" must be an integer or a string')
    return InboundRequest(request_id, method, params)


def request_message(request_id: RequestId, method: str, params: Mapping[str, Any] | None = None
                    ) -> dict[str, Any]:
    """A request object (the client side of the same rules)."""
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        out["params"] = dict(params)
    return out


def notification_message(method: str, params: Mapping[str, Any] | None = None
                         ) -> dict[str, Any]:
    """A notification object (no id)."""
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        out["params"] = dict(params)
    return out


def result_message(request_id: RequestId, result: Mapping[str, Any]) -> dict[str, Any]:
    """A success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: RequestId | None, error: Mapping[str, Any]) -> dict[str, Any]:
    """An error response; ``"id": null`` is written explicitly when the id is unknown."""
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def check_response(value: Any, request_id: RequestId) -> list[str]:
    """Problems with a response to ``request_id`` (empty when valid): ``jsonrpc``, the id equal
    in value *and* JSON type, exactly one of result/error, integer code and string message."""
    if not isinstance(value, dict):
        return ["$: a response must be a JSON object"]
    problems: list[str] = []
    if value.get("jsonrpc") != "2.0":
        problems.append('$.jsonrpc: must be exactly "2.0"')
    got = value.get("id", _MISSING)
    if got is _MISSING or type(got) is not type(request_id) or got != request_id:
        problems.append("$.id: must equal the request id in value and JSON type")
    has_result, has_error = "result" in value, "error" in value
    if has_result == has_error:
        problems.append("$: must carry exactly one of result and error")
    if has_result and not isinstance(value["result"], dict):
        problems.append("$.result: must be an object")
    if has_error:
        error = value["error"]
        if not isinstance(error, dict):
            problems.append("$.error: must be an object")
        else:
            if type(error.get("code")) is not int:
                problems.append("$.error.code: must be an integer")
            if not isinstance(error.get("message"), str):
                problems.append("$.error.message: must be a string")
    return problems


_MISSING: Final = object()
