"""Header facts: the strict ``=?base64?...?=`` codec, routing and ``Mcp-Param-*`` checks."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import HeaderView, decode_header_value, encode_header_value, param_headers
from toolkeeper.protocol.codes import HEADER_MISMATCH
from toolkeeper.protocol.headers import check_param_headers, check_routing_headers

SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "count": {"type": "integer", "x-mcp-header": "Count"},
    "flag": {"type": "boolean", "x-mcp-header": "Flag"},
    "nested": {"type": "object", "properties": {
        "deep": {"type": "string", "x-mcp-header": "Deep"}}},
}}


@pytest.mark.parametrize(("raw", "decoded"), [
    ("echo", "echo"),
    ("=?base64?WsO8cmljaA==?=", "Zürich"),
    ("=?base64?IGVjaG8g?=", " echo "),
    ("=?base64??=", ""),
    ("=?BASE64?ZWNobw==?=", "=?BASE64?ZWNobw==?="),  # markers are case-sensitive: a raw value
])
def test_header_values_decode_exactly(raw: str, decoded: str) -> None:
    assert decode_header_value(raw) == decoded


@pytest.mark.parametrize("raw", [
    "=?base64?ZWNobw?=",        # missing padding
    "=?base64?ZW!obw==?=",      # outside the alphabet
    "=?base64?ZWNobx==?=",      # non-zero trailing bits: not canonical
    "=?base64?/w==?=",          # not UTF-8
    "Zürich",                   # raw non-ASCII
    "a\tb",                     # raw control character
    " echo",                    # raw edge whitespace
    "echo ",
])
def test_malformed_or_unsafe_header_values_decode_to_nothing(raw: str) -> None:
    assert decode_header_value(raw) is None


@given(st.text())
def test_encoding_then_decoding_gives_back_any_string(value: str) -> None:
    assert decode_header_value(encode_header_value(value)) == value


@given(st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=1))
def test_safe_ascii_values_travel_verbatim(value: str) -> None:
    if not (value.startswith("=?base64?") and value.endswith("?=")):
        assert encode_header_value(value) == value


def test_a_value_that_looks_like_the_sentinel_is_itself_encoded() -> None:
    assert encode_header_value("=?base64?abc?=").startswith("=?base64?")


def test_header_names_are_case_insensitive_and_duplicates_are_kept() -> None:
    view = HeaderView.from_pairs([(b"MCP-Method", b"a"), (b"mcp-method", b"b")])
    assert view.get("Mcp-Method") == "a"
    assert view.get_all("MCP-METHOD") == ["a", "b"]
    assert view.count("mcp-method") == 2


@pytest.mark.parametrize("view", [
    HeaderView((("mcp-method", "a"), ("mcp-method", "b"), ("host", "h"))),
    HeaderView.from_pairs([(b"Mcp-Method", b"a"), (b"mcp-method", b"b"), (b"Host", b"h")]),
])
def test_a_header_view_built_either_way_looks_up_copies_and_pickles_alike(
        view: HeaderView) -> None:
    for same in (view, copy.copy(view), copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        assert same == view and hash(same) == hash(view)
        assert (same.get("host"), same.get_all("mcp-method"), same.count("mcp-method"),
                same.get("absent"), same.count("absent")) == ("h", ["a", "b"], 2, None, 0)


def _routing(headers: dict[str, str] | list[tuple[str, str]], method: str = "tools/call",
             params: dict[str, Any] | None = None, version: str = "2026-07-28") -> None:
    pairs = list(headers.items()) if isinstance(headers, dict) else headers
    check_routing_headers(HeaderView.from_pairs(pairs), method,
                          params if params is not None else {"name": "echo"}, version)


GOOD = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}


def test_matching_routing_headers_pass() -> None:
    _routing(GOOD)
    _routing({**GOOD, "Mcp-Name": "=?base64?ZWNobw==?="})


@pytest.mark.parametrize("headers", [
    {k: v for k, v in GOOD.items() if k != "MCP-Protocol-Version"},
    {**GOOD, "MCP-Protocol-Version": "2025-11-25"},
    {k: v for k, v in GOOD.items() if k != "Mcp-Method"},
    {**GOOD, "Mcp-Method": "TOOLS/CALL"},
    {k: v for k, v in GOOD.items() if k != "Mcp-Name"},
    {**GOOD, "Mcp-Name": "other"},
    {**GOOD, "Mcp-Name": "=?base64?ZWNobx==?="},
    [*list(GOOD.items()), ("mcp-name", "echo")],
    [*list(GOOD.items()), ("MCP-PROTOCOL-VERSION", "2026-07-28")],
])
def test_missing_mismatched_malformed_or_duplicated_routing_headers_are_header_mismatches(
        headers: Any) -> None:
    with pytest.raises(JsonRpcError) as info:
        _routing(headers)
    assert info.value.rpc_code == HEADER_MISMATCH


def test_a_raw_unsafe_name_header_mismatches_even_when_the_body_holds_the_same_characters(
        ) -> None:
    with pytest.raises(JsonRpcError) as info:
        _routing({**GOOD, "Mcp-Name": "Zürich"}, params={"name": "Zürich"})
    assert info.value.rpc_code == HEADER_MISMATCH
    _routing({**GOOD, "Mcp-Name": encode_header_value("Zürich")}, params={"name": "Zürich"})


def test_the_name_header_is_not_compared_when_the_body_has_no_name() -> None:
    _routing({k: v for k, v in GOOD.items() if k != "Mcp-Name"}, params={})


def _params(headers: dict[str, str] | list[tuple[str, str]], arguments: dict[str, Any]) -> None:
    pairs = list(headers.items()) if isinstance(headers, dict) else headers
    check_param_headers(HeaderView.from_pairs(pairs), SCHEMA, arguments)


def test_param_headers_built_by_a_client_pass_the_server_check() -> None:
    arguments = {"region": " Zürich", "count": 42, "flag": False, "nested": {"deep": "x"}}
    headers = param_headers(SCHEMA, arguments)
    assert headers == {"Mcp-Param-Region": encode_header_value(" Zürich"),
                       "Mcp-Param-Count": "42", "Mcp-Param-Flag": "false",
                       "Mcp-Param-Deep": "x"}
    _params(headers, arguments)


def test_integer_params_compare_numerically_and_unknown_param_headers_are_ignored() -> None:
    _params({"Mcp-Param-Count": "42.0", "Mcp-Param-Other": "zzz"}, {"count": 42})


@pytest.mark.parametrize(("headers", "arguments"), [
    ({}, {"region": "eu"}),                                         # argument without header
    ({"Mcp-Param-Region": "eu"}, {}),                               # header without argument
    ({"Mcp-Param-Region": "us"}, {"region": "eu"}),                 # different value
    ({"Mcp-Param-Count": "42.5"}, {"count": 42}),
    ({"Mcp-Param-Flag": "True"}, {"flag": True}),
    ({"Mcp-Param-Region": "=?base64?ZX!=?="}, {"region": "eu"}),    # malformed sentinel
    ([("Mcp-Param-Region", "eu"), ("mcp-param-region", "eu")], {"region": "eu"}),
    ({"Mcp-Param-Region": "eu"}, {"region": ["eu"]}),               # value without header form
])
def test_param_header_disagreements_are_header_mismatches(headers: Any,
                                                          arguments: dict[str, Any]) -> None:
    with pytest.raises(JsonRpcError) as info:
        _params(headers, arguments)
    assert info.value.rpc_code == HEADER_MISMATCH


def test_a_deferred_view_with_its_raw_index_reads_one_value_as_the_decoded_view_does() -> None:
    from toolkeeper.protocol.raw_headers import asgi_index

    raw = [(b"authorization", b" Bearer t \t"), (b"host", b"h"), (b"x-latin", b"caf\xe9")]
    index = asgi_index(raw)
    assert index is not None
    decoded = HeaderView.from_asgi(raw)
    for name in ("authorization", "Authorization", "host", "x-latin", "absent", "caf\u00e9"):
        view = HeaderView.deferred(raw, index)
        assert view.get(name) == decoded.get(name), name
        assert view.pairs == decoded.pairs


@pytest.mark.parametrize("raw", [
    [(b"host", "h")], [(b"host", b"h"), (b"accept", bytearray(b"a"))], [(b"host", None)],
    [(b"host", b"h"), (b"host", b"h")], [(b"Host", b"h")], [("host", b"h")],
], ids=["str-value", "bytearray-value", "none-value", "repeated", "upper-case", "str-name"])
def test_raw_pairs_other_than_unique_lowercase_bytes_have_no_index(raw: list[Any]) -> None:
    from toolkeeper.protocol.raw_headers import asgi_index

    assert asgi_index(raw) is None
    assert asgi_index([(b"host", b"h"), (b"accept", b"a")]) == {b"host": b"h", b"accept": b"a"}
    assert asgi_index([]) == {}
