"""An invalid-arguments answer is bounded by its request: whatever arguments a request up to
the body limit carries (many extra properties, deep nesting, long strings and keys, wrong
types, long schema messages), the answer the in-process HTTP app sends is at most twice the
request or 64 KiB, whichever is larger; it lists each error once, the first
``server.max_reported_errors`` of them in sorted order, and counts the rest. The work is
bounded as well: at most ``collection_bound(server.max_reported_errors)`` argument values are
checked, so the validator builds at most that many errors, and an answer for arguments of more
values says ``truncated``."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stream_kit import Pairs, body_of, sent_by, status

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.server.call_outcomes import collection_bound
from toolkeeper.transports import HttpConfig, StreamableHTTPApp

VERSION: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"
META: Final[dict[str, Any]] = {"io.modelcontextprotocol/protocolVersion": VERSION,
                               "io.modelcontextprotocol/clientCapabilities": {}}
HEAD: Final[Pairs] = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                      (b"accept", b"application/json, text/event-stream")]
FLOOR: Final = 65_536
MAX_BODY: Final = HttpConfig().max_body_bytes
TOOL: Final = "bounds.probe"
# Long enum values make long messages ("must be one of [...]"): 200 values of 40 characters.
ENUM: Final = [f"value-{i:04d}-" + "x" * 29 for i in range(200)]
SCHEMA: Final[dict[str, Any]] = {
    "type": "object", "additionalProperties": False, "required": ["n"],
    "properties": {
        "n": {"type": "integer", "minimum": 0},
        "s": {"type": "string", "maxLength": 4, "pattern": "^[a-z]*$"},
        "tags": {"type": "array", "items": {"enum": ENUM}},
        "nested": {"type": "object", "additionalProperties": {
            "type": "object", "additionalProperties": {"type": "integer"}}},
        "tree": {"$ref": "#/$defs/tree"},
    },
    "$defs": {"tree": {"type": "object", "additionalProperties": False,
                       "properties": {"leaf": {"type": "integer"},
                                      "kids": {"type": "array",
                                               "items": {"$ref": "#/$defs/tree"}}}}},
}


def _app(**options: Any) -> StreamableHTTPApp:
    registry = Registry.open("memory:")
    registry.publish(spec_from_mapping({
        "name": TOOL, "version": "1.0.0", "title": TOOL, "description": "bounds probe",
        "inputSchema": SCHEMA, "dataClassification": "public", "sideEffect": "read"}))
    app, _ = build_app(registry, http=HttpConfig(keepalive_s=30), **options)
    return app


APP: Final = _app()


def _body(arguments: Any, request_id: int = 1) -> bytes:
    # raw UTF-8, as short as the request can be (the answer writes non-ASCII raw as well)
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
        "name": TOOL, "arguments": arguments, "_meta": META}}, ensure_ascii=False,
        separators=(",", ":")).encode()


def _post(app: StreamableHTTPApp, body: bytes) -> tuple[int, bytes]:
    pairs = [*HEAD, (b"mcp-protocol-version", VERSION.encode()),
             (b"mcp-method", b"tools/call"), (b"mcp-name", TOOL.encode())]
    sent = sent_by(app, pairs, body, bound_s=60.0)
    return status(sent), body_of(sent)


def _modern(app: StreamableHTTPApp, body: bytes) -> bytes:
    code, answer = _post(app, body)
    assert code == 200
    return answer


def _result(answer: bytes) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(answer)["result"]
    assert result["isError"] is True
    return result


def _within_bound(body: bytes, answer: bytes) -> None:
    assert len(body) <= MAX_BODY
    assert len(answer) <= max(2 * len(body), FLOOR), (len(body), len(answer))


# Keys that cost the answer more than the request: quotes and backslashes are escaped twice in
# a path (the path quotes the key, the answer quotes the path), control characters six-fold.
_KEY_CHARS: Final = st.sampled_from(['"', "\\", "\x01", "'", "a", "\u00e9", "\U0001f600", " "])


def _long(pattern: st.SearchStrategy[str], low: int, high: int) -> st.SearchStrategy[str]:
    """A short pattern repeated ``low`` to ``high`` times (Hypothesis draws short texts)."""
    return st.tuples(pattern, st.integers(low, high)).map(lambda pair: pair[0] * pair[1])


_keys = st.one_of(st.text(_KEY_CHARS, min_size=1, max_size=40),
                  _long(st.text(_KEY_CHARS, min_size=1, max_size=3), 500, 10_000))
_wrong = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(max_size=20), st.lists(st.integers(), max_size=3))


def _deep(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"leaf": "not an integer"}
    for _ in range(depth):
        node = {"kids": [node]}
    return node


_arguments = st.fixed_dictionaries(
    {},
    optional={
        "n": st.one_of(_wrong, st.integers(max_value=-1)),
        "s": st.one_of(st.text(min_size=5, max_size=50),
                       _long(st.text(min_size=1, max_size=3), 5_000, 100_000), _wrong),
        "tags": st.lists(st.one_of(st.sampled_from(ENUM), st.text(max_size=5), _wrong),
                         max_size=300),
        "nested": st.dictionaries(_keys, st.dictionaries(_keys, _wrong, max_size=20),
                                  max_size=20),
        # past the wire's nesting bound (64) the request is a parse error: bounded as well
        "tree": st.integers(1, 40).map(_deep),
    },
).flatmap(lambda known: st.dictionaries(_keys, _wrong, max_size=2000).map(
    lambda extra: {**extra, **known}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(_arguments)
def test_any_invalid_arguments_answer_is_at_most_twice_its_request_or_64_kib(
        arguments: dict[str, Any]) -> None:
    body = _body(arguments)
    code, answer = _post(APP, body)
    _within_bound(body, answer)
    message = json.loads(answer)
    if code != 200:  # nested past the wire's bound: a parse error, never a result
        assert (code, message["error"]["code"]) == (400, -32700)
        return
    result = message["result"]
    assert result["isError"] is True
    listed = result["structuredContent"]["errors"]
    assert len(listed) <= 50
    order = [(e["path"], e["message"], e["keyword"]) for e in listed]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert [block["type"] for block in result["content"]] == ["text"]


def _near_the_limit() -> list[tuple[str, Any]]:
    room = MAX_BODY - 1024
    return [
        # one key that is almost the whole body, of the characters a path escapes the most
        ("one-key-of-backslashes", {"n": 1, "\\" * (room // 2): 0}),
        ("one-key-of-quotes", {"n": 1, '"' * (room // 2): 0}),
        ("one-key-of-control-characters", {"n": 1, "\x01" * (room // 6): 0}),
        # as many extra properties as fit
        ("extra-properties", {"n": 1, **{f"a{i}": 0 for i in range(room // 20)}}),
        # long messages (each names the 200-value enum: 8 KiB), one per item
        ("wrong-enum-items", {"n": 1, "tags": [0] * (room // 2)}),
        ("long-string", {"n": 1, "s": "A" * room}),
        ("deep-tree", {"n": 1, "tree": _deep(300)}),
    ]


@pytest.mark.parametrize(("arguments"), [a for _, a in _near_the_limit()],
                         ids=[name for name, _ in _near_the_limit()])
def test_an_invalid_request_near_the_body_limit_is_answered_within_the_bound(
        arguments: dict[str, Any]) -> None:
    body = _body(arguments)
    code, answer = _post(APP, body)
    _within_bound(body, answer)
    assert code == 200 or "tree" in arguments
    if code == 200:
        _result(answer)


# The values checked by default; the arguments object itself is one of them.
CHECKED: Final = collection_bound()


def test_the_first_errors_are_listed_in_sorted_order_and_the_rest_counted() -> None:
    arguments = {"n": 1, **{f"k{i:05d}": 0 for i in range(CHECKED - 100)}}
    first = _result(_modern(APP, _body(arguments)))
    again = _result(_modern(APP, _body(dict(reversed(list(arguments.items()))))))
    assert first["structuredContent"] == again["structuredContent"]
    assert [e["path"] for e in first["structuredContent"]["errors"]] == [
        f"$.k{i:05d}" for i in range(50)]
    assert first["structuredContent"]["omitted"] == CHECKED - 100 - 50
    assert "truncated" not in first["structuredContent"]
    assert {e["keyword"] for e in first["structuredContent"]["errors"]} == {
        "additionalProperties"}


def test_arguments_of_more_values_than_are_checked_are_answered_truncated_in_any_key_order(
        ) -> None:
    arguments = {"n": 1, **{f"k{i:05d}": 0 for i in range(10_000)}}
    first = _result(_modern(APP, _body(arguments)))
    again = _result(_modern(APP, _body(dict(reversed(list(arguments.items()))))))
    assert first == again  # objects are cut by sorted key, not by the order sent
    structured = first["structuredContent"]
    assert [e["path"] for e in structured["errors"]] == [f"$.k{i:05d}" for i in range(50)]
    # the first CHECKED - 1 keys in sorted order are checked ("n", sorted last, is not)
    assert (structured["omitted"], structured["truncated"]) == (CHECKED - 1 - 50, True)
    assert first["content"][0]["text"].splitlines()[0] == (
        f"Invalid arguments ({CHECKED - 1} errors in the values checked, the rest not checked; "
        f"50 listed, {CHECKED - 1 - 50} omitted):")


class _Counting:
    """Stands in for a compiled schema's jsonschema-rs validator: counts the errors it builds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.built = 0

    def iter_errors(self, instance: Any) -> Any:
        errors = list(self.inner.iter_errors(instance))
        self.built += len(errors)
        return iter(errors)


