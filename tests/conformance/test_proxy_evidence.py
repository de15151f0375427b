"""Proxy evidence values (SPEC 5.5, 5.6): redacted before they exist, canonical JSON that is
stable across runs (times and volatile header values normalized out), a digest of it, and a
record of which redaction rule fired at which path, never the value."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import quote

import pytest
from proxy_views_kit import CALL, HEADERS, RESULT, make_exchange, with_header

from redaction_kit import CORPUS, Case, leaks
from toolkeeper.conformance import ExchangeEvidence
from toolkeeper.conformance.evidence import VOLATILE
from toolkeeper.contracts.canonical import canonical_json


def _call_with(arguments: dict[str, Any]) -> dict[str, Any]:
    return {**CALL, "params": {**CALL["params"], "arguments": arguments}}


def test_canonical_form_is_sorted_compact_json_of_the_views() -> None:
    exchange = make_exchange()
    assert exchange.canonical() == canonical_json(json.loads(exchange.canonical()))
    assert set(exchange.to_json()) == {"name", "ingress", "origin", "egress", "redactions"}


def test_times_and_volatile_headers_do_not_change_the_digest() -> None:
    first = make_exchange(headers=(*HEADERS, ("host", "127.0.0.1:40001"),
                                   ("date", "Tue, 01 Dec 2026 17:00:00 GMT")),
                          received_at=1.0, sent_at=2.0)
    second = make_exchange(headers=(*HEADERS, ("host", "127.0.0.1:40999"),
                                    ("date", "Wed, 02 Dec 2026 09:30:00 GMT")),
                           received_at=100.0, sent_at=250.0)
    assert first.canonical() == second.canonical()
    assert first.digest() == second.digest()
    assert ["host", VOLATILE] in first.to_json()["ingress"]["headers"]


def test_a_changed_header_value_changes_the_digest() -> None:
    changed = make_exchange(headers=with_header(HEADERS, "mcp-name", "other"))
    assert changed.digest() != make_exchange().digest()


def test_a_body_digest_is_of_the_json_value_not_its_spelling() -> None:
    spaced = make_exchange(origin=json.dumps(RESULT, indent=2).encode())
    assert spaced.origin is not None
    assert spaced.origin.body.digest == make_exchange().egress.body.digest


def test_bodies_are_json_text_or_empty() -> None:
    exchange = make_exchange(origin_status=202, origin=b"", egress_status=500,
                             egress=b"<html>oops</html>",
                             egress_headers=(("content-type", "text/html"),))
    assert exchange.origin is not None
    assert (exchange.ingress.body.kind, exchange.origin.body.kind,
            exchange.egress.body.kind) == ("json", "empty", "text")


def test_views_are_frozen() -> None:
    exchange = make_exchange()
    with pytest.raises(dataclasses.FrozenInstanceError):
        exchange.egress.status = 500  # type: ignore[misc]


def test_redaction_records_the_rule_at_the_path_and_never_the_value() -> None:
    jwt = next(c for c in CORPUS if c.name == "jwt").secrets[0]
    exchange = make_exchange(
        headers=(*HEADERS, ("authorization", "Bearer abcdefgh12345678")),
        request=_call_with({"password": "hunter2-Qx81vLm"}),
        egress=b"session " + jwt.encode(), egress_headers=(("content-type", "text/plain"),))
    redactions = {(p, r) for p, r in exchange.redactions}
    assert ("$.ingress.headers.authorization", "key.denylist") in redactions
    assert ("$.origin.forwardedBody.params.arguments.password", "key.denylist") in redactions
    assert ("$.egress.body", "value.jwt") in redactions
    record = json.dumps(exchange.to_json()["redactions"])
    assert "hunter2" not in record and "abcdefgh" not in record and jwt[:12] not in record


def _carrying(case: Case) -> ExchangeEvidence:
    """An exchange with ``case``'s secret in the ingress and origin bodies, in a forwarded
    header (single-line secrets) and in the route's query, and echoed in the origin's error."""
    arguments = case.arguments()
    text = json.dumps(arguments)
    headers = HEADERS
    if case.key is not None and case.key.replace("-", "").replace("_", "").isalnum():
        headers = (*headers, (case.key.lower(), case.secrets[0]))
    elif "\n" not in text:
        headers = (*headers, ("x-note", arguments.get("note", "")))
    echo = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": f"rejected {text}",
                                                  "data": arguments}}
    return make_exchange(headers=headers, request=_call_with(arguments), origin_status=400,
                         origin=echo, path=f"/mcp?access_token={quote(case.secrets[0])}")


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_no_secret_of_the_redaction_corpus_survives_into_the_canonical_form(case: Case) -> None:
    exchange = _carrying(case)
    written = exchange.canonical().decode() + repr(exchange)
    assert leaks(written, case) == []
    assert exchange.redactions
