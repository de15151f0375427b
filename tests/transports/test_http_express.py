"""Streamable HTTP answers the same whether a POST takes the express lane or not.

Three apps over identical gateways, called in-process with constructed ASGI scopes:

* ``express``: ``StreamableHTTPApp.express`` True (the default): POSTs whose header names are
  all lowercase and unrepeated are checked on the raw values and go to ``handle_asgi`` with
  the raw index;
* ``flag_off``: ``app.express = False`` (the transport's general path; the kernel's own
  ``tools/call`` lane is still there);
* ``reference``: ``app.express = False`` and the kernel's ``tools/call`` without its express
  lane: every step the general way.

Every response (each ASGI message: status, headers, body chunks, SSE frames) and the call log
rows must be identical across the three, for the transport's checks (Content-Length,
Content-Type, Host, Origin, Accept, JSON and SSE modes, body limits, other methods and paths)
and for the whole kernel corpus of ``tests/protocol/express_cases.py``.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "protocol"))  # express_kit, express_cases

from express_cases import (
    CASES,
    TOKEN,
    Case,
    Mutation,
    at,
    build_case,
    call,
    drop,
    dup,
    meta,
    pad,
    put,
    rename,
)
from express_kit import (
    LaneProbe,
    build_handlers,
    header_resolver,
    log_rows,
    shared_registry,
    strip_express,
)

from toolkeeper.server import Gateway, build_app
from toolkeeper.transports import HttpConfig, OriginPolicy, StreamableHTTPApp

LEVEL = "io.modelcontextprotocol/logLevel"

CONFIGS: dict[str, HttpConfig] = {
    "sse": HttpConfig(keepalive_s=30),
    "json": HttpConfig(json_response=True, keepalive_s=30),
    "small": HttpConfig(max_body_bytes=600, keepalive_s=30),
    "open": HttpConfig(policy=OriginPolicy(None, None), keepalive_s=30),
    "anypath": HttpConfig(path=None, keepalive_s=30),
}


def find_http_app(app: Any) -> StreamableHTTPApp:
    """The StreamableHTTPApp inside ``app`` (itself, or behind wrapping middleware)."""
    node = app
    for _ in range(8):
        if isinstance(node, StreamableHTTPApp):
            return node
        node = next((getattr(node, a) for a in ("app", "inner", "wrapped", "__wrapped__")
                     if hasattr(node, a)), None)
    raise AssertionError(f"no StreamableHTTPApp inside {app!r}")


@dataclass
class Side:
    """One app and its gateway; ``fast`` records, per POST, whether the transport's checks on
    the raw header index passed (its express path: no HeaderView built)."""

    app: Any
    gateway: Gateway
    fast: list[bool] = field(default_factory=list)
    probe: LaneProbe | None = None


def _side(config: HttpConfig, *, transport_lane: bool, kernel_lane: bool) -> Side:
    registry = shared_registry()
    app, gateway = build_app(registry, build_handlers(), http=config,
                             resolve_principal=header_resolver(registry))
    http: Any = find_http_app(app)
    http.express = transport_lane
    side = Side(app, gateway)
    if kernel_lane:
        side.probe = LaneProbe(gateway.kernel)
    else:
        strip_express(gateway.kernel)
    checks = http._express_checks

    def recorded(index: Any) -> bool | None:
        result: bool | None = checks(index)
        side.fast.append(result is not None)
        return result

    http._express_checks = recorded
    return side


@dataclass
class Trio:
    express: Side
    flag_off: Side
    reference: Side


@functools.cache
def trio(config: str) -> Trio:
    """The three apps of one configuration, shared by that configuration's tests (state is
    carried from request to request on all three alike)."""
    http = CONFIGS[config]
    return Trio(_side(http, transport_lane=True, kernel_lane=True),
                _side(http, transport_lane=False, kernel_lane=True),
                _side(http, transport_lane=False, kernel_lane=False))


@dataclass(frozen=True)
class Request:
    id: str
    config: str
    case: Case
    method: str = "POST"
    path: str = "/mcp"
    chunks: int = 1
    fast: bool | None = None
    """Whether the express app must take its express path (None: not asserted)."""
    shape: Callable[[list[tuple[bytes, bytes]]], Any] | None = None
    """Turns the header pairs into what the scope carries (default: a list of tuples)."""


def request(request_id: str, config: str, mutations: list[Mutation], *, method: str = "POST",
            path: str = "/mcp", chunks: int = 1, fast: bool | None = None,
            shape: Callable[[list[tuple[bytes, bytes]]], Any] | None = None) -> Request:
    return Request(request_id, config, build_case(request_id, mutations), method, path, chunks,
                   fast, shape)


Sent = tuple[Any, ...]


async def exchange(app: Any, req: Request) -> list[Sent]:
    """One request in-process: the body in ``chunks`` pieces, then (once the response is
    complete) a disconnect; every message the app sent, as comparable tuples."""
    body = req.case.body
    size = -(-len(body) // req.chunks) if body else 1
    pieces = [body[i:i + size] for i in range(0, len(body), size)] or [b""]
    inbound: list[MutableMapping[str, Any]] = [
        {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
        for i, piece in enumerate(pieces)]
    done = asyncio.Event()
    sent: list[Sent] = []

    async def receive() -> MutableMapping[str, Any]:
        if inbound:
            return inbound.pop(0)
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent.append(("start", message["status"],
                         tuple(tuple(pair) for pair in message.get("headers", []))))
        else:
            more = message.get("more_body", False)
            sent.append(("body", bytes(message.get("body", b"")), more))
            if not more:
                done.set()

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": req.method, "scheme": "http", "path": req.path,
             "raw_path": req.path.encode(), "query_string": b"", "root_path": "",
             "headers": (req.shape or list)([(n, v) for n, v in req.case.pairs]),
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}
    async with asyncio.timeout(5):
        await app(scope, receive, send)
    return sent


async def compare(req: Request) -> list[Sent]:
    """Assert the three apps answer ``req`` identically (and log identically); returns the
    reference's messages."""
    sides = trio(req.config)
    before = [len(log_rows(s.gateway)) for s in (sides.express, sides.flag_off, sides.reference)]
    sides.express.fast.clear()
    answers = []
    for side in (sides.express, sides.flag_off, sides.reference):
        answers.append(await exchange(side.app, req))
    assert answers[0] == answers[2], f"{req.id}: express app differs from the reference"
    assert answers[1] == answers[2], f"{req.id}: flag-off app differs from the reference"
    rows = [log_rows(s.gateway)[n:] for s, n in zip(
        (sides.express, sides.flag_off, sides.reference), before, strict=True)]
    assert rows[0] == rows[2] and rows[1] == rows[2], req.id
    if req.fast is not None:
        assert any(sides.express.fast) is req.fast, (req.id, sides.express.fast)
    assert len(answers[2]) >= 2 and answers[2][-1][2] is False  # a complete response
    return answers[2]


