"""The legacy lane of ``ServerKernel.handle_asgi`` answers a legacy session's request exactly
as the ordinary legacy path does.

Twin gateways over the estate of ``express_kit`` hold the same legacy sessions (one per
handshake version, one whose client declared capabilities and set a log level, one not yet
live, one of another tenant), made on the ordinary path with the same ids. Each request is
answered by the *express* side with ``handle_asgi(body, pairs)`` and by the *reference* side
with ``handle_http`` over ``HeaderView.from_asgi`` (never the lane): the same outcome class
(a resumable Pending for a 2025-11-25 session), status, headers and body bytes, for a Pending
the same completion and notifications, and the same call log rows. Each named case pins the
way the express side went (``express``: ``Method.express`` answered; ``declined``: it said
None and the handler ran with the same call; ``early``: the lane answered without an answer
from ``Method.express`` (no such session, a session not yet live, a refusal it raised);
``ladder``: the lane was not taken).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

import pytest
from express_cases import (
    LEVEL,
    SCHEMA,
    TOKEN,
    TOOL,
    Draft,
    Mutation,
    V,
    at,
    call,
    drop,
    dup,
    pad,
    put,
    raw,
    whole,
)
from express_cases import meta as meta_in
from express_kit import LaneProbe, build_handlers, header_resolver, log_rows, settle, shared_registry
from hypothesis import given
from hypothesis import strategies as st
from test_express import SETTINGS

from toolkeeper.protocol import (
    HeaderView,
    Outcome,
    Pending,
    Reply,
    SessionTable,
    TransportFacts,
    decode_message,
)
from toolkeeper.protocol.outcome import ResumablePending
from toolkeeper.server import Gateway, InMemoryCallLog, build_gateway

HOST: Final = b"127.0.0.1:8000"
SESSIONS: Final = (
    # (id, protocol version, client capabilities, log level, tenant header, live)
    ("s1", "2025-11-25", {}, None, None, True),
    ("s2", "2025-06-18", {}, None, None, True),
    ("s3", "2025-03-26", {}, None, None, True),
    ("s4", "2024-11-05", {}, None, None, True),
    ("s5", "2025-11-25", {"sampling": {}, "elicitation": {"url": {}}}, "debug", None, True),
    ("s6", "2025-11-25", {}, None, None, False),
    ("s7", "2025-11-25", {}, None, b"acme", True),
)
BASE: Final[dict[str, Any]] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": TOOL, "arguments": {"reference": "PMT-771"}}}


def _pairs(session: bytes = b"s1", version: bytes = b"2025-11-25",
           tenant: bytes | None = None) -> list[tuple[bytes, bytes]]:
    out = [(b"host", HOST), (b"content-type", b"application/json"),
           (b"accept", b"application/json, text/event-stream"),
           (b"mcp-protocol-version", version), (b"mcp-session-id", session)]
    return out if tenant is None else [*out, (b"x-tenant", tenant)]


def _twin_gateway() -> Gateway:
    registry = shared_registry()
    ids = (f"s{n}" for n in itertools.count(1))
    gateway = build_gateway(registry, build_handlers(), call_log=InMemoryCallLog(),
                            resolve_principal=header_resolver(registry),
                            sessions=SessionTable(new_id=lambda: next(ids)))
    for session_id, version, caps, level, tenant, live in SESSIONS:
        extra = [] if tenant is None else [(b"x-tenant", tenant)]
        opened = _ordinary(gateway, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": caps,
            "clientInfo": {"name": "twin", "version": "1"}}},
            [(b"content-type", b"application/json"), *extra])
        assert isinstance(opened, Reply) and opened.headers == (("mcp-session-id", session_id),)
        pairs = _pairs(session_id.encode(), version.encode(), tenant)
        if live:
            _ordinary(gateway, {"jsonrpc": "2.0", "method": "notifications/initialized"}, pairs)
        if level is not None:
            _ordinary(gateway, {"jsonrpc": "2.0", "id": 0, "method": "logging/setLevel",
                                "params": {"level": level}}, pairs)
    return gateway


def _ordinary(gateway: Gateway, message: Any, pairs: Sequence[tuple[bytes, bytes]]) -> Outcome:
    return gateway.kernel.handle_http(json.dumps(message).encode(),
                                      TransportFacts("http", HeaderView.from_asgi(list(pairs))))


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    body: bytes
    pairs: tuple[tuple[bytes, bytes], ...]
    lane: str | None = None


def case(case_id: str, mutations: Sequence[Mutation], lane: str | None = None) -> Case:
    draft = Draft(message=copy.deepcopy(BASE), pairs=_pairs())
    for _, edit in mutations:
        edit(draft)
    body = draft.body()
    return Case(case_id, body, (*draft.pairs, (b"content-length", str(len(body)).encode())),
                lane)


class Twin:
    def __init__(self) -> None:
        self.express, self.reference = _twin_gateway(), _twin_gateway()
        self.probe = LaneProbe(self.express.kernel)
        self.lane_calls = 0
        pipeline: Any = self.express.kernel._legacy
        lane = pipeline.express

        def counted(*args: Any, **kwargs: Any) -> Outcome:
            self.lane_calls += 1
            result: Outcome = lane(*args, **kwargs)
            return result

        pipeline.express = counted
        kernel: Any = self.express.kernel
        session_call = kernel._session_call

        def counted_session(*args: Any, **kwargs: Any) -> Outcome:
            if len(args) + len(kwargs) == 5:  # the lane's (it passes the method)
                self.lane_calls += 1
            result: Outcome = session_call(*args, **kwargs)
            return result

        kernel._session_call = counted_session

    async def compare(self, item: Case) -> str:
        logged = len(log_rows(self.express)), len(log_rows(self.reference))
        self.probe.reset()
        self.lane_calls = 0
        fast = self.express.kernel.handle_asgi(item.body, list(item.pairs))
        if self.probe.method:
            lane = "express" if self.probe.method == [True] else "declined"
        else:
            lane = "early" if self.lane_calls else "ladder"
        slow = self.reference.kernel.handle_http(
            item.body, TransportFacts("http", HeaderView.from_asgi(list(item.pairs))))
        assert type(fast) is type(slow), (item.id, lane, fast, slow)
        assert await settle(fast) == await settle(slow), (item.id, lane)
        assert log_rows(self.express)[logged[0]:] == log_rows(self.reference)[logged[1]:], item.id
        assert (len(self.express.kernel.sessions)
                == len(self.reference.kernel.sessions)), item.id
        return lane


def meta(key: str, value: Any) -> Mutation:
    """Set ``params._meta[key]`` (a legacy request has no ``_meta`` until one is set)."""
    name, set_key = meta_in(key, value)

    def edit(draft: Draft) -> None:
        params = draft.message.get("params") if isinstance(draft.message, dict) else None
        if isinstance(params, dict) and "_meta" not in params:
            params["_meta"] = {}
        set_key(draft)
    return name, edit


def session(label: str) -> Mutation:
    return put(b"mcp-session-id", label.encode())


def version(value: bytes) -> Mutation:
    return put(b"mcp-protocol-version", value)


LIST: Final = (at(("method",), "tools/list"), at(("params", "name")),
               at(("params", "arguments")))

CASES: Final = tuple(case(*spec) for spec in (
    ("valid", [], "express"),
    ("valid-2025-06-18", [session("s2"), version(b"2025-06-18")], "express"),
    ("valid-2025-03-26-unstructured", [session("s3"), version(b"2025-03-26")], "express"),
    ("valid-2024-11-05", [session("s4"), version(b"2024-11-05")], "express"),
    ("version-header-absent", [drop(b"mcp-protocol-version")], "express"),
    ("version-header-other-handshake", [version(b"2025-06-18")], "express"),
    ("version-header-ows", [pad(b"mcp-protocol-version", b" ", b"\t")], "ladder"),
    ("version-header-modern", [version(b"2026-07-28")], "ladder"),
    ("version-header-unknown", [version(b"2099-01-01")], "ladder"),
    ("version-header-duplicated", [dup(b"mcp-protocol-version")], "ladder"),
    ("session-header-absent", [drop(b"mcp-session-id")], "ladder"),
    ("session-header-duplicated", [dup(b"mcp-session-id")], "ladder"),
    ("session-header-duplicated-other", [dup(b"mcp-session-id", b"s2")], "ladder"),
    ("session-header-ows", [pad(b"mcp-session-id", b" ", b" ")], "express"),
    ("session-header-name-case", [drop(b"mcp-session-id"), put(b"Mcp-Session-Id", b"s1")],
     "ladder"),
    ("session-unknown", [session("nope")], "early"),
    ("session-empty", [session("")], "early"),
    ("session-not-live", [session("s6")], "early"),
    ("session-of-another-tenant", [session("s7")], "early"),
    ("session-tenant-own", [session("s7"), put(b"x-tenant", b"acme")], "express"),
    ("session-tenant-wrong", [put(b"x-tenant", b"acme")], "early"),
    ("tenant-refused", [put(b"x-tenant", b"deny")], "ladder"),
    ("meta-progress-token", [meta(TOKEN, "p1")], "express"),
    ("meta-progress-token-bad", [meta(TOKEN, True)], None),
    ("meta-modern-key", [meta(V, "2026-07-28")], "ladder"),
    ("meta-modern-key-null", [meta(V, None)], "ladder"),
    ("meta-null", [at(("params", "_meta"), None)], None),
    ("meta-list", [at(("params", "_meta"), [])], "ladder"),
    ("meta-string", [at(("params", "_meta"), "x")], "ladder"),
    ("meta-schema-version", [meta(SCHEMA, "1.0.0")], "express"),
    ("meta-schema-version-unknown", [meta(SCHEMA, "9.9.9")], "declined"),
    ("meta-fastmcp-version", [meta("fastmcp", {"version": "1.0.0"})], None),
    ("id-string", [at(("id",), "r-1")], "express"),
    ("id-true", [at(("id",), True)], "ladder"),
    ("id-null", [at(("id",), None)], "ladder"),
    ("id-missing", [at(("id",))], "ladder"),
    ("jsonrpc-1.0", [at(("jsonrpc",), "1.0")], "ladder"),
    ("result-member", [at(("result",), {})], "ladder"),
    ("params-missing", [at(("params",))], "ladder"),
    ("params-list", [at(("params",), [])], "ladder"),
    ("unknown-tool", [call("nope.nope", {})], "declined"),
    ("arguments-invalid", [at(("params", "arguments"), {"reference": 5})], "declined"),
    ("arguments-missing", [at(("params", "arguments"))], "declined"),
    ("arguments-list", [at(("params", "arguments"), [])], "declined"),
    ("retry-fields", [at(("params", "requestState"), 5)], "declined"),
    ("inline-handler", [call("db.query", {"sql": "select 1", "timeout": 5})], "declined"),
    ("handler-raises", [call("t.raise", {})], "express"),
    ("handler-raises-protocol-error", [call("t.raise_rpc", {})], "express"),
    ("handler-needs-sampling", [call("t.needs", {})], "declined"),
    ("handler-needs-sampling-declared", [call("t.needs", {}), session("s5")], "express"),
    ("handler-requires-in-body", [call("t.require", {})], "express"),
    ("handler-requires-in-body-declared", [call("t.require", {}), session("s5")], "express"),
    ("handler-output-breaks-schema", [call("t.badout", {})], "express"),
    ("handler-output-good", [call("t.goodout", {})], "express"),
    ("handler-output-good-unstructured", [call("t.goodout", {}), session("s3"),
                                          version(b"2025-03-26")], "express"),
    ("handler-is-error", [call("t.iserror", {})], "express"),
    ("handler-unconvertible", [call("t.weird", {})], "express"),
    ("handler-result-field-not-json", [call("t.unencodable", {})], "express"),
    ("handler-tools-changed", [call("t.changed", {})], "express"),
    ("handler-chatty", [call("t.chatty", {"note": "n"}), meta(TOKEN, 7)], "express"),
    ("handler-chatty-debug-session", [call("t.chatty", {"note": "n"}), meta(TOKEN, "t"),
                                      session("s5")], "express"),
    ("handler-suspends", [call("t.suspend", {}), meta(TOKEN, "s")], "express"),
    ("handler-unbound", [call("t.unbound", {})], "declined"),
    ("handler-x-mcp-header-schema", [call("t.region", {"region": "eu"})], "declined"),
    ("deprecated-pinned", [call("t.ver", {"note": "n"}), meta(SCHEMA, "1.0.0")], "express"),
    ("list", [*LIST], "express"),
    ("list-unstructured-session", [*LIST, session("s3"), version(b"2025-03-26")], "express"),
    ("list-cursor-unknown", [*LIST, at(("params", "cursor"), "abc")], "early"),
    ("list-tenant-own", [*LIST, session("s7"), put(b"x-tenant", b"acme")], "express"),
    ("list-not-live", [*LIST, session("s6")], "early"),
    ("ping", [at(("method",), "ping"), at(("params",), {})], "ladder"),
    ("set-level", [at(("method",), "logging/setLevel"), at(("params",), {"level": "info"})],
     "ladder"),
    ("initialize-in-session", [at(("method",), "initialize")], "ladder"),
    ("notification-cancelled", [at(("id",)), at(("method",), "notifications/cancelled"),
                                at(("params",), {"requestId": 1})], "ladder"),
    ("response-to-server", [whole({"jsonrpc": "2.0", "id": 3, "result": {}}, "response")],
     "ladder"),
    ("body-not-json", [raw(b"{", "raw {")], "ladder"),
    ("body-batch", [whole([BASE], "batch")], "ladder"),
))


@pytest.mark.parametrize("item", CASES, ids=[item.id for item in CASES])
def test_each_request_is_answered_by_the_legacy_lane_exactly_as_by_the_ordinary_path(
        item: Case) -> None:
    lane = asyncio.run(Twin().compare(item))
    if item.lane is not None:
        assert lane == item.lane


def test_case_ids_are_unique_and_every_lane_is_exercised() -> None:
    ids = [item.id for item in CASES]
    assert len(ids) == len(set(ids))
    assert {item.lane for item in CASES} >= {"express", "declined", "early", "ladder"}


def test_a_resumable_session_call_is_a_resumable_pending_with_the_session_header() -> None:
    twin = Twin()
    for label, kind in (("s1", ResumablePending), ("s2", Pending)):
        item = case(label, [session(label), version(b"2025-11-25")])
        outcome = twin.express.kernel.handle_asgi(item.body, list(item.pairs))
        assert type(outcome) is kind and outcome.headers == (("mcp-session-id", label),)
        answer = asyncio.run(settle(outcome))
        assert answer[4][2] == (("mcp-session-id", label),)
        result = decode_message(answer[4][3])["result"]
        assert result["isError"] is False and "resultType" not in result


def test_one_pair_answers_every_case_in_order_with_every_completion_deferred() -> None:
    twin = Twin()
    outcomes = []
    for item in CASES:
        outcomes.append((twin.express.kernel.handle_asgi(item.body, list(item.pairs)),
                         twin.reference.kernel.handle_http(item.body, TransportFacts(
                             "http", HeaderView.from_asgi(list(item.pairs))))))

    async def complete() -> list[tuple[Any, Any]]:
        return [(await settle(fast), await settle(slow)) for fast, slow in outcomes]

    for item, (fast, slow) in zip(CASES, asyncio.run(complete()), strict=True):
        assert fast == slow, item.id
    assert log_rows(twin.express) == log_rows(twin.reference)
    assert len(log_rows(twin.express)) > 30


MUTATIONS: Final[tuple[Mutation, ...]] = (
    drop(b"mcp-protocol-version"), dup(b"mcp-protocol-version"), version(b"2025-06-18"),
    version(b"2026-07-28"), pad(b"mcp-protocol-version", b" ", b""), drop(b"mcp-session-id"),
    dup(b"mcp-session-id"), session("s2"), session("s3"), session("s5"), session("s6"),
    session("s7"), session("x"), pad(b"mcp-session-id", b"\t", b""), put(b"x-tenant", b"acme"),
    put(b"x-tenant", b"deny"), meta(TOKEN, "t"), meta(TOKEN, 2.5), meta(V, "2026-07-28"),
    meta(LEVEL, "debug"), meta(SCHEMA, "1.0.0"), meta(SCHEMA, "3.0.0"),
    at(("params", "_meta"), None), at(("params", "_meta"), 1), at(("id",), "s"),
    at(("id",), False), at(("id",)), at(("jsonrpc",), "1"), at(("params",)),
    at(("params", "arguments"), {"reference": "PMT-772"}), at(("params", "arguments")),
    at(("params", "name"), 3), at(("method",), "tools/list"), at(("method",), "ping"),
    call("t.chatty", {"note": "x"}), call("t.suspend", {}), call("t.needs", {}),
    call("t.raise", {}), call("t.goodout", {}), call("t.inline", {}), call("nope.nope", {}),
    call("t.tenant", {}), call("t.region", {"region": "eu"}),
)


def test_random_mixes_of_mutations_are_answered_identically() -> None:
    twin = Twin()  # shared across examples on purpose: state must not leak either
    lanes: Counter[str] = Counter()

    @SETTINGS
    @given(st.lists(st.sampled_from(MUTATIONS), max_size=4))
    def check(mutations: list[Mutation]) -> None:
        item = case(" + ".join(name for name, _ in mutations) or "valid", mutations)
        lanes[asyncio.run(twin.compare(item))] += 1

    check()
    assert lanes["express"] >= 10 and lanes["declined"] >= 5 and lanes["ladder"] >= 10, lanes
