"""Mirrored routing headers against the JSON-RPC body at one hop (mcp-wire 4.1, 4.4 rows 9 and
11-13): which of ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` disagree with the
body they mirror. The comparison rules are the protocol core's (raw version and method, a
decoded ``Mcp-Name``, compared only when the body value is non-null, a repeated routing header
refused); this module only names each disagreement instead of raising the first, so proxy
evidence can say which header a hop changed.

A hop whose request is not modern (no ``MCP-Protocol-Version`` header, or a handshake version:
the legacy transport, mcp-wire 13.1) mirrors nothing, and neither does a body that is not a
JSON-RPC request object: the origin's envelope rungs judge those.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

from toolkeeper.conformance.evidence import Body, Headers
from toolkeeper.protocol.headers import (
    MCP_METHOD,
    MCP_NAME,
    MCP_PROTOCOL_VERSION,
    NAME_PARAMS,
    HeaderView,
    decode_header_value,
    is_plain_header_value,
)
from toolkeeper.protocol.meta import PROTOCOL_VERSION_KEY
from toolkeeper.protocol.versions import HANDSHAKE_VERSIONS

__all__ = ["MIRRORS", "Mirror", "mirror_disagreements"]

_ABSENT: Final = object()


class Mirror(NamedTuple):
    """One mirrored header: its name, the body path it mirrors (for the evidence), the body value
    it must equal (``_ABSENT``: nothing to compare) and whether the header is decoded first."""

    header: str
    path: str
    value: Callable[[str, Mapping[str, Any]], Any]
    decoded: bool


def _version(method: str, params: Mapping[str, Any]) -> Any:
    meta = params.get("_meta")
    value = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    return _ABSENT if value is None else value  # a missing envelope key is -32602, not a mirror


def _name(method: str, params: Mapping[str, Any]) -> Any:
    key = NAME_PARAMS.get(method)
    value = None if key is None else params.get(key)
    return _ABSENT if value is None else value  # mcp-wire 13.5: a null body value is not compared


MIRRORS: Final[tuple[Mirror, ...]] = (
    Mirror(MCP_PROTOCOL_VERSION, f"$.params._meta['{PROTOCOL_VERSION_KEY}']", _version, False),
    Mirror(MCP_METHOD, "$.method", lambda method, params: method, False),
    Mirror(MCP_NAME, "$.params.<name>", _name, True),
)
"""The rows, in the order the server's ladder checks them."""


def _matches(mirror: Mirror, raw: str | None, expected: Any) -> bool:
    if raw is None:
        return False
    if mirror.decoded:
        return bool(decode_header_value(raw) == expected)
    return raw == expected and is_plain_header_value(raw)


def mirror_disagreements(headers: Headers, body: Body) -> tuple[str, ...]:
    """The mirrored headers (lowercase names) that disagree with ``body`` at a hop: absent,
    repeated, or not equal to the body value; empty when the hop mirrors nothing."""
    view = HeaderView.from_pairs(headers)
    version = view.get(MCP_PROTOCOL_VERSION)
    request = body.value if body.kind == "json" else None
    if (version is None or version in HANDSHAKE_VERSIONS or not isinstance(request, dict)
            or not isinstance(request.get("method"), str)):
        return ()
    method: str = request["method"]
    params = request.get("params")
    params = params if isinstance(params, dict) else {}
    found: list[str] = []
    for mirror in MIRRORS:
        expected = mirror.value(method, params)
        if expected is _ABSENT:
            continue
        if view.repeats(mirror.header) or not _matches(mirror, view.get(mirror.header), expected):
            found.append(mirror.header)
    return tuple(found)
