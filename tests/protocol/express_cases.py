"""The request corpus of the express-lane differential tests (``express_kit`` compares the
answers).

Every request starts as bench/gateway.py's valid ``payments.lookup`` call (``BASE_MESSAGE`` and
its ASGI header pairs) and is changed by named mutations (:data:`Mutation`): header edits
(``drop``, ``dup``, ``rename``, ``put``, ``pad``) and body edits (``at``, ``meta``, ``whole``,
``raw``, ``call``). ``CASES`` is the table of named requests, each pinning the lane the express
side must take (see ``express_kit``'s docstring); ``MUTATIONS`` is the pool the property tests
draw random mixes from. This module imports nothing from ``express_kit``.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolkeeper.protocol import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY
from toolkeeper.protocol.headers import encode_header_value

__all__ = [
    "BASE_MESSAGE",
    "CAPS",
    "CASES",
    "INFO",
    "LEVEL",
    "MUTATIONS",
    "ROOT",
    "ROUTING",
    "ROUTING_VALUES",
    "SCHEMA",
    "TOKEN",
    "TOOL",
    "VERSION",
    "Case",
    "Draft",
    "Mutation",
    "V",
    "at",
    "build_case",
    "call",
    "drop",
    "dup",
    "meta",
    "pad",
    "put",
    "raw",
    "rename",
    "whole",
]

ROOT: Final = Path(__file__).resolve().parents[2]
VERSION: Final = "2026-07-28"
TOOL: Final = "payments.lookup"
HOST: Final = b"127.0.0.1:8000"

BASE_MESSAGE: Final[dict[str, Any]] = {
    "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": TOOL, "arguments": {"reference": "PMT-771"},
        "_meta": {PROTOCOL_VERSION_KEY: VERSION, CLIENT_CAPABILITIES_KEY: {}}}}
"""bench/gateway.py's BODY, as a message."""

_AUTO_LENGTH: Final = b"<auto>"
"""Placeholder of the ``content-length`` value: replaced by the body's length when built."""