def status(sent: list[Sent]) -> int:
    value: int = sent[0][1]
    return value


def body(sent: list[Sent]) -> bytes:
    return b"".join(m[1] for m in sent[1:])


# --- the corpus of transport checks --------------------------------------------------------

PAYMENTS_PROGRESS = [meta(TOKEN, "pay"), meta(LEVEL, "debug")]
BIG_REFERENCE = at(("params", "arguments", "reference"), "PMT-" + "7" * 700)
ACCEPTS: list[tuple[str, list[Mutation]]] = [
    ("both", []),
    ("json-only", [put(b"accept", b"application/json")]),
    ("sse-only", [put(b"accept", b"text/event-stream")]),
    ("any", [put(b"accept", b"*/*")]),
    ("type-wildcards", [put(b"accept", b"application/*, text/*")]),
    ("json-q0", [put(b"accept", b"application/json;q=0, text/event-stream")]),
    ("sse-q0", [put(b"accept", b"application/json, text/event-stream; q=0")]),
    ("sse-q0.0", [put(b"accept", b"application/json, text/event-stream;q=0.0")]),
    ("sse-Q-0", [put(b"accept", b"application/json, text/event-stream;Q=0")]),
    ("sse-q0.001", [put(b"accept", b"application/json, text/event-stream;q=0.001")]),
    ("upper", [put(b"accept", b"APPLICATION/JSON, TEXT/EVENT-STREAM")]),
    ("ows", [pad(b"accept", b" \t", b" ")]),
    ("empty", [put(b"accept", b"")]),
    ("missing", [drop(b"accept")]),
    ("duplicated", [dup(b"accept", b"application/json")]),
    ("name-case", [rename(b"accept", b"Accept")]),
]
LENGTHS: list[tuple[str, list[Mutation]]] = [
    ("missing", [drop(b"content-length")]),
    ("alpha", [put(b"content-length", b"abc")]),
    ("superscript-two", [put(b"content-length", b"\xb2")]),
    ("digit-superscript-two", [put(b"content-length", b"1\xb2")]),
    ("arabic-indic-utf8", [put(b"content-length", "\u0663".encode())]),
    ("too-large", [put(b"content-length", b"99999999999")]),
    ("limit-plus-one", [put(b"content-length", str(4 * 1024 * 1024 + 1).encode())]),
    ("at-limit", [put(b"content-length", str(4 * 1024 * 1024).encode())]),
    ("zero", [put(b"content-length", b"0")]),
    ("leading-zeros", [put(b"content-length", b"0000012")]),
    ("ows", [pad(b"content-length", b" \t", b"\t ")]),
    ("nbsp", [pad(b"content-length", b"", b"\xa0")]),
    ("vertical-tab", [pad(b"content-length", b"\x0b", b"")]),
    ("file-separator", [pad(b"content-length", b"", b"\x1c")]),
    ("plus", [put(b"content-length", b"+12")]),
    ("minus", [put(b"content-length", b"-1")]),
    ("underscore", [put(b"content-length", b"1_0")]),
    ("hex", [put(b"content-length", b"0x10")]),
    ("exponent", [put(b"content-length", b"1e3")]),
    ("empty", [put(b"content-length", b"")]),
    ("duplicated-same", [dup(b"content-length")]),
    ("duplicated-other", [dup(b"content-length", b"1")]),
    ("name-case", [rename(b"content-length", b"Content-Length")]),
]
CONTENT_TYPES: list[tuple[str, list[Mutation]]] = [
    ("missing", [drop(b"content-type")]),
    ("text-plain", [put(b"content-type", b"text/plain")]),
    ("charset-param", [put(b"content-type", b"application/json; charset=utf-8")]),
    ("upper", [put(b"content-type", b"Application/JSON")]),
    ("ows", [pad(b"content-type", b"\t", b"  ")]),
    ("nbsp", [pad(b"content-type", b"\xa0", b"")]),
    ("jsonx", [put(b"content-type", b"application/jsonx")]),
    ("json-patch", [put(b"content-type", b"application/json-patch+json")]),
    ("empty", [put(b"content-type", b"")]),
    ("duplicated-same", [dup(b"content-type")]),
    ("duplicated-other", [dup(b"content-type", b"text/plain")]),
    ("name-case", [rename(b"content-type", b"Content-Type")]),
]
HOSTS: list[tuple[str, list[Mutation]]] = [
    ("localhost", [put(b"host", b"localhost")]),
    ("localhost-port", [put(b"host", b"localhost:3000")]),
    ("ipv6", [put(b"host", b"[::1]:80")]),
    ("upper", [put(b"host", b"LOCALHOST:8000")]),
    ("ows", [pad(b"host", b" ", b"\t")]),
    ("evil", [put(b"host", b"evil.example")]),
    ("bad-port", [put(b"host", b"127.0.0.1:abc")]),
    ("empty-port", [put(b"host", b"127.0.0.1:")]),
    ("empty", [put(b"host", b"")]),
    ("missing", [drop(b"host")]),
    ("duplicated-same", [dup(b"host")]),
    ("duplicated-evil", [dup(b"host", b"evil.example")]),
    ("name-case", [rename(b"host", b"Host")]),
]
ORIGINS: list[tuple[str, list[Mutation]]] = [
    ("allowed", [put(b"origin", b"http://localhost:3000")]),
    ("allowed-https", [put(b"origin", b"https://127.0.0.1:1")]),
    ("upper", [put(b"origin", b"HTTP://LOCALHOST:1")]),
    ("ows", [put(b"origin", b" http://localhost:1\t")]),
    ("evil", [put(b"origin", b"http://evil.example")]),
    ("null", [put(b"origin", b"null")]),
    ("empty", [put(b"origin", b"")]),
    ("duplicated", [put(b"origin", b"http://localhost:1"), dup(b"origin")]),
    ("duplicated-evil", [put(b"origin", b"http://localhost:1"),
                         dup(b"origin", b"http://evil.example")]),
    ("name-case", [put(b"Origin", b"http://localhost:1")]),
]


