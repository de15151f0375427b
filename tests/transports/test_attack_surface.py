"""The gateway's HTTP surface and registry inputs, probed as an attacker.

Findings are strict xfails (each names what is wrong); the probes that held are kept unmarked.
Requests are driven in-process (a constructed ASGI scope, on an app with the express lane and
one without) where the attack lives in header bytes no HTTP parser would let through, and over
real HTTP (uvicorn on 127.0.0.1, the module's ``served`` fixture) where the parser is the point.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from http_served_kit import Served
from stream_kit import Pairs, Sent, body_of, sent_by, status

from toolkeeper.contracts.spec import DataClassification, ToolSpec, spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.errors import ContractError, StoreError
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import ToolHandlers, build_app
from toolkeeper.transports import HttpConfig, StreamableHTTPApp

VERSION: Final = "2026-07-28"
META: Final[dict[str, Any]] = {"io.modelcontextprotocol/protocolVersion": VERSION,
                               "io.modelcontextprotocol/clientCapabilities": {}}
HOST: Final = (b"host", b"127.0.0.1:8000")
JSON_TYPE: Final = (b"content-type", b"application/json")
ACCEPT: Final = (b"accept", b"application/json, text/event-stream")
LIST_BODY: Final = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                               "params": {"_meta": META}}).encode()
INITIALIZE: Final = json.dumps({
    "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "hunt", "version": "1"}}}).encode()
INITIALIZED: Final = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
SECRET: Final = "s3cr3t-Pa55"
CARD: Final = "4111111111111111"

LANES: Final = pytest.mark.parametrize("express", [True, False], ids=["express", "ladder"])


# --- the in-process kit --------------------------------------------------------------------


def _spec(name: str, properties: dict[str, Any] | None = None) -> ToolSpec:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (hunt)",
        "inputSchema": {"type": "object", "properties": properties or {}},
        "dataClassification": "public", "sideEffect": "read"})


def hunt_app(*, express: bool = True, handlers: ToolHandlers | None = None,
             registry: Registry | None = None, **options: Any) -> tuple[StreamableHTTPApp, Any]:
    """The demo estate (plus ``handlers``' tools, when given) behind an in-process app."""
    if registry is None:
        registry = Registry.open("memory:")
        install_demo(registry)
    merged = demo_handlers()
    if handlers is not None:
        merged.merge(handlers)
    app, gateway = build_app(registry, merged, http=HttpConfig(keepalive_s=30), **options)
    app.express = express
    return app, gateway


def exchange(app: StreamableHTTPApp, pairs: Pairs, body: bytes, method: str = "POST") -> Sent:
    """Every ASGI message the app sent for one request."""
    return sent_by(app, pairs, body, method, bound_s=10.0)


def modern_pairs(method: str, name: str | None = None) -> Pairs:
    pairs = [HOST, JSON_TYPE, ACCEPT, (b"mcp-protocol-version", VERSION.encode()),
             (b"mcp-method", method.encode())]
    if name is not None:
        pairs.append((b"mcp-name", name.encode()))
    return pairs


def call_body(name: str, arguments: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": META}}).encode()


def with_header(name: bytes, value: bytes) -> Pairs:
    """The modern tools/list headers with ``name`` replaced by (or added as) ``value``."""
    return [p for p in modern_pairs("tools/list") if p[0] != name] + [(name, value)]


# --- 1. DNS rebinding: Host and Origin (held) ------------------------------------------------

@LANES
@pytest.mark.parametrize(("host", "expected"), [
    (b"LocalHost:8000", 200), (b"[::1]", 200), (b" localhost:80 ", 200),
    (b"localhost.", 421), (b"localhost.:80", 421), (b"[::ffff:127.0.0.1]:80", 421),
    (b"127.1", 421), (b"2130706433", 421), (b"0x7f.0.0.1", 421),
    (b"127.0.0.1:+80", 421), (b"127.0.0.1:-1", 421), (b"127.0.0.1: 80", 421),
    (b"127.0.0.1:1_0", 421), (b"a@127.0.0.1", 421), (b"127.0.0.1@evil.com", 421),
    (b"127.0.0.1:80\x00", 421), (b"127.0.0.1\r\nX-A: b", 421), (b"l\xd0\xbecalhost", 421),
    (b"localhost%2e", 421), (b"", 421),
], ids=repr)
def test_only_loopback_names_pass_the_default_host_check(express: bool, host: bytes,
                                                         expected: int) -> None:
    app, _ = hunt_app(express=express)
    assert status(exchange(app, with_header(b"host", host), LIST_BODY)) == expected


@LANES
@pytest.mark.parametrize(("origin", "expected"), [
    (b"HTTP://LOCALHOST", 200), (b"http://[::1]", 200),
    (b"null", 403), (b"", 403), (b"http://localhost/", 403), (b"http://localhost:80/path", 403),
    (b"http://localhost?x=1", 403), (b"http://localhost.", 403), (b"ws://localhost", 403),
    (b"http://127.0.0.1:80@evil.com", 403), (b"http://localhost%2eevil.com", 403),
    (b"http://localhost, http://evil.com", 403), (b"http://localhost:80\x00", 403),
], ids=repr)
def test_only_loopback_origins_pass_the_default_origin_check(express: bool, origin: bytes,
                                                             expected: int) -> None:
    app, _ = hunt_app(express=express)
    assert status(exchange(app, with_header(b"origin", origin), LIST_BODY)) == expected


@LANES
@pytest.mark.parametrize("extra", [
    [(b"host", b"evil.com")], [(b"Host", b"evil.com")], [(b"HOST", b"127.0.0.1")],
    [(b"origin", b"http://localhost"), (b"Origin", b"http://evil.com")],
], ids=["host", "host-case", "host-same-value", "origin-case"])
def test_a_repeated_host_or_origin_in_any_letter_case_is_400(express: bool,
                                                             extra: Pairs) -> None:
    app, _ = hunt_app(express=express)
    assert status(exchange(app, modern_pairs("tools/list") + extra, LIST_BODY)) == 400


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "OPTIONS"])
def test_every_method_meets_the_host_check_before_anything_else(method: str) -> None:
    app, _ = hunt_app()
    sent = exchange(app, [*with_header(b"host", b"evil.com"), (b"mcp-session-id", b"x")],
                    b"", method)
    assert status(sent) == 421


