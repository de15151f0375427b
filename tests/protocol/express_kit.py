"""Differential kit for the express lane of modern HTTP ``tools/call`` (commit 2f97ef8).

Twin gateways over identical estates (the demo estate, ``examples/conformance``'s
``test_custom_header`` contract, and test tools covering every handler shape), a request
corpus built from bench/gateway.py's valid ``payments.lookup`` call by named mutations, and
answers reduced to comparable values: outcome kind, status, headers, body bytes, for a Pending
its completion and every notification it emitted, and the call log records.

The *express* side answers with ``ServerKernel.handle_asgi(body, pairs)``; the *reference*
side with ``handle_http(body, TransportFacts("http", HeaderView.from_asgi(pairs)))``, which
never takes the lane. :class:`LaneProbe` records which way the express side went:

* ``express``  - ``Method.express`` (``ToolCalls.express``) answered the call (a Pending);
* ``declined`` - the one-pass ladder passed, ``ToolCalls.express`` said None, the call went on
  from rung 15 with the same ``Call``;
* ``early``    - the one-pass ladder answered before ``ToolCalls.express`` (the principal
  resolver refused);
* ``ladder``   - the full ladder (``ModernPipeline.express`` not tried or said None).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolkeeper.contracts.canonical import loads_json
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    Accepted,
    HeaderView,
    Outcome,
    Pending,
    Reply,
    ServerKernel,
    TransportFacts,
    encode_message,
)
from toolkeeper.protocol.faults import invalid_request
from toolkeeper.protocol.headers import encode_header_value
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import (
    Gateway,
    InMemoryCallLog,
    LocalPrincipal,
    PrincipalResolver,
    ToolContext,
    ToolHandlers,
    ToolResult,
    build_gateway,
    text,
)

__all__ = [
    "BASE_MESSAGE",
    "CASES",
    "MUTATIONS",
    "TOOL",
    "VERSION",
    "Answer",
    "Case",
    "Draft",
    "LaneProbe",
    "Mutation",
    "Twin",
    "at",
    "build_case",
    "build_gateway_for_tests",
    "build_handlers",
    "build_registry",
    "call",
    "compare_case",
    "drop",
    "dup",
    "header_resolver",
    "log_rows",
    "meta",
    "pad",
    "put",
    "raw",
    "rename",
    "settle",
    "shared_registry",
    "strip_express",
    "whole",
]

ROOT: Final = Path(__file__).resolve().parents[2]
CONFORMANCE: Final = ROOT / "examples" / "conformance" / "contracts"
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


# --- the estate ------------------------------------------------------------------------------


def _contract(name: str, properties: dict[str, Any] | None = None, *, version: str = "1.0.0",
              output: dict[str, Any] | None = None, tenants: Sequence[str] = ()) -> Any:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    data: dict[str, Any] = {
        "name": name, "version": version, "title": name, "description": f"{name} (express tests)",
        "inputSchema": schema, "dataClassification": "public", "sideEffect": "read",
        "tenants": list(tenants)}
    if output is not None:
        data["outputSchema"] = output
    return spec_from_mapping(data)


_NOTE: Final[dict[str, Any]] = {"type": "object", "properties": {"note": {"type": "string"}}}
_OUT: Final = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

EXTRA_CONTRACTS: Final = (
    _contract("t.region", {"region": {"type": "string", "x-mcp-header": "Region"},
                           "count": {"type": "integer", "x-mcp-header": "Count"}}),
    _contract("t.sync_ctx", _NOTE["properties"]),
    _contract("t.async_plain", _NOTE["properties"]),
    _contract("t.inline", _NOTE["properties"]),
    _contract("t.inline_awaitable", _NOTE["properties"]),
    _contract("t.raise", _NOTE["properties"]),
    _contract("t.raise_rpc", _NOTE["properties"]),
    _contract("t.needs", _NOTE["properties"]),
    _contract("t.require", _NOTE["properties"]),
    _contract("t.badout", _NOTE["properties"], output=_OUT),
    _contract("t.noout", _NOTE["properties"], output=_OUT),
    _contract("t.goodout", _NOTE["properties"], output=_OUT),
    _contract("t.iserror", _NOTE["properties"]),
    _contract("t.weird", _NOTE["properties"]),
    _contract("t.changed", _NOTE["properties"]),
    _contract("t.chatty", _NOTE["properties"]),
    _contract("t.suspend", _NOTE["properties"]),
    _contract("t.unbound", _NOTE["properties"]),
    _contract("t.tenant", _NOTE["properties"], tenants=["acme"]),
    _contract("t.ver", _NOTE["properties"]),
    _contract("t.ver", {**_NOTE["properties"], "extra": {"type": "integer"}}, version="1.1.0"),
)


def build_registry() -> Registry:
    """The demo estate (``db.query`` 3.0.0 retired), the conformance ``test_custom_header``
    contract (an ``x-mcp-header`` argument, an inline sync handler), and the test tools;
    ``t.ver`` 1.0.0 deprecated in favour of 1.1.0."""
    registry = Registry.open("memory:")
    install_demo(registry)
    registry.publish(spec_from_mapping(loads_json(
        (CONFORMANCE / "test_custom_header.json").read_bytes())))
    for spec in EXTRA_CONTRACTS:
        registry.publish(spec)
    registry.deprecate("t.ver", Version.parse("1.0.0"), message="use 1.1.0",
                       successor=Version.parse("1.1.0"))
    return registry


class _Unconvertible:
    """A handler value ``to_tool_result`` refuses (a handler bug: the generic failure)."""


def _test_handlers() -> ToolHandlers:
    handlers = ToolHandlers()

    async def region(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"region": arguments.get("region"), "count": arguments.get("count")}

    def sync_ctx(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return f"sync with a context: {ctx.tool} {ctx.version} {arguments.get('note')}"

    async def async_plain(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"note": arguments.get("note"), "async": True}

    def inline(arguments: dict[str, Any]) -> str:
        return f"inline: {arguments.get('note')}"

    def inline_awaitable(arguments: dict[str, Any]) -> Any:
        async def later() -> str:
            return "awaited later"
        return later()

    async def raises(arguments: dict[str, Any], ctx: ToolContext) -> str:
        raise RuntimeError("secret detail /etc/passwd")

    async def raises_rpc(arguments: dict[str, Any], ctx: ToolContext) -> str:
        raise JsonRpcError(-32099, "a handler's own protocol error")

    async def needs(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return "sampling declared"

    async def require(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ctx.require_capabilities({"elicitation": {"url": {}}})
        return "elicitation declared"

    async def badout(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"ok": "not a boolean"}

    async def noout(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return "no structured content"

    async def goodout(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"ok": True}

    async def iserror(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult((text("it went wrong, on purpose"),), {"why": "test"}, is_error=True)

    async def weird(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return _Unconvertible()

    async def changed(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ctx.notify_tools_changed()
        return "changed"

    async def chatty(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(0.5, None, None)
        await ctx.progress(1, 4, "one of four")
        for level in ("debug", "info", "warning", "error", "emergency"):
            await ctx.log(level, {"level": level, "note": arguments.get("note")}, logger="chatty")
        await ctx.log("notice", "no logger")
        return f"chatty era={ctx.era.value} caps={sorted(ctx.client_capabilities)}"

    async def suspend(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(0)
        await ctx.progress(1, 1, "after a suspension")
        await asyncio.sleep(0)
        return "resumed"

    async def plain(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"tool": ctx.tool, "version": str(ctx.version), "tenant": ctx.principal.tenant,
                "arguments": arguments}

    handlers.bind("t.region", region)
    handlers.bind("t.sync_ctx", sync_ctx)
    handlers.bind("t.async_plain", async_plain)
    handlers.bind("t.inline", inline)
    handlers.bind("t.inline_awaitable", inline_awaitable)
    handlers.bind("t.raise", raises)
    handlers.bind("t.raise_rpc", raises_rpc)
    handlers.bind("t.needs", needs, requires={"sampling": {}})
    handlers.bind("t.require", require)
    handlers.bind("t.badout", badout)
    handlers.bind("t.noout", noout)
    handlers.bind("t.goodout", goodout)
    handlers.bind("t.iserror", iserror)
    handlers.bind("t.weird", weird)
    handlers.bind("t.changed", changed)
    handlers.bind("t.chatty", chatty)
    handlers.bind("t.suspend", suspend)
    handlers.bind("t.tenant", plain)
    handlers.bind("t.ver", plain)
    return handlers


def _custom_header(arguments: dict[str, Any]) -> str:
    """``examples/conformance/handlers.py``'s ``custom_header`` (an inline sync handler)."""
    return f"region={arguments['region']}"