def _corpus() -> list[Request]:
    out: list[Request] = []
    for config in ("sse", "json"):
        out += [
            request(f"{config}-valid", config, [], fast=True),
            request(f"{config}-valid-in-three-chunks", config, [], chunks=3, fast=True),
            request(f"{config}-progress-and-log", config, PAYMENTS_PROGRESS, fast=True),
            request(f"{config}-progress-json-accept", config,
                    [*PAYMENTS_PROGRESS, put(b"accept", b"application/json")]),
            request(f"{config}-suspending-handler", config,
                    [call("t.suspend", {}), meta(TOKEN, "s")], fast=True),
            request(f"{config}-chatty-handler", config,
                    [call("t.chatty", {"note": "n"}), meta(LEVEL, "debug"), meta(TOKEN, 1)],
                    fast=True),
            request(f"{config}-inline-handler", config,
                    [call("db.query", {"sql": "select 1", "timeout": 5})], fast=True),
            request(f"{config}-handler-raises", config, [call("t.raise", {})], fast=True),
            request(f"{config}-notification", config, [at(("id",))], fast=True),
            request(f"{config}-kernel-refusal", config, [put(b"mcp-method", b"wrong")],
                    fast=True),
            request(f"{config}-resolver-refusal", config, [put(b"x-tenant", b"deny")],
                    fast=True),
            request(f"{config}-legacy-without-session", config,
                    [put(b"mcp-protocol-version", b"2025-11-25"), at(("params", "_meta"))],
                    fast=True),
            request(f"{config}-not-json", config, [put(b"x", b"1"), _raw_body(b"{")], fast=True),
        ]
        out += [request(f"{config}-accept-{label}", config, edits) for label, edits in ACCEPTS]
        out += [request(f"{config}-accept-{label}-progress", config, [*edits, *PAYMENTS_PROGRESS])
                for label, edits in ACCEPTS]
    out.append(request("json-listen-stream-json-accept", "json", [
        at(("method",), "subscriptions/listen"), put(b"mcp-method", b"subscriptions/listen"),
        at(("params", "name")), at(("params", "arguments")), drop(b"mcp-name"),
        put(b"accept", b"application/json")]))
    out += [request(f"sse-length-{label}", "sse", edits) for label, edits in LENGTHS]
    out += [request(f"sse-content-type-{label}", "sse", edits) for label, edits in CONTENT_TYPES]
    out += [request(f"sse-host-{label}", "sse", edits) for label, edits in HOSTS]
    out += [request(f"open-host-{label}", "open", edits) for label, edits in HOSTS]
    out += [request(f"sse-origin-{label}", "sse", edits) for label, edits in ORIGINS]
    out += [request(f"open-origin-{label}", "open", edits) for label, edits in ORIGINS]
    out += [
        request("small-valid", "small", [], fast=True),
        request("small-body-over-limit-undeclared", "small", [BIG_REFERENCE, drop(b"content-length")],
                fast=True),
        request("small-body-over-limit-declared", "small", [BIG_REFERENCE]),
        request("small-body-over-limit-in-chunks", "small", [BIG_REFERENCE], chunks=4),
        request("small-declared-over-limit", "small", [put(b"content-length", b"601")]),
        request("small-declared-at-limit", "small", [put(b"content-length", b"600")], fast=True),
        request("sse-get", "sse", [], method="GET"),
        request("sse-get-with-session", "sse", [put(b"mcp-session-id", b"nope")], method="GET"),
        request("sse-delete", "sse", [], method="DELETE"),
        request("sse-delete-with-session", "sse", [put(b"mcp-session-id", b"nope"),
                                                   drop(b"mcp-protocol-version")],
                method="DELETE"),
        request("sse-put", "sse", [], method="PUT"),
        request("sse-other-path", "sse", [], path="/other"),
        request("sse-path-prefix", "sse", [], path="/mcp/"),
        request("anypath-other-path", "anypath", [], path="/anything", fast=True),
    ]
    return out