# --- 2. nothing secret or internal on the wire ------------------------------------------------

def _raising_handlers() -> ToolHandlers:
    handlers = ToolHandlers()

    @handlers.tool("hunt.fails")
    def fails(arguments: dict[str, Any]) -> str:
        raise RuntimeError("upstream said: connect postgresql://svc:hunter2@db/prod failed "
                           "at /srv/app/secret_module.py")

    return handlers


@LANES
def test_a_failing_handler_sends_neither_its_text_nor_a_path_and_logs_no_argument(
        express: bool, caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry.open("memory:")
    install_demo(registry)
    registry.publish(_spec("hunt.fails", {"card": {"type": "string"}}))
    app, gateway = hunt_app(express=express, registry=registry, handlers=_raising_handlers())
    with caplog.at_level(logging.DEBUG):
        sent = exchange(app, modern_pairs("tools/call", "hunt.fails"),
                        call_body("hunt.fails", {"card": CARD}))
    wire = body_of(sent)
    assert status(sent) == 200
    assert json.loads(wire)["result"]["isError"] is True
    for leak in (b"hunter2", b"postgresql", b"/srv/app", b"Traceback", b"RuntimeError",
                 CARD.encode()):
        assert leak not in wire
    assert CARD not in caplog.text  # the exception is logged; the arguments are not
    assert [r.outcome for r in gateway.call_log.records] == ["exception"]


@LANES
def test_a_registry_that_fails_mid_request_is_a_generic_internal_error(
        express: bool, tmp_path: Path) -> None:
    registry = Registry.open(f"sqlite:///{tmp_path / 'registry.db'}")
    install_demo(registry)
    app, _ = hunt_app(express=express, registry=registry)
    registry.close()
    for pairs, body in ((modern_pairs("tools/list"), LIST_BODY),
                        (modern_pairs("tools/call", "tickets.create"),
                         call_body("tickets.create", {"title": "x"}))):
        sent = exchange(app, pairs, body)
        assert status(sent) == 200
        assert json.loads(body_of(sent))["error"] == {"code": -32603,
                                                      "message": "Internal error"}


@pytest.mark.parametrize("url", [
    f"postgresql+psycopg://svc:{SECRET}@127.0.0.1:1/db",
    f"postgresql://svc:{SECRET}%zz@127.0.0.1:1/db",
], ids=["unsupported-scheme", "bad-percent-escape"])
def test_a_registry_url_password_never_appears_in_the_store_error(url: str) -> None:
    with pytest.raises(StoreError) as caught:
        Registry.open(url)
    assert SECRET not in json.dumps(caught.value.to_dict())
    assert SECRET not in str(caught.value)


def test_a_session_id_with_cr_lf_is_not_found_and_never_echoed() -> None:
    app, _ = hunt_app()
    sent = exchange(app, [HOST, JSON_TYPE, ACCEPT,
                          (b"mcp-session-id", b"x\r\nSet-Cookie: a=b"),
                          (b"mcp-protocol-version", b"2025-11-25")],
                    b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert status(sent) == 404
    for _, value in sent[0]["headers"]:
        assert b"\r" not in value and b"\n" not in value and b"Set-Cookie" not in value


def test_an_invalid_arguments_answer_is_not_an_amplifier() -> None:
    app, _ = hunt_app()
    arguments = {"title": "x", **{f"a{i}": 0 for i in range(20_000)}}
    body = call_body("tickets.create", arguments)
    sent = exchange(app, modern_pairs("tools/call", "tickets.create"), body)
    result = json.loads(body_of(sent))["result"]
    assert result["isError"] is True
    listed = result["structuredContent"]["errors"]
    assert [e["path"] for e in listed] == sorted(f"$.a{i}" for i in range(20_000))[:50]
    # only the first 1,000 values are checked (the title and 999 extra keys, in sorted
    # order): the rest are not, and the answer says so
    structured = result["structuredContent"]
    assert (structured["omitted"], structured["truncated"]) == (1_000 - 1 - 50, True)
    assert len(body_of(sent)) <= max(2 * len(body), 65_536)


# --- 3. real HTTP: framing oddities (uvicorn + httptools; held) -------------------------------

def _raw_exchange(url: str, request: bytes) -> bytes:
    """Send raw bytes to the served endpoint; the response up to close (5 s bound)."""
    authority = url.split("//", 1)[1].split("/", 1)[0]
    host, port = authority.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _raw_request(*, host: bytes | None = b"127.0.0.1", extra: bytes = b"",
                 version: bytes = b"HTTP/1.1", framing: bytes | None = None) -> bytes:
    head = (b"POST /mcp " + version + b"\r\n"
            + (b"Host: " + host + b"\r\n" if host is not None else b"")
            + b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
              b"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"
              b"Connection: close\r\n" + extra)
    length = str(len(LIST_BODY)).encode()
    if framing is None:
        framing = b"Content-Length: " + length + b"\r\n"
    return head + framing + b"\r\n" + LIST_BODY


@pytest.mark.parametrize(("request_bytes", "expected"), [
    (_raw_request(framing=b"Content-Length: %d\r\nContent-Length: %d\r\n"
                  % (len(LIST_BODY), len(LIST_BODY))), b"400"),
    (_raw_request(framing=b"Content-Length: %d\r\nContent-Length: 5\r\n" % len(LIST_BODY)),
     b"400"),
    (_raw_request(framing=b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"), b"400"),
    (_raw_request(extra=b"Host: evil.com\r\n"), b"400"),
    (_raw_request(host=b"evil.com\r\n 127.0.0.1"), b"400"),
    (_raw_request(host=None, version=b"HTTP/1.0"), b"421"),
    (_raw_request(extra=b"".join(b"X-A%d: b\r\n" % i for i in range(2000))), b"200"),
], ids=["content-length-twice", "content-lengths-differ", "te-and-cl", "two-hosts",
        "obs-fold-host", "http10-without-host", "2000-headers"])
def test_request_framing_attacks_over_real_http_are_refused(served: Served,
                                                           request_bytes: bytes,
                                                           expected: bytes) -> None:
    response = _raw_exchange(served.url, request_bytes)
    assert response.split(b"\r\n", 1)[0].split(b" ")[1] == expected
    assert b"Traceback" not in response


# --- 4. registry inputs -----------------------------------------------------------------------

@pytest.mark.parametrize("name", [
    "x'; DROP TABLE contracts;--", "payment\u0455.lookup", "a" * 129, "", "a\nb", "tool name",
    "t\u200bool", "payments.lookup\n",
], ids=["sql", "cyrillic-homoglyph", "129-chars", "empty", "newline", "space",
        "zero-width", "trailing-newline"])
def test_contract_parsing_refuses_names_outside_the_mcp_tool_name_rules(name: str) -> None:
    document = _spec("ok").content_mapping() | {"name": name}
    with pytest.raises(ContractError) as caught:
        spec_from_mapping(document)
    assert caught.value.code in {"contract.name", "contract.empty"}


@pytest.mark.parametrize("version", ["1.0.0'; --", "1.0.0-\u0661", "1.0.0+a b", "\u0661.0.0"])
def test_contract_parsing_refuses_versions_outside_semver(version: str) -> None:
    document = _spec("ok").content_mapping() | {"version": version}
    with pytest.raises(ContractError) as caught:
        spec_from_mapping(document)
    assert caught.value.code == "contract.version"


def test_publishing_a_spec_whose_name_breaks_the_rules_is_refused_and_the_store_stays_readable(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    registry = Registry.open(url)
    try:
        registry.publish(_spec("ok"))
        with pytest.raises(ContractError) as caught:
            registry.publish(dataclasses.replace(_spec("ok"), name="bad name"))
        assert caught.value.code == "contract.name"
    finally:
        registry.close()
    reopened = Registry.open(url)
    try:
        assert tuple(reopened.names()) == ("ok",)
    finally:
        reopened.close()


# --- 5. the call log ---------------------------------------------------------------------------

def test_the_call_log_digest_does_not_depend_on_a_password_argument() -> None:
    registry = Registry.open("memory:")
    registry.publish(_spec("hunt.login", {"user": {"type": "string"},
                                          "password": {"type": "string"}}))
    handlers = ToolHandlers()

    @handlers.tool("hunt.login")
    def login(arguments: dict[str, Any]) -> str:
        return "ok"

    app, gateway = hunt_app(registry=registry, handlers=handlers)
    for password in (SECRET, "another-one"):
        sent = exchange(app, modern_pairs("tools/call", "hunt.login"),
                        call_body("hunt.login", {"user": "u", "password": password}))
        assert json.loads(body_of(sent))["result"]["isError"] is False
    digests = {r.arguments_digest for r in gateway.call_log.records}
    assert len(digests) == 1


# --- legacy sessions and the principal -------------------------------------------------------

def _by_authorization(facts: Any) -> Principal:
    tenant = facts.headers.get("authorization") or "anonymous"
    return Principal(tenant, frozenset({"tickets.write", "payments.read", "db.query"}),
                     DataClassification.RESTRICTED)


def _alice_session(app: StreamableHTTPApp) -> bytes:
    alice = (b"authorization", b"alice")
    sent = exchange(app, [HOST, JSON_TYPE, ACCEPT, alice], INITIALIZE)
    session: bytes = dict(sent[0]["headers"])[b"mcp-session-id"]
    sent = exchange(app, [HOST, JSON_TYPE, ACCEPT, alice, (b"mcp-session-id", session)],
                    INITIALIZED)
    assert status(sent) == 202
    return session


Probe = Callable[[StreamableHTTPApp, bytes], Sent]


def _bob_lists(app: StreamableHTTPApp, session: bytes) -> Sent:
    return exchange(app, [HOST, JSON_TYPE, ACCEPT, (b"authorization", b"bob"),
                          (b"mcp-session-id", session),
                          (b"mcp-protocol-version", b"2025-11-25")],
                    b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')


def _bob_deletes(app: StreamableHTTPApp, session: bytes) -> Sent:
    return exchange(app, [HOST, (b"authorization", b"bob"), (b"mcp-session-id", session)],
                    b"", "DELETE")


@pytest.mark.parametrize("probe", [_bob_lists, _bob_deletes], ids=["use", "delete"])
def test_another_principal_cannot_use_or_end_a_legacy_session(probe: Probe) -> None:
    app, _ = hunt_app(resolve_principal=_by_authorization)
    session = _alice_session(app)
    assert status(probe(app, session)) == 404


def test_the_principal_that_opened_a_legacy_session_keeps_using_and_ends_it() -> None:
    app, _ = hunt_app(resolve_principal=_by_authorization)
    session = _alice_session(app)
    alice = (b"authorization", b"alice")
    listed = exchange(app, [HOST, JSON_TYPE, ACCEPT, alice, (b"mcp-session-id", session),
                            (b"mcp-protocol-version", b"2025-11-25")],
                      b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
    assert status(listed) == 200
    assert status(_bob_deletes(app, session)) == 404  # refused, and the session lives on
    ended = exchange(app, [HOST, alice, (b"mcp-session-id", session)], b"", "DELETE")
    assert status(ended) == 200
