"""``tools/call`` (SPEC 3.4): params, the gate, capabilities, strict validation, the call log,
then the handler.

Invalid arguments are a tool *result* with ``isError: true`` (the model can correct itself):
``structuredContent = {"errors": [{"path", "keyword", "message"}, ...]}`` sorted by (path,
message), at most ``max_reported_errors`` of them (``"omitted": N`` counts the rest), and one
text block summarising them (:func:`~toolkeeper.server.call_outcomes.invalid_arguments_result`).
Only the first :func:`~toolkeeper.server.call_outcomes.collection_bound` values of the
arguments are checked for errors: arguments of more are answered with the errors found there
and ``"truncated": true`` (``omitted`` then a lower bound), so the work is bounded too. The call
log is only written for calls that reach a handler; one refused before is a refusal record
(:mod:`~toolkeeper.server.refusals`, built on the refusal path only). A handler exception is
an ``isError`` result with a generic text; the exception is logged server-side, never sent (an
:class:`~toolkeeper.errors.AskError` it did not catch, the client's refusal or silence, as one
WARNING line with its code, the traceback at DEBUG). A handler that runs past its call timeout
(:mod:`~toolkeeper.server.limits`) is cancelled and answered with
:func:`~toolkeeper.server.limits.timed_out_result`, its ``_meta`` marked with
:data:`~toolkeeper.server.limits.TIMEOUT_META_KEY`; it is logged ``timeout``. A plain ``def``
handler runs in a worker thread (unless bound ``inline``); past its timeout it is answered the
same way at the deadline, while its thread, which cannot be cancelled, runs on to its end and
its value is dropped.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from types import CoroutineType
from typing import Any

from msgspec import Raw

from toolkeeper.contracts.spec import SideEffect
from toolkeeper.errors import JsonRpcError, StoreError
from toolkeeper.protocol import (
    Call,
    Deferred,
    Emit,
    Era,
    Finish,
    MethodResult,
    Outcome,
    Pending,
    Reply,
    encode_message,
    error_reply,
    missing_capabilities,
)
from toolkeeper.protocol.dispatch import LegacyFinish
from toolkeeper.protocol.faults import internal_error, invalid_params
from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import Principal, Registry
from toolkeeper.server.asking import InputAsker, InputRequired
from toolkeeper.server.call_outcomes import (
    DEFAULT_MAX_REPORTED_ERRORS,
    collection_bound,
    handler_failed,
    invalid_arguments_result,
    refusal_reason,
)
from toolkeeper.server.calllog import CallLog, CallRecord, arguments_digest
from toolkeeper.server.content import ToolResult, text
from toolkeeper.server.gate import FASTMCP_META_KEY, SCHEMA_VERSION_KEY, requested_version
from toolkeeper.server.handler_threads import threaded
from toolkeeper.server.handlers import HandlerBinding, ToolContext, capability_error
from toolkeeper.server.limits import TIMEOUT_META_KEY, Admission, CallTimeoutError, bounded, bounded_rest
from toolkeeper.server.refusals import call_refusal, gate_refusal, limit_refusal
from toolkeeper.server.result_wire import checked_result, encoded_wire, wire_form
from toolkeeper.server.resuming import RequestStates, SealedState
from toolkeeper.server.routes import Route, Routes, closed_schema
from toolkeeper.server.sources import HandlerSource
from toolkeeper.server.views import ToolViews

__all__ = ["ToolCalls", "closed_schema"]

_log = logging.getLogger("toolkeeper.server")

# What a handler returns that is certainly not awaitable (skips the Awaitable ABC check).
_PLAIN = (ToolResult, str, dict, list, tuple, type(None))
_Target = tuple[str, dict[str, Any], Route]
# The 2026 retry fields of tools/call (mcp-wire 7.2): a requestState is a string,
# inputResponses an object (their use: toolkeeper.server.resuming).
_RETRY_FIELDS: tuple[tuple[str, type, str], ...] = (
    ("requestState", str, "a string"), ("inputResponses", dict, "an object"))
# The side effects whose requestState runs the tool at most once (toolkeeper.server.resuming).
_SINGLE_USE = frozenset({SideEffect.WRITE, SideEffect.DESTRUCTIVE})
_NO_META: Mapping[str, Any] = {}


class ToolCalls:
    """The ``tools/call`` method handler and its ``Mcp-Param-*`` schema hook.

    The kernel calls the hook, then the handler, with the same :class:`Call`; the target
    resolved for the hook is remembered for that call object, so a call is parsed and
    routed once."""

    def __init__(self, registry: Registry, views: ToolViews, handlers: HandlerSource,
                 call_log: CallLog, tools_changed: Callable[[], None] | None = None,
                 call_timeout: Callable[[str], float | None] | None = None,
                 request_states: RequestStates | None = None,
                 max_reported_errors: int = DEFAULT_MAX_REPORTED_ERRORS,
                 admission: Admission | None = None) -> None:
        self._registry = registry
        self._routes = Routes(registry, views, handlers)
        self._states = (request_states if request_states is not None
                        else RequestStates(Sealer.ephemeral()))
        self._call_timeout = call_timeout
        # Admits the express lane's Pendings (the gateway wraps the ordinary path).
        self._admission = admission
        self._log = call_log
        self._tools_changed = tools_changed
        self._last: tuple[Call, _Target] | None = None
        self._max_errors = max_reported_errors
        self._checked_values = collection_bound(max_reported_errors)

    def _target(self, call: Call) -> _Target:
        last = self._last
        if last is not None and last[0] is call:
            return last[1]
        params = call.params
        name = params.get("name")
        if not isinstance(name, str):
            raise invalid_params("tools/call: name must be a string", {"path": "$.params.name"})
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise invalid_params("tools/call: arguments must be an object",
                                 {"path": "$.params.arguments"})
        for key, kind, what in _RETRY_FIELDS:
            value = params.get(key)
            if value is not None and not isinstance(value, kind):
                raise invalid_params(f"tools/call: {key} must be {what}",
                                     {"path": f"$.params.{key}"})
        principal = call.principal
        if not isinstance(principal, Principal):
            raise TypeError("tools/call needs a Principal from the principal resolver")
        target = (name, arguments, self._routes.resolve(principal, name, requested_version(params),
                                                        call.facts.received_ns))
        self._last = (call, target)
        return target

    def header_schema(self, call: Call) -> dict[str, Any] | None:
        """The schema the call would run under (for ``Mcp-Param-*``), or None to skip: the
        gate and params errors are reported by dispatch itself."""
        try:
            _, _, route = self._target(call)
        except JsonRpcError:
            return None
        return route.plan.spec.input_schema

    def __call__(self, call: Call) -> MethodResult:
        try:
            name, arguments, route = self._target(call)
        except JsonRpcError as exc:
            self._log.refused(gate_refusal(self._registry, call, exc,
                                           self._routes.step(call.params.get("name"))))
            raise
        self._last = None
        binding = route.binding
        if binding is not None and binding.requires and missing_capabilities(
                binding.requires, call.client_capabilities):
            self._log.refused(call_refusal(call, "capability_required", None,
                                           route.rollout_step))
            raise capability_error(binding.requires, call.era)
        found = route.validator.bounded_errors(arguments, self._checked_values)
        if found.issues:
            self._log.refused(call_refusal(call, "invalid_arguments", route.version,
                                           route.rollout_step))
            return encoded_wire(call, route, invalid_arguments_result(
                found.issues, self._max_errors, truncated=found.truncated))
        if binding is None:
            return encoded_wire(call, route, ToolResult(
                (text(f"Tool {name!r} has no handler on this gateway."),), is_error=True))
        if binding.inline:
            return self._run_inline(call, route, binding, arguments)
        asker = state = None
        if binding.takes_context and call.era is Era.MODERN:
            try:
                resumed = self._states.resume_call(
                    call.params, name, route.version, arguments, call.principal,
                    unsolicited=route.plan.spec.side_effect not in _SINGLE_USE)
            except JsonRpcError as exc:
                self._log.refused(call_refusal(call, refusal_reason(exc), None,
                                               route.rollout_step))
                raise
            if resumed is not None:
                asker, state = resumed
                if route.plan.spec.side_effect not in _SINGLE_USE:
                    state = None  # read, idempotent_write: may be resumed again
        if state is not None:
            return Deferred(partial(self._run_once, call, route, binding, arguments, asker,
                                    state))
        return Deferred(partial(self._run, call, route, binding, arguments, asker))

    async def _run_once(self, call: Call, route: Route, binding: HandlerBinding,
                        arguments: dict[str, Any], asker: InputAsker | None,
                        state: SealedState, emit: Emit) -> dict[str, Any]:
        """:meth:`_run` of a retry whose state may run the tool once: the state is spent
        first, in the registry store (off the event loop), and a state spent already is
        refused ``replayed`` before the handler runs (:mod:`~toolkeeper.server.resuming`).
        A store that cannot record it refuses the call (-32603): never run unrecorded."""
        try:
            await asyncio.to_thread(self._states.spend, state)
        except JsonRpcError as exc:
            self._log.refused(call_refusal(call, refusal_reason(exc), None, route.rollout_step))
            raise
        except StoreError as exc:
            _log.warning("tool %s %s: the request state could not be recorded as spent (%s); "
                         "the call is refused", route.plan.spec.name, route.version, exc.code)
            self._log.refused(call_refusal(call, "state_unrecorded", None, route.rollout_step))
            raise internal_error() from None
        return await self._run(call, route, binding, arguments, asker, emit)

    def express(self, call: Call, finish: Finish) -> Outcome | None:
        """The express lane (see :attr:`~toolkeeper.protocol.Method.express`): a call the gate
        accepts, with valid arguments, to a tool whose handler takes a context or is ``async``
        and declares no capability the client lacks, and whose schema has no ``x-mcp-header``
        arguments, becomes a Pending straight away, its completion answering the whole call.
        Anything else is None, before the call log is touched (the route stays resolved for
        the ordinary path)."""
        params = call.params
        name = params.get("name")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        principal = call.principal
        meta = params.get("_meta")  # modern: the envelope made it a dict; legacy: or absent
        if type(meta) is not dict:
            if meta is not None:
                return None
            meta = _NO_META
        requested = meta.get(SCHEMA_VERSION_KEY)
        if (type(name) is not str or type(arguments) is not dict or FASTMCP_META_KEY in meta
                or "requestState" in params or "inputResponses" in params
                or not isinstance(principal, Principal)
                or (requested is not None and type(requested) is not str)):
            return None
        try:
            route = self._routes.resolve(principal, name, requested, call.facts.received_ns)
        except JsonRpcError:
            return None
        binding = route.binding
        if (binding is None or binding.inline or route.annotated
                or (binding.requires and missing_capabilities(binding.requires,
                                                              call.client_capabilities))
                or not route.validator.is_valid_json(arguments)):
            self._last = (call, (name, arguments, route))
            return None
        # Admitted here, as the last step (a refusal raises: the kernel answers it); left when
        # the Pending's run ends.
        try:
            slot = None if self._admission is None else self._admission.enter(principal)
        except JsonRpcError as exc:  # on the refusal log, then the kernel answers it
            self._log.refused(limit_refusal(call, exc))
            raise
        return Pending(call.request_id, partial(self._express_run, call, route, binding,
                                                arguments, finish, slot))

    async def _express_run(self, call: Call, route: Route, binding: HandlerBinding,
                           arguments: dict[str, Any], finish: Finish, slot: Any,
                           emit: Emit) -> Reply:
        """:meth:`_run` and the kernel's completion of its result (as ``run_method``'s), in one
        coroutine. ``finish`` encodes the reply at once, before the call log completes, so a
        result that is not JSON is the handler's failure here as in :meth:`_settle`. ``slot``:
        the admission's, left at the end. A coroutine's first step is taken here under a call
        timeout (:func:`~toolkeeper.server.limits.bounded`, without its coroutine)."""
        try:
            handle = self._dispatched(call, route, arguments)
            started = time.perf_counter()
            try:
                value = self._invoke(call, route, binding, arguments, emit)
                if type(value) is CoroutineType and self._call_timeout is not None:
                    timeout_s = self._call_timeout(route.plan.spec.name)
                    if timeout_s is not None:
                        try:
                            step = value.send(None)
                        except StopIteration as done:
                            value = done.value
                        else:  # the deadline counted from before the first step
                            value = await bounded_rest(value, step, timeout_s, timeout_s + (
                                asyncio.get_running_loop().time()
                                - (time.perf_counter() - started)))
                    else:
                        value = await value
                elif type(value) is CoroutineType or (
                        not isinstance(value, _PLAIN) and inspect.isawaitable(value)):
                    value = await (value if self._call_timeout is None
                                   else self._timed(route, value))
            except BaseException as exc:
                if type(exc) is InputRequired:
                    return finish(call.request_id, self._ask_back(
                        call, route, arguments, handle, started, exc))
                return finish(call.request_id,
                              self._failed_wire(call, route, handle, started, exc))
            try:
                result = checked_result(route, value)
                reply = finish(call.request_id, wire_form(call, route, result))
            except Exception as exc:
                return finish(call.request_id,
                              self._failed_wire(call, route, handle, started, exc))
            self._log.completed(handle, "error" if result.is_error else "ok",
                                (time.perf_counter() - started) * 1000.0)
            return reply
        except Exception as exc:
            if isinstance(finish, LegacyFinish):
                return finish.failed(call.request_id, exc)
            return error_reply(call.request_id, exc)
        finally:
            if slot is not None:
                admission = self._admission
                assert admission is not None
                admission.leave(slot)

    def _dispatched(self, call: Call, route: Route, arguments: dict[str, Any]) -> int:
        principal: Principal = call.principal
        return self._log.dispatched(CallRecord(
            route.plan.spec.name, route.version, principal.tenant, arguments_digest(arguments),
            "modern" if call.era is Era.MODERN else call.era.value,
            credential=getattr(principal, "credential", None), request_id=call.request_id,
            rollout_step=route.rollout_step))

    def _invoke(self, call: Call, route: Route, binding: HandlerBinding,
                arguments: dict[str, Any], emit: Emit, asker: InputAsker | None = None) -> Any:
        """The handler called: its value, or the awaitable that gives it (a plain ``def``
        bound without ``inline``: its run in a worker thread)."""
        if binding.takes_context:
            ctx = ToolContext(call, route.plan.spec, call.principal, emit,
                              self._tools_changed, asker)
            if binding.threaded:
                return threaded(binding.function, arguments, ctx)
            return binding.function(arguments, ctx)
        if binding.threaded:
            return threaded(binding.function, arguments)
        return binding.function(arguments)

    async def _run(self, call: Call, route: Route, binding: HandlerBinding,
                   arguments: dict[str, Any], asker: InputAsker | None, emit: Emit
                   ) -> dict[str, Any]:
        handle = self._dispatched(call, route, arguments)
        started = time.perf_counter()
        try:
            value = self._invoke(call, route, binding, arguments, emit, asker)
            if type(value) is CoroutineType or (
                    not isinstance(value, _PLAIN) and inspect.isawaitable(value)):
                value = await (value if self._call_timeout is None
                               else self._timed(route, value))
        except BaseException as exc:
            if type(exc) is InputRequired:
                return self._ask_back(call, route, arguments, handle, started, exc)
            return self._failed_wire(call, route, handle, started, exc)
        return self._settle(call, route, handle, started, value)

    def _ask_back(self, call: Call, route: Route, arguments: dict[str, Any], handle: int,
                  started: float, signal: InputRequired) -> dict[str, Any]:
        """A modern round that ended with unanswered asks: its ``input_required`` result
        (:mod:`~toolkeeper.server.resuming`), logged ``input_required``. Requests that are
        not JSON are the handler's failure, like a result that is not."""
        try:
            out = self._states.input_required(signal, route.plan.spec.name, route.version,
                                              arguments, call.principal)
            out["inputRequests"] = Raw(encode_message(out["inputRequests"]))
        except Exception as exc:
            return self._failed_wire(call, route, handle, started, exc)
        out["_meta"] = route.meta.copy()
        self._log.completed(handle, "input_required", (time.perf_counter() - started) * 1000.0)
        return out

    def _run_inline(self, call: Call, route: Route, binding: HandlerBinding,
                    arguments: dict[str, Any]) -> MethodResult:
        """A plain function without a context (see :attr:`HandlerBinding.inline`), run here:
        no Deferred, Pending or coroutine. One that returns an awaitable anyway has it awaited
        in a Deferred (the call is logged once either way)."""
        handle = self._dispatched(call, route, arguments)
        started = time.perf_counter()
        try:
            value = binding.function(arguments)
        except BaseException as exc:
            return self._failed_wire(call, route, handle, started, exc)
        if type(value) is CoroutineType or (
                not isinstance(value, _PLAIN) and inspect.isawaitable(value)):
            return Deferred(partial(self._await_rest, call, route, handle, started, value))
        return self._settle(call, route, handle, started, value)

    async def _await_rest(self, call: Call, route: Route, handle: int, started: float,
                          awaitable: Awaitable[Any], emit: Emit) -> dict[str, Any]:
        try:
            value = await (awaitable if self._call_timeout is None
                           else self._timed(route, awaitable))
        except BaseException as exc:
            return self._failed_wire(call, route, handle, started, exc)
        return self._settle(call, route, handle, started, value)

    def _timed(self, route: Route, awaitable: Awaitable[Any]) -> Awaitable[Any]:
        """The handler's awaitable, bounded by its tool's call timeout when it has one."""
        assert self._call_timeout is not None
        timeout_s = self._call_timeout(route.plan.spec.name)
        return awaitable if timeout_s is None else bounded(awaitable, timeout_s)

    def _settle(self, call: Call, route: Route, handle: int, started: float, value: Any
                ) -> dict[str, Any]:
        """A handler's value as the checked wire result, its content encoded once here: a value
        that is not JSON is the handler's failure, like an exception. The call log completed."""
        try:
            result = checked_result(route, value)
            wire = encoded_wire(call, route, result)
        except Exception as exc:
            return self._failed_wire(call, route, handle, started, exc)
        self._log.completed(handle, "error" if result.is_error else "ok",
                            (time.perf_counter() - started) * 1000.0)
        return wire

    def _failed_wire(self, call: Call, route: Route, handle: int, started: float,
                     exc: BaseException) -> dict[str, Any]:
        """:func:`~toolkeeper.server.call_outcomes.handler_failed`, as sent (a timed-out
        call's ``_meta`` marked)."""
        out = encoded_wire(call, route, handler_failed(self._log, route.plan.spec, handle,
                                                    started, exc))
        if isinstance(exc, CallTimeoutError):
            out["_meta"][TIMEOUT_META_KEY] = {"timeoutS": exc.timeout_s}
        return out