def build_handlers() -> ToolHandlers:
    handlers = demo_handlers()
    handlers.merge(_test_handlers())
    handlers.bind("test_custom_header", _custom_header)
    return handlers


def header_resolver(registry: Registry) -> PrincipalResolver:
    """The local principal, its tenant taken from an ``x-tenant`` header when there is one
    (``deny`` refuses the request): a resolver that reads the transport facts' headers."""
    local = LocalPrincipal(registry)

    def resolve(facts: TransportFacts) -> Principal:
        base = local(facts)
        tenant = facts.headers.get("x-tenant")
        if tenant is None:
            return base
        if tenant == "deny":
            raise invalid_request("principal refused by the resolver")
        return Principal(tenant, base.scopes, base.clearance)
    return resolve


@functools.cache
def shared_registry() -> Registry:
    """One estate for every gateway of a test session: nothing here writes to the registry
    after it is built, so gateways over it differ only in their own state (fresh per twin)."""
    return build_registry()


def build_gateway_for_tests(registry: Registry | None = None) -> Gateway:
    registry = registry if registry is not None else shared_registry()
    return build_gateway(registry, build_handlers(), call_log=InMemoryCallLog(),
                         resolve_principal=header_resolver(registry))


def strip_express(kernel: ServerKernel) -> None:
    """Take the express lane out of a kernel (a reference gateway): the method table offers no
    express method, and the one-pass ladder refuses to run if reached another way."""
    table: Any = kernel.methods
    table.express = lambda name: None
    modern: Any = kernel._modern

    def never(*args: Any, **kwargs: Any) -> Outcome | None:
        raise AssertionError("the reference kernel took the express lane")

    modern.express = never


