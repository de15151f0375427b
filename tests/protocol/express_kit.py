"""Differential kit for the express lane of modern HTTP ``tools/call`` (commit 2f97ef8).

Twin gateways over identical estates (the demo estate, ``examples/conformance``'s
``test_custom_header`` contract, and test tools covering every handler shape), the request
corpus of ``express_cases`` (bench/gateway.py's valid ``payments.lookup`` call and named
mutations of it), and answers reduced to comparable values: outcome kind, status, headers,
body bytes, for a Pending its completion and every notification it emitted, and the call log
records.

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
import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from express_cases import ROOT, Case

from toolkeeper.contracts.canonical import loads_json
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import (
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
from toolkeeper.server.content import ForwardedResult

__all__ = [
    "EXTRA_CONTRACTS",
    "Answer",
    "LaneProbe",
    "Twin",
    "build_gateway_for_tests",
    "build_handlers",
    "build_registry",
    "compare_case",
    "header_resolver",
    "log_rows",
    "settle",
    "shared_registry",
    "strip_express",
]

CONFORMANCE: Final = ROOT / "examples" / "conformance" / "contracts"


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
    _contract("t.unencodable", _NOTE["properties"]),
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

    async def unencodable(arguments: dict[str, Any], ctx: ToolContext) -> ForwardedResult:
        return ForwardedResult((text("fine content"),), extra={"futureHint": float("inf")})

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
    handlers.bind("t.inline", inline, inline=True)
    handlers.bind("t.inline_awaitable", inline_awaitable, inline=True)
    handlers.bind("t.raise", raises)
    handlers.bind("t.raise_rpc", raises_rpc)
    handlers.bind("t.needs", needs, requires={"sampling": {}})
    handlers.bind("t.require", require)
    handlers.bind("t.badout", badout)
    handlers.bind("t.noout", noout)
    handlers.bind("t.goodout", goodout)
    handlers.bind("t.iserror", iserror)
    handlers.bind("t.weird", weird)
    handlers.bind("t.unencodable", unencodable)
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

                def counted_lane(call: Any, finish: Any) -> Outcome | None:
                    result: Outcome | None = lane(call, finish)
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
