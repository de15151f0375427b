"""The mirror judgment of proxy evidence agrees with the gateway's own header rung (protocol's
check_routing_headers): one set of wire judgments, named per header instead of raised."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from proxy_views_kit import CALL, HEADERS, make_exchange, with_header

from toolkeeper.conformance.mirror import mirror_disagreements
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.headers import HeaderView, check_routing_headers

_SENTINEL = "=?base64?" + base64.b64encode(b"payments.lookup").decode() + "?="
VARIANTS: dict[str, tuple[tuple[tuple[str, str], ...], list[str]]] = {
    "all agree": (HEADERS, []),
    "name differs": (with_header(HEADERS, "mcp-name", "other"), ["mcp-name"]),
    "name sentinel-encoded": (with_header(HEADERS, "mcp-name", _SENTINEL), []),
    "name sentinel not canonical": (with_header(HEADERS, "mcp-name", _SENTINEL[:-3] + "x?="),
                                    ["mcp-name"]),
    "name absent": (with_header(HEADERS, "mcp-name", None), ["mcp-name"]),
    "method differs": (with_header(HEADERS, "mcp-method", "tools/list"), ["mcp-method"]),
    "method absent": (with_header(HEADERS, "mcp-method", None), ["mcp-method"]),
    "version differs": (with_header(HEADERS, "mcp-protocol-version", "2099-01-01"),
                        ["mcp-protocol-version"]),
    "method repeated": ((*HEADERS, ("mcp-method", "tools/call")), ["mcp-method"]),
    "method and name differ": (with_header(with_header(HEADERS, "mcp-method", "x"),
                                           "mcp-name", "y"), ["mcp-method", "mcp-name"]),
}


def _protocol_refuses(headers: tuple[tuple[str, str], ...], body: dict[str, Any]) -> bool:
    params = body["params"]
    try:
        check_routing_headers(HeaderView.from_pairs(headers), body["method"], params,
                              params["_meta"]["io.modelcontextprotocol/protocolVersion"])
    except JsonRpcError as exc:
        assert exc.rpc_code == -32020
        return True
    return False


@pytest.mark.parametrize("variant", list(VARIANTS), ids=list(VARIANTS))
def test_mirror_names_the_headers_the_gateway_would_refuse(variant: str) -> None:
    headers, expected = VARIANTS[variant]
    view = make_exchange(headers=headers).ingress
    found = mirror_disagreements(view.headers, view.body)
    assert list(found) == expected
    assert bool(found) == _protocol_refuses(headers, CALL)


def test_a_null_body_name_is_not_compared() -> None:
    body = {**CALL, "params": {**CALL["params"], "name": None}}
    view = make_exchange(headers=with_header(HEADERS, "mcp-name", "other"), request=body).ingress
    assert mirror_disagreements(view.headers, view.body) == ()