def _base_pairs() -> list[tuple[bytes, bytes]]:
    """bench/gateway.py's ``asgi_pairs()`` (the body's length filled in when built)."""
    return [(b"host", HOST), (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-protocol-version", VERSION.encode()), (b"mcp-method", b"tools/call"),
            (b"mcp-name", TOOL.encode()), (b"content-length", _AUTO_LENGTH)]


# --- the corpus ------------------------------------------------------------------------------


@dataclass
class Draft:
    """A request being built: the message (any JSON value), or a raw body that replaces it,
    and the ASGI header pairs in order."""

    message: Any = field(default_factory=lambda: copy.deepcopy(BASE_MESSAGE))
    pairs: list[tuple[bytes, bytes]] = field(default_factory=_base_pairs)
    raw: bytes | None = None

    def body(self) -> bytes:
        return self.raw if self.raw is not None else json.dumps(self.message).encode()


Mutation = tuple[str, Callable[[Draft], None]]
"""A named edit of a draft (the name shows in test ids and hypothesis reports)."""


@dataclass(frozen=True)
class Case:
    id: str
    body: bytes
    pairs: tuple[tuple[bytes, bytes], ...]
    lane: str | None = None
    """The way the express side must go (None: either way is right, e.g. a routing header with
    OWS, which the lane may strip or leave to the ladder)."""


def build_case(case_id: str, mutations: Iterable[Mutation], lane: str | None = None) -> Case:
    draft = Draft()
    for _, edit in mutations:
        edit(draft)
    body = draft.body()
    pairs = tuple((n, str(len(body)).encode() if v == _AUTO_LENGTH else v)
                  for n, v in draft.pairs)
    return Case(case_id, body, pairs, lane)


# Header edits (on the first pair with exactly that name).


def _index(draft: Draft, name: bytes) -> int | None:
    return next((i for i, (n, _) in enumerate(draft.pairs) if n == name), None)


def drop(name: bytes) -> Mutation:
    def edit(draft: Draft) -> None:
        draft.pairs = [(n, v) for n, v in draft.pairs if n != name]
    return f"drop {name.decode()}", edit


def dup(name: bytes, value: bytes | None = None) -> Mutation:
    """The header again, right after the first copy (same value unless given)."""
    def edit(draft: Draft) -> None:
        at = _index(draft, name)
        if at is not None:
            draft.pairs.insert(at + 1, (name, draft.pairs[at][1] if value is None else value))
    return f"dup {name.decode()}" + ("" if value is None else f"={value!r}"), edit


def rename(name: bytes, new: bytes) -> Mutation:
    def edit(draft: Draft) -> None:
        at = _index(draft, name)
        if at is not None:
            draft.pairs[at] = (new, draft.pairs[at][1])
    return f"rename {name.decode()}->{new.decode('latin-1')}", edit


def put(name: bytes, value: bytes) -> Mutation:
    """Set a header's value (appended when absent)."""
    def edit(draft: Draft) -> None:
        at = _index(draft, name)
        if at is None:
            draft.pairs.append((name, value))
        else:
            draft.pairs[at] = (name, value)
    return f"put {name.decode('latin-1')}={value!r}", edit


def pad(name: bytes, before: bytes, after: bytes) -> Mutation:
    def edit(draft: Draft) -> None:
        at = _index(draft, name)
        if at is not None:
            draft.pairs[at] = (name, before + draft.pairs[at][1] + after)
    return f"pad {name.decode()} {before!r}..{after!r}", edit


# Body edits.

_MISSING: Final = object()


def at(path: Sequence[str], value: Any = _MISSING) -> Mutation:
    """Set (or delete, without a value) ``path`` in the message; a no-op when a step on the way
    is not an object."""
    def edit(draft: Draft) -> None:
        node = draft.message
        for key in path[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(key), dict):
                return
            node = node[key]
        if not isinstance(node, dict):
            return
        if value is _MISSING:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = copy.deepcopy(value)
    shown = "del" if value is _MISSING else f"={json.dumps(value)}"
    return f"{'.'.join(path)}{shown}", edit


def meta(key: str, value: Any = _MISSING) -> Mutation:
    return at(("params", "_meta", key), value)


def whole(value: Any, label: str) -> Mutation:
    def edit(draft: Draft) -> None:
        draft.message = copy.deepcopy(value)
    return label, edit


def raw(body: bytes, label: str) -> Mutation:
    def edit(draft: Draft) -> None:
        draft.raw = body
    return label, edit


def call(tool: str, arguments: Any = _MISSING, header: bytes | None = None) -> Mutation:
    """Call another tool: ``params.name`` and the ``Mcp-Name`` header (its encoded form unless
    given), and the arguments (none when not given)."""
    def edit(draft: Draft) -> None:
        params = draft.message.get("params") if isinstance(draft.message, dict) else None
        if isinstance(params, dict):
            params["name"] = tool
            if arguments is _MISSING:
                params.pop("arguments", None)
            else:
                params["arguments"] = copy.deepcopy(arguments)
        value = encode_header_value(tool).encode() if header is None else header
        put(b"mcp-name", value)[1](draft)
    return f"call {tool}" + ("" if arguments is _MISSING else f" {json.dumps(arguments)}"), edit


V: Final = PROTOCOL_VERSION_KEY
CAPS: Final = CLIENT_CAPABILITIES_KEY
INFO: Final = "io.modelcontextprotocol/clientInfo"
LEVEL: Final = "io.modelcontextprotocol/logLevel"
TOKEN: Final = "progressToken"
SCHEMA: Final = "schemaVersion"
ROUTING: Final = ((b"mcp-protocol-version", b"MCP-Protocol-Version"),
                  (b"mcp-method", b"Mcp-Method"), (b"mcp-name", b"Mcp-Name"))


def _b64(value: str) -> bytes:
    return b"=?base64?" + base64.b64encode(value.encode()) + b"?="


def _routing_cases() -> list[tuple[str, list[Mutation], str | None]]:
    out: list[tuple[str, list[Mutation], str | None]] = []
    for name, cased in ROUTING:
        short = name.decode().removeprefix("mcp-")
        out += [
            (f"{short}-missing", [drop(name)], "ladder"),
            (f"{short}-duplicated", [dup(name)], "ladder"),
            (f"{short}-duplicated-other-value", [dup(name, b"other")], "ladder"),
            (f"{short}-name-in-other-case", [rename(name, cased)], "ladder"),
            (f"{short}-name-upper", [rename(name, name.upper())], "ladder"),
            (f"{short}-value-spaces", [pad(name, b"  ", b" ")], None),
            (f"{short}-value-tabs", [pad(name, b"\t", b"\t\t")], None),
            (f"{short}-value-trailing-space", [pad(name, b"", b" ")], None),
            (f"{short}-value-mixed-ows", [pad(name, b" \t", b"\t ")], None),
            (f"{short}-value-vertical-tab", [pad(name, b"", b"\x0b")], "ladder"),
            (f"{short}-value-nbsp", [pad(name, b"\xa0", b"")], "ladder"),
            (f"{short}-value-nul", [pad(name, b"", b"\x00")], "ladder"),
            (f"{short}-value-empty", [put(name, b"")], "ladder"),
            (f"{short}-value-wrong", [put(name, b"wrong")], "ladder"),
        ]
        if name != b"mcp-protocol-version":  # the version has no letters
            out.append((f"{short}-value-other-case", [put(name, dict(ROUTING_VALUES)[name].upper())],
                        "ladder"))
    return out


ROUTING_VALUES: Final = ((b"mcp-protocol-version", VERSION.encode()),
                         (b"mcp-method", b"tools/call"), (b"mcp-name", TOOL.encode()))

_BAD_ARGS: Final = json.loads((ROOT / "examples" / "payments.lookup.bad-args.json").read_text())
_NESTED: Final = json.loads("[" * 70 + "]" * 70)


LIST: Final = (at(("method",), "tools/list"), put(b"mcp-method", b"tools/list"),
               at(("params", "name")), at(("params", "arguments")), drop(b"mcp-name"))
"""The base request turned into a ``tools/list``."""


def _named_cases() -> list[tuple[str, list[Mutation], str | None]]:
    cases: list[tuple[str, list[Mutation], str | None]] = [("valid", [], "express")]
    cases += _routing_cases()
    cases += [
        # Mcp-Name: the sentinel encoding, and values that only look like it.
        ("name-ascii-base64-sentinel", [put(b"mcp-name", _b64(TOOL))], "ladder"),
        ("name-base64-marker-upper", [put(b"mcp-name", b"=?BASE64?" + _b64(TOOL)[9:])], "ladder"),
        ("name-base64-noncanonical", [put(b"mcp-name", _b64(TOOL)[:-4] + b"x?=")], "ladder"),
        ("name-non-ascii-encoded", [call("caf\u00e9.lookup", {})], "ladder"),
        ("name-non-ascii-raw-utf8", [call("caf\u00e9.lookup", {}, "caf\u00e9.lookup".encode())],
         "ladder"),
        ("name-sentinel-looking-verbatim",
         [call("=?base64?cGF5bWVudHMubG9va3Vw?=", {}, b"=?base64?cGF5bWVudHMubG9va3Vw?=")],
         "ladder"),
        ("name-sentinel-looking-encoded", [call("=?base64?cGF5bWVudHMubG9va3Vw?=", {})], "ladder"),
        ("name-empty-both", [call("", {}, b"")], "declined"),
        ("name-internal-space-both", [call("a b", {}, b"a b")], "declined"),
        ("name-trailing-space-both", [call("x ", {}, b"x ")], "ladder"),
        ("name-trailing-space-body", [call("x ", {}, b"x")], "ladder"),
        ("name-tab-inside-both", [call("a\tb", {}, b"a\tb")], "ladder"),
        ("name-other-tool-in-header", [put(b"mcp-name", b"db.query")], "ladder"),
        ("name-null-header-present", [at(("params", "name"), None)], "declined"),
        ("name-null-header-absent", [at(("params", "name"), None), drop(b"mcp-name")],
         "declined"),
        ("name-missing-header-absent", [at(("params", "name")), drop(b"mcp-name")], "declined"),
        ("name-integer", [at(("params", "name"), 5), put(b"mcp-name", b"5")], "ladder"),
        ("name-object", [at(("params", "name"), {"a": 1})], "ladder"),
        # The version header against the envelope.
        ("version-header-legacy", [put(b"mcp-protocol-version", b"2025-11-25")], "ladder"),
        ("version-header-legacy-body-legacy",
         [put(b"mcp-protocol-version", b"2025-11-25"), at(("params", "_meta"))], "ladder"),
        ("version-unknown-both", [put(b"mcp-protocol-version", b"2099-01-01"),
                                  meta(V, "2099-01-01")], "ladder"),
        ("version-body-legacy", [meta(V, "2025-11-25")], "ladder"),
        ("version-missing-legacy-body", [drop(b"mcp-protocol-version"), at(("params", "_meta"))],
         "ladder"),
        ("method-header-tools-list", [put(b"mcp-method", b"tools/list")], "ladder"),
        ("method-body-tools-list", [at(("method",), "tools/list")], "ladder"),
        # tools/list has an express lane too (the handler's result, finished by the kernel).
        ("list", [*LIST], "express"),
        ("list-with-name-header", [*LIST, put(b"mcp-name", b"payments.lookup")], "express"),
        ("list-cursor", [*LIST, at(("params", "cursor"), "abc")], "early"),
        ("list-cursor-null", [*LIST, at(("params", "cursor"), None)], "express"),
        ("list-no-params", [*LIST, at(("params",))], "ladder"),
        ("list-ttl-version-header-spaces", [*LIST, pad(b"mcp-method", b" ", b"")], "ladder"),
        ("list-legacy-header", [*LIST, put(b"mcp-protocol-version", b"2025-11-25")], "ladder"),
        ("list-tenant-refused", [*LIST, put(b"x-tenant", b"deny")], "early"),
        ("list-tenant-acme", [*LIST, put(b"x-tenant", b"acme")], "express"),
        ("list-log-level", [*LIST, meta(LEVEL, "debug")], "express"),
        ("list-progress-token", [*LIST, meta(TOKEN, "p1")], "express"),
        ("method-body-unknown", [at(("method",), "tools/nope"), put(b"mcp-method", b"tools/nope")],
         "ladder"),
        ("method-body-missing", [at(("method",))], "ladder"),
        ("method-body-integer", [at(("method",), 5)], "ladder"),
        ("method-body-empty", [at(("method",), "")], "ladder"),
        # The request id, of every JSON type.
        ("id-zero", [at(("id",), 0)], "express"),
        ("id-negative", [at(("id",), -7)], "express"),
        ("id-big", [at(("id",), 2**70)], "express"),
        ("id-string", [at(("id",), "req-1")], "express"),
        ("id-empty-string", [at(("id",), "")], "express"),
        ("id-true", [at(("id",), True)], "ladder"),
        ("id-false", [at(("id",), False)], "ladder"),
        ("id-float", [at(("id",), 1.5)], "ladder"),
        ("id-float-integral", [at(("id",), 1.0)], "ladder"),
        ("id-null", [at(("id",), None)], "ladder"),
        ("id-object", [at(("id",), {"a": 1})], "ladder"),
        ("id-list", [at(("id",), [1])], "ladder"),
        ("id-missing-notification", [at(("id",))], "ladder"),
        ("notification-cancelled", [at(("id",)), at(("method",), "notifications/cancelled"),
                                    at(("params",), {"requestId": 1})], "ladder"),
        ("notification-no-version-header", [at(("id",)), drop(b"mcp-protocol-version")], "ladder"),
        # The JSON-RPC envelope.
        ("jsonrpc-1.0", [at(("jsonrpc",), "1.0")], "ladder"),
        ("jsonrpc-number", [at(("jsonrpc",), 2.0)], "ladder"),
        ("jsonrpc-missing", [at(("jsonrpc",))], "ladder"),
        ("result-member", [at(("result",), {})], "ladder"),
        ("error-member", [at(("error",), {"code": 1, "message": "x"})], "ladder"),
        ("extra-top-level-member", [at(("extra",), 1)], "express"),
        ("params-missing", [at(("params",))], "ladder"),
        ("params-list", [at(("params",), [1])], "ladder"),
        ("params-string", [at(("params",), "x")], "ladder"),
        ("params-null", [at(("params",), None)], "ladder"),
        ("params-extra-member", [at(("params", "extra"), {"x": 1})], "express"),
        # The _meta envelope.
        ("meta-missing", [at(("params", "_meta"))], "ladder"),
        ("meta-list", [at(("params", "_meta"), [])], "ladder"),
        ("meta-null", [at(("params", "_meta"), None)], "ladder"),
        ("meta-string", [at(("params", "_meta"), "x")], "ladder"),
        ("meta-version-missing", [meta(V)], "ladder"),
        ("meta-version-integer", [meta(V, 20260728)], "ladder"),
        ("meta-version-null", [meta(V, None)], "ladder"),
        ("meta-caps-missing", [meta(CAPS)], "ladder"),
        ("meta-caps-list", [meta(CAPS, [])], "ladder"),
        ("meta-caps-null", [meta(CAPS, None)], "ladder"),
        ("meta-caps-string", [meta(CAPS, "all")], "ladder"),
        ("meta-caps-declared", [meta(CAPS, {"sampling": {}, "roots": {"listChanged": True}})],
         "express"),
        ("meta-info-valid", [meta(INFO, {"name": "c", "version": "1"})], "express"),
        ("meta-info-null", [meta(INFO, None)], "express"),
        ("meta-info-string", [meta(INFO, "c")], "ladder"),
        ("meta-info-bad-name", [meta(INFO, {"name": 1, "version": "1"})], "ladder"),
        ("meta-info-no-version", [meta(INFO, {"name": "c"})], "ladder"),
        ("meta-level-debug", [meta(LEVEL, "debug")], "express"),
        ("meta-level-error", [meta(LEVEL, "error")], "express"),
        ("meta-level-null", [meta(LEVEL, None)], "express"),
        ("meta-level-unknown", [meta(LEVEL, "verbose")], "ladder"),
        ("meta-level-upper", [meta(LEVEL, "DEBUG")], "ladder"),
        ("meta-level-integer", [meta(LEVEL, 3)], "ladder"),
        ("meta-token-string", [meta(TOKEN, "tok-1")], "express"),
        ("meta-token-integer", [meta(TOKEN, 7)], "express"),
        ("meta-token-empty-string", [meta(TOKEN, "")], "express"),
        ("meta-token-true", [meta(TOKEN, True)], "ladder"),
        ("meta-token-float", [meta(TOKEN, 1.5)], "ladder"),
        ("meta-token-null", [meta(TOKEN, None)], "ladder"),
        ("meta-token-object", [meta(TOKEN, {})], "ladder"),
        ("meta-token-and-debug", [meta(TOKEN, "t"), meta(LEVEL, "debug")], "express"),
        ("meta-extra-key", [meta("vendor.example/trace", {"id": 1})], "express"),
        # Arguments and the schema-version gate.
        ("unknown-tool", [call("nope.nope", {})], "declined"),
        ("invalid-arguments-seed", [at(("params", "arguments"), _BAD_ARGS)], "declined"),
        ("arguments-missing", [at(("params", "arguments"))], "declined"),
        ("arguments-null", [at(("params", "arguments"), None)], "declined"),
        ("arguments-list", [at(("params", "arguments"), [])], "declined"),
        ("arguments-string", [at(("params", "arguments"), "PMT-771")], "declined"),
        ("arguments-include-legs", [at(("params", "arguments", "include_legs"), True)], "express"),
        ("arguments-unknown-reference", [at(("params", "arguments", "reference"), "PMT-9999")],
         "express"),
        ("arguments-big-integer", [at(("params", "arguments", "include_legs"), 2**70)], "declined"),
        ("arguments-non-ascii", [at(("params", "arguments", "reference"), "PMT-\u0663\u0663\u0663")],
         None),
        ("schema-version-current", [meta(SCHEMA, "1.0.0")], "express"),
        ("schema-version-current-lenient", [meta(SCHEMA, "1.0.0"),
                                            at(("params", "arguments", "extra"), 1)], "declined"),
        ("schema-version-unknown", [meta(SCHEMA, "9.9.9")], "declined"),
        ("schema-version-not-semver", [meta(SCHEMA, "latest")], "declined"),
        ("schema-version-integer", [meta(SCHEMA, 1)], "declined"),
        ("schema-version-null", [meta(SCHEMA, None)], "express"),
        ("schema-version-retired", [call("db.query", {"sql": "select 1", "timeout": 5}),
                                    meta(SCHEMA, "3.0.0")], "declined"),
        ("db-query-current-inline", [call("db.query", {"sql": "select 1", "timeout": 5})],
         "declined"),
        ("db-query-invalid", [call("db.query", {"sql": ""})], "declined"),
        ("db-query-inline-with-token", [call("db.query", {"sql": "select 1", "timeout": 5}),
                                        meta(TOKEN, "t"), meta(LEVEL, "debug")], "declined"),
        ("tickets-create-inline", [call("tickets.create", {"title": "broken"})], "declined"),
        ("deprecated-pinned", [call("t.ver", {"note": "n"}), meta(SCHEMA, "1.0.0")], "express"),
        ("deprecated-current", [call("t.ver", {"note": "n", "extra": 2})], "express"),
        ("deprecated-pinned-newer-argument", [call("t.ver", {"extra": 2}), meta(SCHEMA, "1.0.0")],
         "express"),
        # Handler shapes.
        ("handler-sync-with-context", [call("t.sync_ctx", {"note": "n"})], "express"),
        ("handler-async-without-context", [call("t.async_plain", {"note": "n"})], "express"),
        ("handler-inline-sync", [call("t.inline", {"note": "n"})], "declined"),
        ("handler-inline-returns-awaitable", [call("t.inline_awaitable", {})], "declined"),
        ("handler-raises", [call("t.raise", {})], "express"),
        ("handler-raises-protocol-error", [call("t.raise_rpc", {})], "express"),
        ("handler-capability-missing", [call("t.needs", {})], "declined"),
        ("handler-capability-not-object", [call("t.needs", {}), meta(CAPS, {"sampling": True})],
         "ladder"),  # the envelope types the ClientCapabilities members: -32602 before the lane
        ("handler-capability-declared", [call("t.needs", {}), meta(CAPS, {"sampling": {}})],
         "express"),
        ("handler-requires-in-body-missing", [call("t.require", {})], "express"),
        ("handler-requires-in-body-partial", [call("t.require", {}),
                                              meta(CAPS, {"elicitation": {}})], "express"),
        ("handler-requires-in-body-declared", [call("t.require", {}),
                                               meta(CAPS, {"elicitation": {"url": {}}})],
         "express"),
        ("handler-output-breaks-schema", [call("t.badout", {})], "express"),
        ("handler-output-missing", [call("t.noout", {})], "express"),
        ("handler-output-good", [call("t.goodout", {})], "express"),
        ("handler-is-error", [call("t.iserror", {})], "express"),
        ("handler-unconvertible-value", [call("t.weird", {})], "express"),
        ("handler-result-field-not-json", [call("t.unencodable", {})], "express"),
        ("handler-notifies-tools-changed", [call("t.changed", {})], "express"),
        ("handler-chatty-silent", [call("t.chatty", {"note": "n"})], "express"),
        ("handler-chatty-debug-progress", [call("t.chatty", {"note": "n"}), meta(LEVEL, "debug"),
                                           meta(TOKEN, 99)], "express"),
        ("handler-chatty-warning", [call("t.chatty", {}), meta(LEVEL, "warning"),
                                    meta(TOKEN, "p")], "express"),
        ("handler-suspends", [call("t.suspend", {}), meta(TOKEN, "s")], "express"),
        ("handler-unbound", [call("t.unbound", {})], "declined"),
        ("payments-progress-and-log", [meta(TOKEN, "pay"), meta(LEVEL, "info")], "express"),
        # The principal resolver (reads the x-tenant header).
        ("tenant-hidden-tool", [call("t.tenant", {})], "declined"),
        ("tenant-visible-tool", [call("t.tenant", {}), put(b"x-tenant", b"acme")], "express"),
        ("tenant-with-ows", [call("t.tenant", {}), put(b"x-tenant", b" acme\t")], "express"),
        ("tenant-other", [put(b"x-tenant", b"globex")], "express"),
        ("tenant-refused", [put(b"x-tenant", b"deny")], "early"),
        ("tenant-refused-upper-name", [put(b"X-Tenant", b"deny")], "ladder"),
        ("tenant-duplicated", [put(b"x-tenant", b"acme"), dup(b"x-tenant", b"deny")], "ladder"),
        # x-mcp-header arguments (Mcp-Param-*).
        ("param-headers-match", [call("t.region", {"region": "eu", "count": 3}),
                                 put(b"mcp-param-region", b"eu"), put(b"mcp-param-count", b"3")],
         "declined"),
        ("param-headers-integer-decimal", [call("t.region", {"count": 3}),
                                           put(b"mcp-param-count", b"3.000")], "declined"),
        ("param-headers-mismatch", [call("t.region", {"region": "eu"}),
                                    put(b"mcp-param-region", b"us")], "declined"),
        ("param-headers-missing", [call("t.region", {"region": "eu"})], "declined"),
        ("param-headers-without-argument", [call("t.region", {}),
                                            put(b"mcp-param-region", b"eu")], "declined"),
        ("param-headers-base64", [call("t.region", {"region": "\u00e9u"}),
                                  put(b"mcp-param-region", _b64("\u00e9u"))], "declined"),
        ("param-headers-ows", [call("t.region", {"region": "eu"}),
                               put(b"mcp-param-region", b" eu\t")], "declined"),
        ("param-headers-duplicated", [call("t.region", {"region": "eu"}),
                                      put(b"mcp-param-region", b"eu"), dup(b"mcp-param-region")],
         "ladder"),
        ("param-headers-name-case", [call("t.region", {"region": "eu"}),
                                     put(b"Mcp-Param-Region", b"eu")], "ladder"),
        ("param-headers-invalid-arguments", [call("t.region", {"region": 5}),
                                             put(b"mcp-param-region", b"5")], "declined"),
        ("param-headers-conformance-inline", [call("test_custom_header", {"region": "eu"}),
                                              put(b"mcp-param-region", b"eu")], "declined"),
        ("param-headers-conformance-missing", [call("test_custom_header", {"region": "eu"})],
         "declined"),
        ("param-header-on-plain-tool", [put(b"mcp-param-reference", b"PMT-000")], "express"),
        # Other headers.
        ("accept-duplicated", [dup(b"accept")], "ladder"),
        ("content-type-duplicated", [dup(b"content-type", b"text/plain")], "ladder"),
        ("custom-header-duplicated", [put(b"x-trace", b"1"), dup(b"x-trace")], "ladder"),
        ("content-type-name-case", [rename(b"content-type", b"Content-Type")], "ladder"),
        ("custom-header-name-case", [put(b"X-Trace", b"1")], "ladder"),
        ("custom-header-latin1-name", [put(b"x-\xc4", b"1"), put(b"x-\xe4", b"2")], "ladder"),
        ("session-id-on-modern", [put(b"mcp-session-id", b"abc")], "express"),
        ("headers-minimal", [drop(b"host"), drop(b"content-type"), drop(b"accept"),
                             drop(b"content-length")], "express"),
        ("headers-none-at-all", [drop(b"host"), drop(b"content-type"), drop(b"accept"),
                                 drop(b"content-length"), drop(b"mcp-protocol-version"),
                                 drop(b"mcp-method"), drop(b"mcp-name")], "ladder"),
        ("header-value-latin1", [put(b"x-note", b"caf\xe9")], "express"),
        # Bodies that are not one request object.
        ("body-not-json", [raw(b'{"jsonrpc": "2.0", ', "raw truncated")], "ladder"),
        ("body-empty", [raw(b"", "raw empty")], "ladder"),
        ("body-invalid-utf8", [raw(b'{"jsonrpc": "\xff"}', "raw bad utf-8")], "ladder"),
        ("body-bom", [raw(b"\xef\xbb\xbf" + json.dumps(BASE_MESSAGE).encode(), "raw bom")],
         None),
        ("body-whitespace", [raw(b" \n" + json.dumps(BASE_MESSAGE).encode() + b"\n ", "raw ws")],
         "express"),
        ("body-duplicate-keys", [raw(json.dumps(BASE_MESSAGE)[:-1].encode() + b', "id": 2}',
                                     "raw duplicate id")], None),
        ("body-batch", [whole([BASE_MESSAGE], "batch")], "ladder"),
        ("body-empty-batch", [whole([], "empty batch")], "ladder"),
        ("body-string", [whole("tools/call", "string")], "ladder"),
        ("body-null", [whole(None, "null")], "ladder"),
        ("body-too-deep", [at(("params", "arguments", "reference"), _NESTED)], "ladder"),
    ]
    return cases


CASES: Final = tuple(build_case(case_id, mutations, lane)
                     for case_id, mutations, lane in _named_cases())

MUTATIONS: Final[tuple[Mutation, ...]] = (
    *(m for name, _ in ROUTING for m in (drop(name), dup(name), dup(name, b"x"),
                                          pad(name, b" ", b"\t"), put(name, b"wrong"))),
    *(rename(name, cased) for name, cased in ROUTING),
    put(b"mcp-name", _b64(TOOL)), put(b"mcp-protocol-version", b"2025-11-25"),
    at(("id",), "s"), at(("id",), True), at(("id",), 2.5), at(("id",), None), at(("id",)),
    at(("jsonrpc",), "1.0"), at(("params",)), at(("params",), []), at(("result",), {}),
    at(("method",), "tools/list"), at(("params", "_meta")), at(("params", "_meta"), []),
    meta(V), meta(V, 1), meta(V, "2025-11-25"), meta(CAPS), meta(CAPS, []),
    meta(CAPS, {"sampling": {}}), meta(CAPS, {"elicitation": {"url": {}}}),
    meta(INFO, {"name": "c", "version": "1"}), meta(INFO, {"name": 1}),
    meta(LEVEL, "debug"), meta(LEVEL, "bogus"), meta(TOKEN, "t"), meta(TOKEN, 3), meta(TOKEN, False),
    meta(SCHEMA, "1.0.0"), meta(SCHEMA, "3.0.0"), meta(SCHEMA, "2.0.0"), meta(SCHEMA, 7),
    at(("params", "name"), None), at(("params", "name"), 3), at(("params", "arguments")),
    at(("params", "arguments"), []), at(("params", "arguments"), {"reference": "PMT-772"}),
    at(("params", "arguments"), _BAD_ARGS), at(("params", "arguments", "extra"), True),
    call("nope.nope", {}), call("db.query", {"sql": "select 2", "timeout": 1}),
    call("t.sync_ctx", {"note": "x"}), call("t.async_plain", {}), call("t.inline", {}),
    call("t.raise", {}), call("t.needs", {}), call("t.require", {}), call("t.badout", {}),
    call("t.chatty", {"note": "x"}), call("t.suspend", {}), call("t.unbound", {}),
    call("t.tenant", {}), call("t.ver", {"note": "v"}), call("t.region", {"region": "eu"}),
    call("test_custom_header", {"region": "eu"}), call("caf\u00e9", {}),
    put(b"mcp-param-region", b"eu"), put(b"mcp-param-region", b"us"), put(b"mcp-param-count", b"3"),
    put(b"x-tenant", b"acme"), put(b"x-tenant", b"deny"), put(b"X-Tenant", b"acme"),
    dup(b"accept"), rename(b"content-type", b"Content-Type"), put(b"x-\xc4", b"1"),
    drop(b"host"), put(b"mcp-session-id", b"s"),
    raw(b"{", "raw {"), whole([BASE_MESSAGE], "batch"),
)
"""The pool the property test draws mutation lists from."""
