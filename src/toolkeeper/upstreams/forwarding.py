"""Imported upstream tools run by forwarding: a handler source the gateway consults like its
own handlers (``build_gateway(registry, handlers, sources=[upstream_tools])``).

:class:`UpstreamTools` can run exactly the bound (exposed name, version) pairs of its
``bindings`` (re-read by :meth:`UpstreamTools.refresh`, whose change grows the revision the
gateway's routes and views are cached on). The binding of a version forwards the call, after
the gateway's gate, input validation and call log, to the upstream tool
(:attr:`~toolkeeper.upstreams.model.UpstreamBinding.tool`) through
:class:`~toolkeeper.upstreams.connections.UpstreamConnections`:

* the upstream's result comes back as it was sent
  (:class:`~toolkeeper.server.content.ForwardedResult`: additive fields such as ``futureHint``,
  ``structuredContent``, ``isError`` and ``_meta`` kept; the reserved
  ``io.modelcontextprotocol/*`` ``_meta`` keys of its hop dropped, the gateway's own set); the
  contract's output schema is checked on it, never used to strip it;
* a JSON-RPC error answers the caller with the same code, message and data
  (:class:`~toolkeeper.server.content.ForwardedError`), ``data.upstream`` naming the upstream
  when the data is an object or absent;
* an upstream that gives no answer (hung, dead, refusing, answering garbage, its breaker open)
  is an ``isError`` result naming the upstream, with
  ``_meta["io.toolkeeper/upstream"] = {"upstream", "code"}`` (codes in
  :mod:`~toolkeeper.upstreams.connections`), within the upstream's ``call_timeout_s``;
* the upstream's ``notifications/progress`` reach the caller (under the caller's progress
  token; the upstream is given one of the gateway's only when the caller asked for progress);
* the upstream's ``notifications/message`` reach the caller at the level it asked for (the
  hop's ``_meta`` logLevel is the caller's, so a modern upstream logs only when the caller
  asked for logs), in order with its progress and before the result;
* a call the caller cancels, or that runs past its timeout, is cancelled upstream
  (``notifications/cancelled``; on modern HTTP by closing its stream);
* a legacy upstream's requests to the client (elicitation, sampling, roots) are asked of a
  legacy caller and answered back, refused for a modern one (:mod:`~toolkeeper.upstreams.
  asking`);
* a modern upstream's ``input_required`` result (SEP-2322) reaches a **modern caller** as the
  gateway's own ``input_required``: the upstream's ``inputRequests`` as given (each checked
  against the caller's capabilities, -32021), and the gateway's sealed ``requestState``
  (:mod:`~toolkeeper.server.resuming`: bound to the principal, the exposed tool, its contract
  version and the arguments) carrying the upstream's ``requestState`` inside it. The caller's
  retry is opened like any (a tampered, expired, foreign or other principal's or tool's state
  is refused -32602 ``invalid_request_state`` before anything is forwarded; a ``write`` or
  ``destructive`` tool's state runs once), then forwarded with the caller's
  ``inputResponses`` (to the keys the upstream asked) and the upstream's own
  ``requestState``. A **legacy caller** is bridged: each of the upstream's asks is a request
  on the caller's stream (:meth:`~toolkeeper.server.ToolContext.ask_all`), and the upstream
  is retried with the answers and its state, at most :data:`MAX_ROUNDS` rounds in all (then
  ``upstream.input_required``). An ``input_required`` that is not SEP-2322's shape (an ask of
  another method, a ``requestState`` that is not a string) is ``upstream.protocol_error``.

What is sent: the tool's name, the arguments (valid under the contract in force), and the
caller's ``_meta`` less the keys of this hop (``io.modelcontextprotocol/*``, ``progressToken``,
the gateway's ``schemaVersion`` and ``fastmcp`` pins). Never the caller's credential. A modern
upstream is declared, as this hop's ``clientCapabilities``, the caller's own ``elicitation``,
``sampling`` and ``roots`` (what the gateway can pass on), nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final

from toolkeeper.contracts.semver import Version
from toolkeeper.errors import SemverError
from toolkeeper.protocol import Era
from toolkeeper.protocol.meta import LOG_LEVEL_KEY
from toolkeeper.server.content import RESERVED_META_PREFIX, ForwardedError, ForwardedResult, text
from toolkeeper.server.handlers import HandlerBinding, ToolContext
from toolkeeper.upstreams.asking import ASKS, caller_asker
from toolkeeper.upstreams.connections import PROTOCOL_ERROR, UpstreamConnections, UpstreamFault
from toolkeeper.upstreams.model import UpstreamBinding, UpstreamDefinition

__all__ = ["INPUT_REQUIRED", "MAX_ROUNDS", "UPSTREAM_META_KEY", "UpstreamTools", "fault_result"]

UPSTREAM_META_KEY: Final = "io.toolkeeper/upstream"
"""The ``_meta`` key of a result the gateway gave for an upstream that did not answer."""
INPUT_REQUIRED: Final = "upstream.input_required"
"""The fault code of an upstream that kept asking a legacy caller past :data:`MAX_ROUNDS`."""
MAX_ROUNDS: Final = 8
"""The upstream calls one bridged call (a legacy caller's) makes at most."""
_HOP_KEYS: Final = frozenset({"progressToken", "schemaVersion", "fastmcp"})
_PASSED_CAPABILITIES: Final = ("elicitation", "sampling", "roots")


def fault_result(upstream: str, code: str, message: str) -> ForwardedResult:
    """The ``isError`` result of a call its upstream did not answer."""
    return ForwardedResult((text(message),), is_error=True,
                           meta={UPSTREAM_META_KEY: {"upstream": upstream, "code": code}})


def forwarded_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's ``_meta`` as sent on: the keys of this hop left out."""
    if not meta:
        return {}
    return {key: value for key, value in meta.items()
            if key not in _HOP_KEYS and not key.startswith(RESERVED_META_PREFIX)}


def _error_data(upstream: str, data: Any) -> Any:
    if data is None:
        return {"upstream": upstream}
    if isinstance(data, dict) and "upstream" not in data:
        return {**data, "upstream": upstream}
    return data


class UpstreamTools:
    """The gateway's handler source for imported upstream tools (a
    :class:`~toolkeeper.server.sources.HandlerSource`)."""

    def __init__(self, definitions: Mapping[str, UpstreamDefinition],
                 bindings: Callable[[], Sequence[UpstreamBinding]],
                 connections: UpstreamConnections) -> None:
        self._definitions = definitions
        self._bindings = bindings
        self._connections = connections
        self._bound: dict[tuple[str, Version], UpstreamBinding] = {}
        self._handlers: dict[tuple[str, Version], HandlerBinding] = {}
        self._revision = 0
        self._tokens = itertools.count(1)
        self.refresh()

    @property
    def connections(self) -> UpstreamConnections:
        return self._connections

    def refresh(self) -> bool:
        """Read the bindings again; True (and a new revision) when they changed. A binding
        whose version is not semver is skipped (the registry never stores one)."""
        found: dict[tuple[str, Version], UpstreamBinding] = {}
        for binding in self._bindings():
            try:
                version = Version.parse(binding.version)
            except SemverError:
                continue
            found[(binding.exposed, version)] = binding
        if found == self._bound:
            return False
        self._bound = found
        self._handlers = {
            key: HandlerBinding(key[0], key[1], partial(self._forward, binding),
                                takes_context=True)
            for key, binding in found.items()}
        self._revision += 1
        return True

    @property
    def revision(self) -> int:
        return self._revision

    def lookup(self, name: str, version: Version) -> HandlerBinding | None:
        return self._handlers.get((name, version))

    def can_run(self, name: str, version: Version) -> bool:
        return (name, version) in self._handlers

    def bound(self) -> list[tuple[str, Version]]:
        """Every bound (exposed name, version), in order."""
        return sorted(self._handlers)

    def binding(self, name: str, version: Version) -> UpstreamBinding | None:
        """The upstream binding of an exposed version."""
        return self._bound.get((name, version))

    async def _forward(self, binding: UpstreamBinding, arguments: dict[str, Any],
                       ctx: ToolContext) -> ForwardedResult:
        meta = forwarded_meta(ctx.request_meta)
        token: str | None = None
        if "progressToken" in ctx.request_meta:
            token = meta["progressToken"] = f"tk-progress-{next(self._tokens)}"
        logs = ctx.log_level
        if logs is not None:  # a modern upstream logs only at the level this hop asks for
            meta[LOG_LEVEL_KEY] = logs
        if token is None and logs is None:  # the caller hears neither progress nor logs
            return await self._call(binding, arguments, ctx, meta, None)
        heard: asyncio.Queue[tuple[str, Mapping[str, Any]] | None] = asyncio.Queue()

        def hear(message: Any) -> None:
            method, params = message.get("method"), message.get("params")
            if not isinstance(params, dict):
                return
            progress = method == "notifications/progress" and token is not None \
                and params.get("progressToken") == token
            if progress or (method == "notifications/message" and logs is not None):
                heard.put_nowait((method, params))

        relay = asyncio.ensure_future(_relay(heard, ctx))
        try:
            result = await self._call(binding, arguments, ctx, meta, hear)
        except BaseException:
            relay.cancel()
            raise
        heard.put_nowait(None)  # the relay sends what it heard before the result, then ends
        await relay
        return result

    async def _call(self, binding: UpstreamBinding, arguments: dict[str, Any],
                    ctx: ToolContext, meta: dict[str, Any],
                    hear: Callable[[Any], None] | None) -> ForwardedResult:
        upstream = binding.upstream
        retry = _retry(ctx)
        declared = ctx.client_capabilities
        capabilities = {key: declared[key] for key in _PASSED_CAPABILITIES
                        if key in declared} if declared else {}
        for round_ in range(1, MAX_ROUNDS + 1):
            try:
                reply = await self._connections.call(
                    upstream, ctx.principal, binding.tool, arguments, meta=meta or None,
                    on_notification=hear, on_request=caller_asker(upstream, ctx),
                    capabilities=capabilities, retry=retry)
            except UpstreamFault as exc:
                return fault_result(upstream, exc.code, exc.message)
            if reply.error is not None:
                error = reply.error
                raise ForwardedError(error["code"], str(error.get("message", "")),
                                     _error_data(upstream, error.get("data")))
            result = reply.result or {}
            asks = _asks(result) if result.get("resultType") == "input_required" else None
            if asks is None:
                try:
                    return ForwardedResult.from_wire(result)
                except TypeError:
                    return fault_result(upstream, PROTOCOL_ERROR,
                                        f"upstream {upstream!r} answered with something that "
                                        "is not a tool result")
            requests, state = asks
            if ctx.era is Era.MODERN:  # the caller answers, and retries with our state
                ctx.pass_on_input_required(
                    requests, carried=None if state is None else {"requestState": state})
            if round_ == MAX_ROUNDS:  # no round left to give the answers to
                break
            answers = await ctx.ask_all({key: (ask["method"], ask["params"])
                                         for key, ask in requests.items()})
            retry = _retry_params({key: dict(value) for key, value in answers.items()}, state)
        return fault_result(upstream, INPUT_REQUIRED,
                            f"upstream {upstream!r} still asked for input after {MAX_ROUNDS} "
                            "rounds")


def _asks(result: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], str | None] | None:
    """An ``input_required`` result's asks (key -> ``{"method", "params"}``, the reserved
    ``_meta`` keys of the upstream's hop dropped) and its ``requestState``; None for one
    that is not SEP-2322's shape (answered as not a tool result)."""
    requests = result.get("inputRequests", {})
    state = result.get("requestState")
    if not isinstance(requests, dict) or (state is not None and not isinstance(state, str)) \
            or (not requests and state is None):
        return None
    asks: dict[str, dict[str, Any]] = {}
    for key, request in requests.items():
        params = request.get("params", {}) if isinstance(request, dict) else None
        if not isinstance(params, dict) or request.get("method") not in ASKS:
            return None
        params = dict(params)
        kept = params.pop("_meta", None)
        if isinstance(kept, dict):
            kept = {k: v for k, v in kept.items() if not k.startswith(RESERVED_META_PREFIX)}
            if kept:
                params["_meta"] = kept
        asks[key] = {"method": request["method"], "params": params}
    return asks, state