# --- which way a request went ----------------------------------------------------------------


class LaneProbe:
    """Wraps the express side's ``ModernPipeline.handle``/``express`` and the ``Method.express``
    of what ``MethodTable.express`` offers, to see which way each request went (see the
    module docstring)."""

    def __init__(self, kernel: ServerKernel) -> None:
        self.ladder = 0
        self.one_pass: list[bool] = []  # ModernPipeline.express answered (not None)
        self.method: list[bool] = []  # Method.express answered (not None)
        modern: Any = kernel._modern
        handle, express = modern.handle, modern.express

        def counted_handle(*args: Any, **kwargs: Any) -> Outcome:
            self.ladder += 1
            result: Outcome = handle(*args, **kwargs)
            return result

        def counted_express(*args: Any, **kwargs: Any) -> Outcome | None:
            result: Outcome | None = express(*args, **kwargs)
            self.one_pass.append(result is not None)
            return result

        modern.handle = counted_handle
        modern.express = counted_express
        table: Any = kernel.methods
        offered = table.express
        wrapped: dict[int, Any] = {}

        def counted_offer(name: str) -> Any:
            method = offered(name)
            if method is None:
                return None
            if id(method) not in wrapped:
                lane = method.express

                def counted_lane(call: Any) -> Outcome | None:
                    result: Outcome | None = lane(call)
                    self.method.append(result is not None)
                    return result

                wrapped[id(method)] = (method, dataclasses.replace(method, express=counted_lane))
            return wrapped[id(method)][1]

        table.express = counted_offer

    def reset(self) -> None:
        self.ladder = 0
        self.one_pass.clear()
        self.method.clear()

    @property
    def lane(self) -> str:
        """The way of the one request since :meth:`reset`."""
        if self.method:
            assert len(self.method) == 1 and self.ladder == 0, (self.method, self.ladder)
            return "express" if self.method[0] else "declined"
        if self.one_pass and self.one_pass[0]:
            assert self.ladder == 0
            return "early"
        return "ladder"


