"""JSON-RPC envelope rules: decoding bounds, classification, and the client-side check."""

from __future__ import annotations

from typing import Any

import pytest

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import (
    MAX_DEPTH,
    Reply,
    check_response,
    classify_inbound,
    decode_message,
)
from toolkeeper.protocol.codes import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR
from toolkeeper.protocol.envelope import (
    InboundNotification,
    InboundRequest,
    InboundResponse,
    encode_message,
    safe_id,
)


@pytest.mark.parametrize("raw", [
    b"", b"{", b"nul", b'{"a":1} x', b"\xef\xbb\xbf{}", b'{"a":"\xff"}', b"NaN", b"1e999",
])
def test_undecodable_bodies_are_parse_errors(raw: bytes) -> None:
    with pytest.raises(JsonRpcError) as info:
        decode_message(raw)
    assert info.value.rpc_code == PARSE_ERROR


def test_nesting_up_to_the_bound_decodes_and_one_level_more_is_a_parse_error() -> None:
    assert decode_message(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    with pytest.raises(JsonRpcError) as info:
        decode_message(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    assert info.value.rpc_code == PARSE_ERROR


def test_pathologically_deep_input_is_a_parse_error_not_a_crash() -> None:
    with pytest.raises(JsonRpcError) as info:
        decode_message(b'{"a":' * 200_000 + b"1" + b"}" * 200_000)
    assert info.value.rpc_code == PARSE_ERROR


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    raw = b'{"s":"' + b"[" * 500 + b'"}'
    assert decode_message(raw) == {"s": "[" * 500}


def test_big_integers_stay_exact() -> None:
    assert decode_message(b'{"id":123456789012345678901234567890}')["id"] == \
        123456789012345678901234567890


@pytest.mark.parametrize("message", [
    [], [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], "x", 1, None,
    {"id": 1, "method": "ping"},
    {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1.0, "method": "ping"},
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": True, "method": "ping"},
    {"jsonrpc": "2.0", "id": [1], "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": 5},
    {"jsonrpc": "2.0", "id": 1, "method": ""},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}},
    {"jsonrpc": "2.0", "id": 1},
    {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}},
])
def test_anything_but_one_valid_message_is_an_invalid_request(message: Any) -> None:
    with pytest.raises(JsonRpcError) as info:
        classify_inbound(message)
    assert info.value.rpc_code == INVALID_REQUEST


def test_messages_are_classified_by_their_members() -> None:
    assert classify_inbound({"jsonrpc": "2.0", "id": "a", "method": "ping"}) == \
        InboundRequest("a", "ping", {})
    assert classify_inbound({"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": 1}}) \
        == InboundNotification("notifications/x", {"a": 1})
    assert classify_inbound({"jsonrpc": "2.0", "id": 3, "result": {}}) == InboundResponse(3, {})


@pytest.mark.parametrize(("message", "expected"), [
    ({"id": 7}, 7), ({"id": "x"}, "x"), ({"id": 1.5}, None), ({"id": True}, None),
    ({"id": None}, None), ({}, None), ([{"id": 1}], None),
])
def test_an_envelope_error_is_answered_with_the_id_only_when_that_id_is_valid(
        message: Any, expected: Any) -> None:
    assert safe_id(message) == expected


def test_encoding_is_canonical_and_writes_null_ids_explicitly() -> None:
    assert encode_message({"jsonrpc": "2.0", "id": None, "error": {"message": "m", "code": 1}}) \
        == b'{"error":{"code":1,"message":"m"},"id":null,"jsonrpc":"2.0"}'


def test_the_client_side_check_accepts_a_matching_response() -> None:
    assert check_response({"jsonrpc": "2.0", "id": 1, "result": {}}, 1) == []


@pytest.mark.parametrize(("response", "problem"), [
    ({"jsonrpc": "2.0", "id": "1", "result": {}}, "$.id"),
    ({"jsonrpc": "2.0", "id": 2, "result": {}}, "$.id"),
    ({"jsonrpc": "1.0", "id": 1, "result": {}}, "$.jsonrpc"),
    ({"jsonrpc": "2.0", "id": 1}, "$: must carry exactly one"),
    ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": ""}},
     "$: must carry exactly one"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": "1", "message": "m"}}, "$.error.code"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": 2}}, "$.error.message"),
])
def test_the_client_side_check_names_each_broken_rule(response: dict[str, Any], problem: str
                                                     ) -> None:
    assert any(p.startswith(problem) for p in check_response(response, 1))


@pytest.mark.parametrize("value", ["caf\udce9", object(), {1: "one"}],
                         ids=["lone-surrogate", "object", "integer-keys"])
def test_a_reply_that_cannot_be_encoded_is_sent_as_the_generic_internal_error_to_its_id(
        value: Any, caplog: pytest.LogCaptureFixture) -> None:
    reply = Reply({"jsonrpc": "2.0", "id": 7, "result": {"content": value}})
    with caplog.at_level("ERROR", logger="toolkeeper.protocol"):
        body = reply.body
    answer = decode_message(body)
    assert (answer["id"], answer["error"]["code"]) == (7, INTERNAL_ERROR)
    assert b"content" not in body and "result" not in answer
    assert [r.name for r in caplog.records] == ["toolkeeper.protocol"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_number_is_never_encoded_as_null(bad: float) -> None:
    with pytest.raises(ValueError):
        encode_message({"jsonrpc": "2.0", "id": 1, "result": {"deep": [{"x": (1, bad)}]}})
    # null itself, and finite numbers beside it, are encoded as ever
    assert encode_message({"a": None, "b": [1.5, None]}) == b'{"a":null,"b":[1.5,null]}'
