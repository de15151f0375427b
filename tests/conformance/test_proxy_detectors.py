"""Proxy detectors (SPEC 5.5) on hand-built views: each row is an exchange through a proxy and
the findings ``(id, hop)`` it must yield, no more."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from proxy_views_kit import CALL, ERROR_32020, HEADERS, RESULT, make_exchange, with_header

from toolkeeper.conformance import DETECTORS, DeploymentAssertions, detect

COLLAPSED = "proxy.collapsed_protocol_error"
CHANGED = "proxy.changed_body"
MIRRORED = "proxy.mirrored_header_mismatch"
CONTENT_TYPE = "deployment.content_type"
ACCEPT = "deployment.accept"

HTML = b"<html><body><h1>500 Internal Server Error</h1></body></html>"
_HTML_HEADERS = (("content-type", "text/html"),)
_LEGACY = tuple((n, v) for n, v in HEADERS if not n.startswith("mcp-"))


def _error(code: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "refused"}}


def _rewritten(is_error: bool) -> dict[str, Any]:
    return {**RESULT, "result": {**RESULT["result"], "isError": is_error}}


def _other_tool() -> dict[str, Any]:
    return {**CALL, "params": {**CALL["params"], "name": "db.query"}}


CASES: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "a transparent proxy yields nothing": ({}, []),
    "a header mismatch the origin refused with -32020 and the proxy passed is the protocol working":
        ({"headers": with_header(HEADERS, "mcp-name", "other"), "origin_status": 400,
          "origin": ERROR_32020}, []),
    "an origin 400 JSON-RPC error served as an HTML 500 is collapsed and a changed body":
        ({"origin_status": 400, "origin": _error(-32602), "egress_status": 500,
          "egress": HTML, "egress_headers": _HTML_HEADERS}, [(COLLAPSED, "egress"),
                                                             (CHANGED, "egress")]),
    "an origin 404 -32601 served as a 502 with the same body is collapsed only":
        ({"origin_status": 404, "origin": _error(-32601), "egress_status": 502},
         [(COLLAPSED, "egress")]),
    "an origin 400 that is not a JSON-RPC error is not a collapsed protocol error":
        ({"origin_status": 400, "origin": b"bad request", "origin_headers": _HTML_HEADERS,
          "egress_status": 500, "egress": HTML, "egress_headers": _HTML_HEADERS},
         [(CHANGED, "egress")]),
    "an origin 200 error passed on as 200 yields nothing":
        ({"origin": _error(-32603)}, []),
    "a rewritten result field is a changed body":
        ({"egress": _rewritten(True)}, [(CHANGED, "egress")]),
    "the same JSON value reserialized (key order, spacing) is not a changed body":
        ({"egress": b'{"result": {"resultType": "complete", "isError": false, "content": '
                    b'[{"text": "PMT-771: HELD", "type": "text"}]}, "id": 1, "jsonrpc": "2.0"}'},
         []),
    "a mismatch the origin executed is reported at both hops":
        ({"headers": with_header(HEADERS, "mcp-name", "other")},
         [(MIRRORED, "ingress"), (MIRRORED, "origin")]),
    "a proxy that rewrites Mcp-Name is reported at the origin hop even when the origin refuses":
        ({"forwarded_headers": with_header(HEADERS, "mcp-name", "db.query"),
          "origin_status": 400, "origin": ERROR_32020}, [(MIRRORED, "origin")]),
    "a proxy that authorizes one tool while the origin executes another":
        ({"forwarded_headers": with_header(HEADERS, "mcp-name", "db.query")},
         [(MIRRORED, "origin")]),
    "a proxy that drops Mcp-Method is reported at the origin hop":
        ({"forwarded_headers": with_header(HEADERS, "mcp-method", None), "origin_status": 400,
          "origin": ERROR_32020}, [(MIRRORED, "origin")]),
    "a repeated Mcp-Name the origin executed is a mismatch even with equal copies":
        ({"headers": (*HEADERS, ("mcp-name", "payments.lookup"))},
         [(MIRRORED, "ingress"), (MIRRORED, "origin")]),
    "a body naming another tool than Mcp-Name, executed, is a mismatch":
        ({"request": _other_tool()}, [(MIRRORED, "ingress"), (MIRRORED, "origin")]),
    "a sentinel-encoded Mcp-Name equal to the body agrees":
        ({"headers": with_header(HEADERS, "mcp-name", "=?base64?" + base64.b64encode(
            b"payments.lookup").decode() + "?=")}, []),
    "a legacy request (no MCP-Protocol-Version) mirrors nothing":
        ({"headers": _LEGACY}, []),
    "a handshake-version request mirrors nothing":
        ({"headers": (*_LEGACY, ("mcp-protocol-version", "2025-11-25"))}, []),
    "a mismatch the proxy answered itself (nothing forwarded) executed nothing":
        ({"headers": with_header(HEADERS, "mcp-name", "other"), "forwarded": False,
          "egress_status": 403, "egress": _error(-32020)}, []),
    "a body that is not a JSON-RPC request mirrors nothing":
        ({"request": b"not json"}, []),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_detectors_yield_exactly_the_expected_findings(case: str) -> None:
    overrides, expected = CASES[case]
    findings = detect(make_exchange(**overrides))
    assert [(f.id, f.hop) for f in findings] == expected


def test_seed_findings_carry_the_issue_titles() -> None:
    titles = {row.id: row.title for row in DETECTORS}
    assert titles[COLLAPSED] == "proxy collapsed a protocol error into HTTP 500"
    assert titles[CHANGED] == "proxy changed the origin JSON-RPC body"
    assert len(titles) == len(DETECTORS)


def test_collapsed_finding_records_statuses_and_the_origin_code() -> None:
    [finding, _] = detect(make_exchange(
        origin_status=404, origin=_error(-32601), egress_status=500, egress=HTML,
        egress_headers=_HTML_HEADERS))
    assert finding.to_json()["detail"] == {"originStatus": 404, "originCode": -32601,
                                           "egressStatus": 500}


def test_changed_body_finding_names_the_json_paths_that_differ() -> None:
    [finding] = detect(make_exchange(egress={**_rewritten(True), "extra": 1}))
    assert finding.detail["paths"] == ["$.extra", "$.result.isError"]
    assert finding.detail["originDigest"] != finding.detail["egressDigest"]


def test_mirrored_finding_names_the_headers_and_whether_the_proxy_introduced_them() -> None:
    [finding] = detect(make_exchange(
        forwarded_headers=with_header(with_header(HEADERS, "mcp-name", "x"), "mcp-method", "y"),
        origin_status=400, origin=ERROR_32020))
    assert finding.detail == {"headers": ["mcp-method", "mcp-name"], "introduced": True}


ASSERTIONS = DeploymentAssertions(content_types=("application/json", "text/event-stream"),
                                  accept=("application/json", "text/event-stream"))

DEPLOYMENT_CASES: dict[str, tuple[dict[str, Any], list[tuple[str, str]]]] = {
    "an HTML egress body is outside the deployment's content types":
        ({"egress": HTML, "egress_headers": _HTML_HEADERS},
         [(CHANGED, "egress"), (CONTENT_TYPE, "egress")]),
    "a content type with parameters is judged by its media type":
        ({"egress_headers": (("content-type", "application/json; charset=utf-8"),)}, []),
    "an empty egress body (a 202) has no content type to judge":
        ({"origin_status": 202, "origin": b"", "egress_headers": ()}, []),
    "a proxy that drops text/event-stream from Accept is reported at the origin hop":
        ({"forwarded_headers": with_header(HEADERS, "accept", "application/json")},
         [(ACCEPT, "origin")]),
    "a client that sends no Accept is reported at both hops":
        ({"headers": with_header(HEADERS, "accept", None)},
         [(ACCEPT, "ingress"), (ACCEPT, "origin")]),
}


@pytest.mark.parametrize("case", list(DEPLOYMENT_CASES), ids=list(DEPLOYMENT_CASES))
def test_deployment_assertions_yield_exactly_the_expected_findings(case: str) -> None:
    overrides, expected = DEPLOYMENT_CASES[case]
    findings = detect(make_exchange(**overrides), ASSERTIONS)
    assert [(f.id, f.hop) for f in findings] == expected


def test_deployment_assertions_are_off_unless_configured() -> None:
    exchange = make_exchange(headers=with_header(HEADERS, "accept", None), egress=HTML,
                             egress_headers=_HTML_HEADERS)
    assert [f.id for f in detect(exchange)] == [CHANGED]
