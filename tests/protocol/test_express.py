"""The express lane of modern HTTP ``tools/call`` answers exactly as the full ladder.

``ServerKernel.handle_asgi`` (which tries ``ModernPipeline.express`` and ``ToolCalls.express``)
is compared with ``handle_http`` over ``HeaderView.from_asgi`` on twin gateways, for a table of
named requests (``express_cases.CASES``: the valid bench call and systematic mutations of its
headers and body, every handler shape) and for random mixes of mutations: the same outcome
type, status, headers and body bytes; for a Pending the same completion, the same emitted
notifications and the same call log rows. Each named case also pins which way the express side
went, so a lane that is never taken (or taken for a request it must leave to the ladder) fails.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from express_cases import CASES, MUTATIONS, Case, Mutation, build_case, dup
from express_kit import Twin, compare_case, log_rows, settle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.protocol import HeaderView, Pending, Reply, TransportFacts, decode_message
from toolkeeper.protocol.codes import INTERNAL_ERROR
from toolkeeper.protocol.headers import (
    decode_header_value,
    encode_header_value,
    is_plain_header_value,
)
from toolkeeper.protocol.raw_headers import asgi_index, header_text
from toolkeeper.registry import Registry
from toolkeeper.server import build_gateway
from toolkeeper.server.principal import LocalPrincipal, fixed_principal

SETTINGS = settings(max_examples=250, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_corpus_request_is_answered_by_the_express_lane_exactly_as_by_the_ladder(
        case: Case) -> None:
    lane = asyncio.run(compare_case(Twin(), case))
    if case.lane is not None:
        assert lane == case.lane


def test_corpus_case_ids_are_unique_and_every_lane_is_exercised() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
    assert {case.lane for case in CASES} >= {"express", "declined", "early", "ladder"}


def test_the_plain_valid_call_never_reaches_the_ladder_and_a_duplicated_header_does() -> None:
    twin = Twin()
    valid = build_case("valid", [])
    fast, slow, lane = twin.outcomes(valid)
    assert lane == "express" and twin.probe.ladder == 0 and twin.probe.method == [True]
    assert isinstance(fast, Pending) and isinstance(slow, Pending)
    answer = asyncio.run(settle(fast))
    assert answer == asyncio.run(settle(slow))
    reply = decode_message(answer[4][3])
    assert reply["result"]["structuredContent"]["status"] == "HELD"
    assert reply["result"]["isError"] is False
    fallback = build_case("dup", [dup(b"mcp-method")])
    fast, _, lane = twin.outcomes(fallback)
    assert lane == "ladder" and twin.probe.ladder == 1 and twin.probe.method == []
    assert isinstance(fast, Reply) and fast.message["error"]["code"] == -32020
    assert log_rows(twin.express) == log_rows(twin.reference)
    assert [row[-1] for row in log_rows(twin.express)] == ["ok"]


def test_one_pair_answers_the_whole_corpus_in_order_with_every_completion_deferred() -> None:
    """Shared gateways (state carried from request to request) and Pendings completed only
    after every request was judged: a lane that leaks state between calls shows here."""
    twin = Twin()
    outcomes = [twin.outcomes(case) for case in CASES]

    async def complete() -> list[tuple[Any, Any]]:
        return [(await settle(fast), await settle(slow)) for fast, slow, _ in outcomes]

    for case, (fast, slow) in zip(CASES, asyncio.run(complete()), strict=True):
        assert fast == slow, case.id
    assert log_rows(twin.express) == log_rows(twin.reference)
    assert len(log_rows(twin.express)) > 40


def test_random_mixes_of_mutations_are_answered_identically() -> None:
    twin = Twin()  # shared across examples on purpose: state must not leak either
    lanes: Counter[str] = Counter()

    @SETTINGS
    @given(st.lists(st.sampled_from(MUTATIONS), max_size=4))
    def check(mutations: list[Mutation]) -> None:
        case = build_case(" + ".join(name for name, _ in mutations) or "valid", mutations)
        lanes[asyncio.run(compare_case(twin, case))] += 1

    check()
    assert lanes["express"] >= 10 and lanes["declined"] >= 10 and lanes["ladder"] >= 10, lanes


# --- the header helpers the lane reads through --------------------------------------------

_NAMES = st.sampled_from([b"mcp-protocol-version", b"MCP-Protocol-Version", b"mcp-method",
                          b"Mcp-Method", b"mcp-name", b"mcp-NAME", b"host", b"x-\xc4", b"x-\xe4",
                          b"accept", b"mcp-param-region"])
_VALUES = st.builds(lambda pre, core, post: pre + core + post,
                    st.sampled_from([b"", b" ", b"\t", b" \t", b"\xa0", b"\x0b"]),
                    st.sampled_from([b"2026-07-28", b"tools/call", b"payments.lookup", b"",
                                     b"caf\xe9", b"=?base64?cGF5bWVudHMubG9va3Vw?=", b"a b"]),
                    st.sampled_from([b"", b" ", b"\t\t", b"\r", b"\xa0"]))


@settings(SETTINGS, max_examples=120)
@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=6))
def test_asgi_index_finds_the_one_value_the_header_view_finds(
        raw: list[tuple[bytes, bytes]]) -> None:
    view = HeaderView.from_asgi(raw)
    deferred = HeaderView.deferred(raw)
    assert deferred == view and deferred.repeated == view.repeated
    index = asgi_index(raw)
    names = [name for name, _ in raw]
    if index is None:  # a repeat, or a name that is not lowercase ASCII (b"x-\xc4" and
        # b"x-\xe4" differ as bytes, yet the view folds both into one Latin-1 name)
        assert len(set(names)) != len(names) or any(
            not n.isascii() or n != n.lower() for n in names)
        return
    assert len(set(names)) == len(names) and all(
        n.isascii() and n == n.lower() for n in names)
    for name, value in index.items():
        text = name.decode("latin-1")
        assert view.get_all(text) == [header_text(value)] == deferred.get_all(text)
    for routing in (b"mcp-protocol-version", b"mcp-method", b"mcp-name"):  # what the lane reads
        found = index.get(routing)
        assert view.get(routing.decode()) == (None if found is None else header_text(found))


@settings(SETTINGS, max_examples=120)
@given(st.one_of(st.text(max_size=12), st.sampled_from(
    ["payments.lookup", "=?base64?cGF5bWVudHMubG9va3Vw?=", "=?base64??=", " x", "x ", "a\tb",
     "caf\u00e9", "", "=?BASE64?eA==?="])))
def test_a_plain_header_value_is_exactly_one_that_decodes_to_itself_verbatim(value: str) -> None:
    plain = is_plain_header_value(value)
    assert is_plain_header_value(value) is plain  # the memo answers as the first call did
    if plain:
        assert decode_header_value(value) == value
        assert encode_header_value(value) == value
    else:
        assert encode_header_value(value) != value


def test_a_store_failure_while_routing_is_the_same_internal_error_on_both_paths(
        tmp_path: Path) -> None:
    # The principal resolves without the store; the route cache then reads the closed store.
    registry = Registry.open(f"sqlite:///{tmp_path / 'registry.db'}")
    install_demo(registry)
    principal = LocalPrincipal(registry)(TransportFacts("http"))
    fast, slow = (build_gateway(registry, demo_handlers(),
                                resolve_principal=fixed_principal(principal)) for _ in range(2))
    registry.close()
    case = build_case("store-closed", [])
    express = fast.kernel.handle_asgi(case.body, case.pairs)
    ladder = slow.kernel.handle_http(case.body, TransportFacts(
        "http", HeaderView.from_asgi(case.pairs)))
    assert isinstance(express, Reply) and isinstance(ladder, Reply)
    assert (express.status, express.body) == (ladder.status, ladder.body)
    assert express.status == 200
    assert decode_message(express.body)["error"]["code"] == INTERNAL_ERROR
    assert log_rows(fast) == log_rows(slow) == []