def _raw_body(data: bytes) -> Mutation:
    def edit(draft: Any) -> None:
        draft.raw = data
    return f"raw {data!r}", edit


CORPUS = _corpus()


@pytest.mark.parametrize("req", CORPUS, ids=[r.id for r in CORPUS])
def test_each_transport_request_gets_the_same_response_with_and_without_the_express_lane(
        req: Request) -> None:
    asyncio.run(compare(req))


def test_transport_request_ids_are_unique() -> None:
    ids = [r.id for r in CORPUS]
    assert len(ids) == len(set(ids))


def test_the_valid_call_takes_both_express_lanes_and_gets_the_bench_answer() -> None:
    sides = trio("sse")
    assert sides.express.probe is not None
    sides.express.probe.reset()
    sent = asyncio.run(compare(request("valid", "sse", [])))
    assert sides.express.fast == [True]
    assert sides.express.probe.lane == "express"
    assert status(sent) == 200 and (b"content-type", b"application/json") in sent[0][2]
    assert b'"status":"HELD"' in body(sent)


def test_a_progress_token_streams_the_same_sse_frames_on_both_paths() -> None:
    sent = asyncio.run(compare(request("sse-progress", "sse", PAYMENTS_PROGRESS)))
    assert status(sent) == 200 and (b"content-type", b"text/event-stream") in sent[0][2]
    frames = body(sent).decode()
    assert frames.count("event: message") == 4  # two progress, one log, the result
    assert '"notifications/progress"' in frames and '"notifications/message"' in frames