# --- comparable answers ----------------------------------------------------------------------

Answer = tuple[Any, ...]
"""``("reply", status, headers, body)``, ``("accepted", cancel, headers)`` or
``("pending", request_id, stream, headers, final reply, emitted notification bytes)``."""


def _reply(reply: Reply) -> Answer:
    assert isinstance(reply, Reply), reply
    return ("reply", reply.status, reply.headers, reply.body)


async def settle(outcome: Outcome) -> Answer:
    """The outcome as a comparable value; a Pending is completed with a recording emit."""
    if isinstance(outcome, Reply):
        return _reply(outcome)
    if isinstance(outcome, Accepted):
        return ("accepted", outcome.cancel, outcome.headers)
    assert isinstance(outcome, Pending), outcome
    emitted: list[bytes] = []

    async def emit(message: dict[str, Any]) -> None:
        emitted.append(encode_message(message))

    async with asyncio.timeout(5):
        final = await outcome.complete(emit)
    return ("pending", outcome.request_id, outcome.stream, outcome.headers, _reply(final),
            tuple(emitted))


def log_rows(gateway: Gateway) -> list[tuple[Any, ...]]:
    """The call log without latencies."""
    log = gateway.call_log
    assert isinstance(log, InMemoryCallLog)
    return [(r.tool, r.version, r.principal, r.arguments_digest, r.era, r.outcome)
            for r in log.records]


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
         "declined"),
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


# --- comparing one case ----------------------------------------------------------------------


@dataclass
class Twin:
    """Two gateways over identical estates: ``express`` answers with ``handle_asgi``,
    ``reference`` with ``handle_http`` over ``HeaderView.from_asgi``."""

    express: Gateway = field(default_factory=build_gateway_for_tests)
    reference: Gateway = field(default_factory=build_gateway_for_tests)
    probe: LaneProbe = field(init=False)

    def __post_init__(self) -> None:
        self.probe = LaneProbe(self.express.kernel)

    def outcomes(self, case: Case) -> tuple[Outcome, Outcome, str]:
        """Both outcomes (nothing completed yet) and the express side's lane."""
        self.probe.reset()
        fast = self.express.kernel.handle_asgi(case.body, list(case.pairs))
        lane = self.probe.lane
        slow = self.reference.kernel.handle_http(
            case.body, TransportFacts("http", HeaderView.from_asgi(list(case.pairs))))
        return fast, slow, lane


def _shape(outcome: Outcome) -> Answer:
    """What can be compared before a Pending runs."""
    if isinstance(outcome, Pending):
        return ("pending", outcome.request_id, outcome.stream, outcome.headers)
    return (type(outcome).__name__,)


async def compare_case(twin: Twin, case: Case) -> str:
    """Assert both sides answer ``case`` identically (outcome, completion, notifications, call
    log rows added); returns the express side's lane."""
    logged = len(log_rows(twin.express)), len(log_rows(twin.reference))
    fast, slow, lane = twin.outcomes(case)
    assert _shape(fast) == _shape(slow), (case.id, lane)
    fast_answer, slow_answer = await settle(fast), await settle(slow)
    assert fast_answer == slow_answer, (case.id, lane)
    assert log_rows(twin.express)[logged[0]:] == log_rows(twin.reference)[logged[1]:], case.id
    return lane