@pytest.mark.parametrize("arguments", [
    {"n": 1, **{f"k{i:07d}": 0 for i in range(300_000)}},
    {"n": 1, "tags": [0] * 1_400_000},
    {"n": 1, "nested": {f"k{i:06d}": {"a": "x"} for i in range(200_000)}},
], ids=["300000-extra-properties", "1400000-wrong-enum-items", "200000-wrong-nested-values"])
def test_a_request_near_the_body_limit_builds_at_most_the_bound_of_errors_every_time(
        arguments: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    body = _body(arguments)
    assert MAX_BODY // 2 < len(body) <= MAX_BODY
    counting = _Counting(compile_schema(SCHEMA)._validator)
    monkeypatch.setattr(compile_schema(SCHEMA), "_validator", counting)
    first = _modern(APP, body)
    built = counting.built
    assert 0 < built <= CHECKED
    again = _modern(APP, body)
    assert counting.built == 2 * built
    assert first == again
    structured = _result(first)["structuredContent"]
    assert structured["truncated"] is True
    assert len(structured["errors"]) + structured["omitted"] <= CHECKED
    _within_bound(body, first)


def test_a_listed_message_naming_a_long_enum_is_cut_to_1024_characters() -> None:
    result = _result(_modern(APP, _body({"n": 1, "tags": [0]})))
    (error,) = result["structuredContent"]["errors"]
    assert (error["path"], error["keyword"], len(error["message"])) == ("$.tags[0]", "enum", 1024)
    assert error["message"].endswith("...")


def test_the_configured_bound_sets_the_values_checked() -> None:
    app = _app(max_reported_errors=100)  # 20 x 100 values checked
    result = _result(_modern(app, _body({"n": 1, **{f"k{i:05d}": 0 for i in range(1500)}})))
    assert len(result["structuredContent"]["errors"]) == 100
    assert result["structuredContent"]["omitted"] == 1400
    assert "truncated" not in result["structuredContent"]


def test_the_configured_bound_is_the_number_listed() -> None:
    app = _app(max_reported_errors=3)
    result = _result(_modern(app, _body({"n": -1, "s": "TOO LONG", "x": 0, "y": 0})))
    assert [(e["path"], e["keyword"]) for e in result["structuredContent"]["errors"]] == [
        ("$.n", "minimum"), ("$.s", "pattern"), ("$.s", "maxLength")]  # by (path, message)
    assert result["structuredContent"]["omitted"] == 2


def test_an_answer_within_the_bound_has_no_omitted_count() -> None:
    result = _result(_modern(APP, _body({"n": -1})))
    assert result["structuredContent"] == {"errors": [
        {"path": "$.n", "keyword": "minimum", "message": "must be >= 0"}]}


def _legacy_session(app: StreamableHTTPApp) -> str:
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "bounds", "version": "1"}}}).encode()
    sent = sent_by(app, HEAD, init, bound_s=10.0)
    session = dict(sent[0]["headers"])[b"mcp-session-id"]
    pairs = [*HEAD, (b"mcp-session-id", session), (b"mcp-protocol-version", LEGACY.encode())]
    assert status(sent_by(app, pairs, b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                          bound_s=10.0)) == 202
    return session.decode()


def test_the_legacy_era_answer_has_the_same_bounded_shape() -> None:
    app = _app()
    session = _legacy_session(app)
    arguments = {"n": 1, **{f"a{i}": 0 for i in range(20_000)}}
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": TOOL, "arguments": arguments}}).encode()
    pairs = [*HEAD, (b"mcp-session-id", session.encode()),
             (b"mcp-protocol-version", LEGACY.encode())]
    sent = sent_by(app, pairs, body, bound_s=60.0)
    raw = body_of(sent)
    # the legacy answer may be SSE: the JSON-RPC message is its one data line
    text = raw.decode()
    message = next((json.loads(line[6:]) for line in text.split("\n")
                    if line.startswith("data: {")), None) or json.loads(text)
    result = message["result"]
    assert result["isError"] is True
    assert len(result["structuredContent"]["errors"]) == 50
    assert result["structuredContent"]["omitted"] == CHECKED - 1 - 50
    assert result["structuredContent"]["truncated"] is True
    assert len(raw) <= max(2 * len(body), FLOOR)