def test_a_duplicated_header_leaves_the_transport_express_path_but_answers_the_same() -> None:
    sent = asyncio.run(compare(request("dup-x", "sse", [put(b"x-a", b"1"), dup(b"x-a")])))
    assert not any(trio("sse").express.fast)
    assert status(sent) == 200


@pytest.mark.parametrize("config", ["sse", "json"])
def test_the_whole_kernel_corpus_gets_the_same_http_response_on_every_path(config: str) -> None:
    async def run() -> list[str]:
        differing = []
        for case in CASES:
            try:
                await compare(Request(f"kernel-{case.id}", config, case))
            except AssertionError as exc:
                differing.append(f"{case.id}: {exc}")
        return differing

    assert asyncio.run(run()) == []


@pytest.mark.parametrize("length", [b"\xb2", b"1\xb2", b"\xd9\xa1"])
def test_a_content_length_of_non_ascii_digits_is_400_on_both_paths(length: bytes) -> None:
    # str.isdigit() accepts U+00B2, which int() refuses: once a 500 from the general path.
    sent = asyncio.run(compare(request("length-" + length.hex(), "sse",
                                       [put(b"content-length", length)])))
    assert status(sent) == 400
    assert body(sent) == b"Invalid Content-Length header"


def _with_value(name: bytes, value: Any) -> Callable[[list[tuple[bytes, bytes]]], Any]:
    return lambda pairs: [(n, value if n == name else v) for n, v in pairs]


@pytest.mark.parametrize(("case_id", "shape", "expected"), [
    ("headers-as-a-generator", lambda pairs: (pair for pair in pairs), 200),
    ("headers-as-a-tuple", tuple, 200),
    ("accept-as-bytearray", _with_value(b"accept", bytearray(b"application/json, "
                                                             b"text/event-stream")), 200),
    ("version-as-memoryview", _with_value(b"mcp-protocol-version",
                                          memoryview(b"2026-07-28")), 500),
    ("accept-as-str", _with_value(b"accept", "application/json, text/event-stream"), 500),
])
def test_headers_that_break_the_asgi_types_get_the_same_answer_on_every_path(
        case_id: str, shape: Callable[[list[tuple[bytes, bytes]]], Any], expected: int) -> None:
    # ASGI promises an iterable of byte pairs; a server or middleware that hands over anything
    # else is answered alike by all three apps (a transport fault is the general path's 500).
    sent = asyncio.run(compare(request(case_id, "sse", [], shape=shape)))
    assert status(sent) == expected


def test_a_content_length_of_thousands_of_digits_is_413_not_a_fault() -> None:
    # int() refuses more than 4,300 digits; the length is judged without it.
    sent = asyncio.run(compare(request("length-5000-digits", "sse",
                                       [put(b"content-length", b"9" * 5000)])))
    assert status(sent) == 413
    sent = asyncio.run(compare(request("length-5000-zeros", "sse",
                                       [put(b"content-length", b"0" * 5000 + b"12")])))
    assert status(sent) == 200  # leading zeros: 12 bytes declared, within the limit