def _retry(ctx: ToolContext) -> dict[str, Any] | None:
    """The retry fields a modern caller's retry forwards: its answers, and the upstream's
    state the gateway's sealed one carried."""
    retried = ctx.retried()
    if retried is None:
        return None
    answers, carried = retried
    state = carried.get("requestState") if isinstance(carried, dict) else None
    return _retry_params({key: dict(value) for key, value in answers.items()},
                         state if isinstance(state, str) else None)


def _retry_params(answers: dict[str, Any], state: str | None) -> dict[str, Any] | None:
    params: dict[str, Any] = {"inputResponses": answers} if answers else {}
    if state is not None:
        params["requestState"] = state
    return params or None


async def _relay(heard: asyncio.Queue[tuple[str, Mapping[str, Any]] | None],
                 ctx: ToolContext) -> None:
    """The upstream's progress and logs, in the order heard, as the caller's (progress under
    the caller's token, logs at the caller's level); a notification the caller could not take
    (a bad number, an unknown level) is dropped."""
    while (item := await heard.get()) is not None:
        method, params = item
        message, logger = params.get("message"), params.get("logger")
        with contextlib.suppress(Exception):  # a bad number or level, or the caller gone
            if method == "notifications/progress":
                await ctx.progress(params["progress"], params.get("total"),
                                   message if isinstance(message, str) else None)
            else:
                await ctx.log(str(params.get("level")), params.get("data"),
                              logger=logger if isinstance(logger, str) else None)
