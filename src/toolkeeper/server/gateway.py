"""The gateway: the registry, the handlers and the call log behind the protocol kernel.

:func:`build_gateway` is the one place that assembles a server: it fills the kernel's method
table with ``tools/list`` and ``tools/call`` (both eras), ``subscriptions/listen`` (modern) and,
when the handlers bind prompts, ``prompts/list`` and ``prompts/get`` (both eras, with the
``prompts`` capability; :mod:`~toolkeeper.server.prompt_methods`),
and wires the principal resolver and the change hub (registry change -> list_changed to
listening clients; legacy sessions get it on their standalone GET stream). Transports take
``gateway.kernel`` (and ``gateway.changes`` for the legacy stream and shutdown).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import msgspec

from toolkeeper.protocol import (
    CacheHint,
    Call,
    Era,
    Method,
    MethodResult,
    MethodTable,
    ServerIdentity,
    ServerKernel,
    SessionTable,
    plain_express,
)
from toolkeeper.protocol.sealing import Sealer
from toolkeeper.protocol.versions import UNSTRUCTURED_VERSIONS
from toolkeeper.registry import Principal, Registry
from toolkeeper.registry.spent_states import SpentStateStore
from toolkeeper.server.call_outcomes import DEFAULT_MAX_REPORTED_ERRORS
from toolkeeper.server.calllog import CallLog, InMemoryCallLog
from toolkeeper.server.calls import ToolCalls
from toolkeeper.server.changes import ChangeHub
from toolkeeper.server.cursors import DEFAULT_CURSOR_TTL_S, ListCursors
from toolkeeper.server.handlers import ToolHandlers
from toolkeeper.server.limits import CallLimits
from toolkeeper.server.listen import listen_method
from toolkeeper.server.principal import LocalPrincipal, PrincipalResolver
from toolkeeper.server.prompt_methods import PromptMethods
from toolkeeper.server.refusals import auth_refusal, limit_refusal
from toolkeeper.server.resuming import DEFAULT_TTL_S, RequestStates, SpentStates
from toolkeeper.server.runnable import CanRun
from toolkeeper.server.sources import FirstOf, HandlerSource
from toolkeeper.server.views import Page, ToolViews, View

__all__ = ["Gateway", "build_gateway", "default_identity"]

CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": True}, "logging": {}}
PROMPTS_CAPABILITY: dict[str, Any] = {"listChanged": False}
"""Advertised when a prompt is bound: prompts are fixed once the gateway is built, so their
list never changes."""


def default_identity() -> ServerIdentity:
    try:
        version = metadata.version("toolkeeper")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        version = "0.0.0"
    return ServerIdentity("toolkeeper", version, "toolkeeper gateway")


@dataclass(frozen=True, slots=True)
class Gateway:
    """An assembled gateway: hand ``kernel`` to a transport."""

    kernel: ServerKernel
    registry: Registry
    handlers: ToolHandlers
    call_log: CallLog
    views: ToolViews
    resolve_principal: PrincipalResolver
    changes: ChangeHub
    sealer: Sealer
    """Seals the state clients carry back (``tools/list`` cursors, a call's request state):
    the configured keys, or a random per-process key (``sealer.ephemeral_key``)."""


def _wire_tools(page: View | Page, call: Call) -> msgspec.Raw:
    """The page's ``tools`` array for the caller's wire."""
    if call.era is Era.MODERN:
        return page.tools_json
    if call.protocol_version in UNSTRUCTURED_VERSIONS:
        return page.unstructured_tools_json
    return page.legacy_tools_json


def _list_tools(views: ToolViews, cursors: ListCursors) -> Callable[[Call], MethodResult]:
    def list_tools(call: Call) -> dict[str, Any]:
        cursor = call.params.get("cursor")
        principal = call.principal
        if not isinstance(principal, Principal):
            raise TypeError("tools/list needs a Principal from the principal resolver")
        view = views.view(principal, since_ns=call.facts.received_ns)
        if cursor is not None or len(view.pages) > 1:
            index, after = cursors.follow(cursor, view, principal)
            result: dict[str, Any] = {"tools": _wire_tools(view.pages[index], call)}
            if after is not None:
                result["nextCursor"] = after
            return result
        # The one-page list (every estate under the page size), kept free of the paging
        # above: it is the measured path (_wire_tools inlined).
        if call.era is Era.MODERN:
            return {"tools": view.tools_json}
        if call.protocol_version in UNSTRUCTURED_VERSIONS:
            return {"tools": view.unstructured_tools_json}
        return {"tools": view.legacy_tools_json}
    return list_tools


def build_gateway(registry: Registry, handlers: ToolHandlers | None = None, *,
                  call_log: CallLog | None = None,
                  resolve_principal: PrincipalResolver | None = None,
                  identity: ServerIdentity | None = None, instructions: str | None = None,
                  list_ttl_ms: int = 0, discover_ttl_ms: int = 0,
                  sessions: SessionTable | None = None,
                  changes: ChangeHub | None = None, limits: CallLimits | None = None,
                  legacy_sessions: str = "stateful", sealer: Sealer | None = None,
                  list_page_size: int | None = None,
                  list_cursor_ttl_s: float = DEFAULT_CURSOR_TTL_S,
                  request_state_ttl_s: float = DEFAULT_TTL_S,
                  max_reported_errors: int = DEFAULT_MAX_REPORTED_ERRORS,
                  runs: CanRun | None = None,
                  sources: Sequence[HandlerSource] = ()) -> Gateway:
    """Assemble a gateway over ``registry``. Defaults: no handlers, an in-memory call log,
    the anonymous :class:`LocalPrincipal`, ``ttlMs`` 0 (``tools/list`` is ``private``,
    ``server/discover`` ``public``), a change hub subscribed to ``registry``, no limits
    (``limits``: :func:`~toolkeeper.server.limits.build_limits`; their rate applies to a
    legacy HTTP ``initialize`` too), stateful legacy sessions
    (``legacy_sessions="stateless"``: :mod:`~toolkeeper.protocol.stateless`), an ephemeral
    sealer, and one ``tools/list`` page however long the list (``list_page_size``: tools per
    page, later pages reached by sealed cursors, :mod:`~toolkeeper.server.cursors`). A
    call's ``requestState`` is sealed with the same sealer, good for ``request_state_ttl_s``
    seconds (:mod:`~toolkeeper.server.resuming`); a state that ran a ``write`` or
    ``destructive`` tool is spent in the registry's store (every replica sharing it refuses
    it again; a store that keeps no spent states: this process only). An invalid-arguments
    result lists at most ``max_reported_errors`` errors
    (:func:`~toolkeeper.server.call_outcomes.invalid_arguments_result`). Only versions that can
    run in this process are listed and served (``runs``, :mod:`~toolkeeper.server.runnable`;
    default: the bound ``handlers`` when they are given; a gateway built without any
    ``handlers`` and ``runs`` lists what the registry holds, as a view of the estate, and
    answers each call with an ``isError`` "no handler" result; ``toolkeeper serve`` always
    passes its handlers). ``sources``: more :class:`~toolkeeper.server.sources.HandlerSource`
    s after ``handlers`` (an upstream's forwarding tools): a call's binding is looked up in
    ``handlers`` first, then in each in order, and they count as what can run (unless
    ``runs`` is given); without them the handlers are used as they are."""
    given = handlers is not None
    handlers = handlers if handlers is not None else ToolHandlers()
    bindings: HandlerSource = FirstOf(handlers, *sources) if sources else handlers
    if runs is None and (given or sources):
        runs = bindings
    call_log = call_log if call_log is not None else InMemoryCallLog()
    if resolve_principal is not None and _is_async(resolve_principal):
        # It would hand back a coroutine, not a principal, and fail every request.
        raise TypeError("resolve_principal must be a plain function of the transport facts, "
                        "not an async one: resolve credentials the transport already has")
    resolver: PrincipalResolver = (resolve_principal if resolve_principal is not None
                                   else LocalPrincipal(registry))
    observe = getattr(resolver, "observe_refusals", None)
    if callable(observe):  # a resolver that refuses credentials (the bearer one) records them
        log = call_log
        observe(lambda reason, credential, era: log.refused(auth_refusal(reason, credential,
                                                                         era)))
    views = ToolViews(registry, page_size=list_page_size, runs=runs)
    sealer = sealer if sealer is not None else Sealer.ephemeral()
    hub = changes if changes is not None else ChangeHub.for_registry(registry)
    identity = identity or default_identity()
    store = registry.store
    states = RequestStates(sealer, ttl_s=request_state_ttl_s, spent=SpentStates(
        store if isinstance(store, SpentStateStore) else None))
    admission = limits.admission if limits is not None else None
    calls = ToolCalls(registry, views, bindings, call_log, hub.tools_changed,
                      limits.call_timeout if limits is not None else None, states,
                      max_reported_errors=max_reported_errors, admission=admission)
    list_tools = _list_tools(views, ListCursors(sealer, ttl_s=list_cursor_ttl_s))
    call_method = Method("tools/call", calls, header_schema=calls.header_schema,
                         express=calls.express)
    if admission is not None:  # (the express lane admits its own Pendings)
        call_method = admission.wrap(
            call_method, lambda call, exc: call_log.refused(limit_refusal(call, exc)),
            express=False)
    list_cache = CacheHint(list_ttl_ms, "private")
    capabilities = CAPABILITIES
    prompt_methods: list[Method] = []
    if len(handlers.prompts):  # the capability and the methods only when there are prompts
        capabilities = {**CAPABILITIES, "prompts": PROMPTS_CAPABILITY}
        prompt_methods = PromptMethods(handlers.prompts, states,
                                       hub.tools_changed).methods(list_cache)
    table = MethodTable([
        Method("tools/list", list_tools, cache=list_cache, express=plain_express(list_tools)),
        call_method,
        listen_method(hub),
        *prompt_methods,
    ])
    kernel = ServerKernel(
        table, identity=identity, capabilities=capabilities,
        instructions=instructions, discover_cache=CacheHint(discover_ttl_ms, "public"),
        resolve_principal=resolver, sessions=sessions, legacy_sessions=legacy_sessions,
        admit_initialize=(limits.admission.take if limits is not None
                          and limits.admission is not None else None))
    return Gateway(kernel, registry, handlers, call_log, views, resolver, hub, sealer)


def _is_async(function: object) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 - the method itself is inspected
    return any(inspect.iscoroutinefunction(f) for f in (function, call) if f is not None)
