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
* a call the caller cancels, or that runs past its timeout, is cancelled upstream
  (``notifications/cancelled``; on modern HTTP by closing its stream);
* a legacy upstream's requests to the client (elicitation, sampling, roots) are asked of a
  legacy caller and answered back, refused for a modern one (:mod:`~toolkeeper.upstreams.
  asking`); a modern upstream's ``input_required`` is not passed on yet:
  ``upstream.input_required``.

What is sent: the tool's name, the arguments (valid under the contract in force), and the
caller's ``_meta`` less the keys of this hop (``io.modelcontextprotocol/*``, ``progressToken``,
the gateway's ``schemaVersion`` and ``fastmcp`` pins). Never the caller's credential.
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
from toolkeeper.server.content import RESERVED_META_PREFIX, ForwardedError, ForwardedResult, text
from toolkeeper.server.handlers import HandlerBinding, ToolContext
from toolkeeper.upstreams.asking import caller_asker
from toolkeeper.upstreams.connections import PROTOCOL_ERROR, UpstreamConnections, UpstreamFault
from toolkeeper.upstreams.model import UpstreamBinding, UpstreamDefinition

__all__ = ["INPUT_REQUIRED", "UPSTREAM_META_KEY", "UpstreamTools", "fault_result"]

UPSTREAM_META_KEY: Final = "io.toolkeeper/upstream"
"""The ``_meta`` key of a result the gateway gave for an upstream that did not answer."""
INPUT_REQUIRED: Final = "upstream.input_required"
_HOP_KEYS: Final = frozenset({"progressToken", "schemaVersion", "fastmcp"})


def fault_result(upstream: str, code: str, message: str) -> ForwardedResult:
    """The ``isError`` result of a call its upstream did not answer."""
    return ForwardedResult((text(message),), is_error=True,
                           meta={UPSTREAM_META_KEY: {"upstream": upstream, "code": code}})


def forwarded_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's ``_meta`` as sent on: the keys of this hop left out."""
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
        if "progressToken" not in ctx.request_meta:  # the caller hears no progress
            return await self._call(binding, arguments, ctx, meta, None)
        token = meta["progressToken"] = f"tk-progress-{next(self._tokens)}"
        heard: asyncio.Queue[Mapping[str, Any] | None] = asyncio.Queue()

        def hear(message: Any) -> None:
            params = message.get("params")
            if (message.get("method") == "notifications/progress"
                    and isinstance(params, dict) and params.get("progressToken") == token):
                heard.put_nowait(params)

        relay = asyncio.ensure_future(_relay_progress(heard, ctx))
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
        try:
            reply = await self._connections.call(
                upstream, ctx.principal, binding.tool, arguments, meta=meta or None,
                on_notification=hear, on_request=caller_asker(upstream, ctx))
        except UpstreamFault as exc:
            return fault_result(upstream, exc.code, exc.message)
        if reply.error is not None:
            error = reply.error
            raise ForwardedError(error["code"], str(error.get("message", "")),
                                 _error_data(upstream, error.get("data")))
        result = reply.result or {}
        if result.get("resultType") == "input_required":
            return fault_result(upstream, INPUT_REQUIRED,
                                f"upstream {upstream!r} asked for input, which this gateway "
                                "does not pass on")
        try:
            return ForwardedResult.from_wire(result)
        except TypeError:
            return fault_result(upstream, PROTOCOL_ERROR,
                                f"upstream {upstream!r} answered with something that is not "
                                "a tool result")


async def _relay_progress(heard: asyncio.Queue[Mapping[str, Any] | None],
                          ctx: ToolContext) -> None:
    """The upstream's progress, as the caller's (under the caller's token); a notification
    whose numbers the caller could not take is dropped."""
    while (params := await heard.get()) is not None:
        message = params.get("message")
        with contextlib.suppress(Exception):  # a bad number, or the caller gone
            await ctx.progress(params["progress"], params.get("total"),
                               message if isinstance(message, str) else None)
