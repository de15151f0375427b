"""``tools/call`` (SPEC 3.4): params, the gate, capabilities, strict validation, the call log,
then the handler.

Invalid arguments are a tool *result* with ``isError: true`` (the model can correct itself):
``structuredContent = {"errors": [{"path", "keyword", "message"}, ...]}`` sorted by (path,
message), and one text block listing the same errors. The call log is only written for calls
that reach a handler. A handler exception is an ``isError`` result with a generic text; the
exception is logged server-side, never sent.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.contracts.validate import CompiledSchema, Issue, compile_schema
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import Call, Deferred, Emit, Era, MethodResult, missing_capabilities
from toolkeeper.protocol.faults import invalid_params
from toolkeeper.registry import Principal, Registry
from toolkeeper.server.calllog import CallLog, CallRecord, arguments_digest
from toolkeeper.server.content import ToolResult, text, to_tool_result
from toolkeeper.server.gate import Plan, plan_call, requested_version
from toolkeeper.server.handlers import HandlerBinding, ToolContext, ToolHandlers, capability_error
from toolkeeper.server.views import ToolViews

__all__ = ["ToolCalls", "closed_schema"]

_log = logging.getLogger("toolkeeper.server")

_COMPOSITION = ("allOf", "anyOf", "oneOf", "if", "$ref", "$dynamicRef", "dependentSchemas")
# 2025-06-18 introduced structuredContent (object-only until 2026-07-28).
_NO_STRUCTURED_VERSIONS = frozenset({"2024-11-05", "2025-03-26"})


def closed_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its root closed to unknown properties (fail closed when the caller
    declared no version): unchanged when already closed; ``additionalProperties: false`` for a
    plain root; ``unevaluatedProperties: false`` when the root composes subschemas (so
    properties declared in ``allOf`` branches stay allowed) or declares no ``properties`` (the
    validator reports that case at the offending property's path)."""
    if schema.get("additionalProperties") is False or schema.get("unevaluatedProperties") is False:
        return schema
    if "properties" not in schema or any(key in schema for key in _COMPOSITION):
        return {**schema, "unevaluatedProperties": False}
    return {**schema, "additionalProperties": False}


def invalid_arguments_result(issues: list[Issue]) -> ToolResult:
    """The isError result for arguments that fail validation (sorted, one line per error)."""
    errors = [issue.to_dict() for issue in issues]
    lines = "\n".join(f"{i.path}: {i.message} [{i.keyword}]" for i in issues)
    return ToolResult((text(f"Invalid arguments ({len(issues)} error"
                            f"{'s' if len(issues) != 1 else ''}):\n{lines}"),),
                      {"errors": errors}, is_error=True)


def _failure(name: str) -> ToolResult:
    return ToolResult((text(f"Tool {name!r} failed while running; no details are available "
                            "to the caller."),), is_error=True)


class ToolCalls:
    """The ``tools/call`` method handler and its ``Mcp-Param-*`` schema hook."""

    def __init__(self, registry: Registry, views: ToolViews, handlers: ToolHandlers,
                 call_log: CallLog, tools_changed: Callable[[], None] | None = None) -> None:
        self._registry = registry
        self._views = views
        self._handlers = handlers
        self._log = call_log
        self._tools_changed = tools_changed
        self._compiled: dict[tuple[str, str, bool], CompiledSchema] = {}

    def _validator(self, spec: ToolSpec, strict: bool) -> CompiledSchema:
        key = (spec.name, str(spec.version), strict)
        compiled = self._compiled.get(key)
        if compiled is None:
            schema = closed_schema(spec.input_schema) if strict else spec.input_schema
            compiled = compile_schema(schema, assert_formats=spec.assert_formats)
            if len(self._compiled) > 4096:
                self._compiled.clear()
            self._compiled[key] = compiled
        return compiled

    def _plan(self, call: Call) -> tuple[str, dict[str, Any], Plan]:
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
        principal = call.principal
        if not isinstance(principal, Principal):
            raise TypeError("tools/call needs a Principal from the principal resolver")
        return name, arguments, plan_call(self._registry, self._views, principal, name,
                                          requested_version(params))

    def header_schema(self, call: Call) -> dict[str, Any] | None:
        """The schema the call would run under (for ``Mcp-Param-*``), or None to skip: the
        gate and params errors are reported by dispatch itself."""
        try:
            _, _, plan = self._plan(call)
        except JsonRpcError:
            return None
        return plan.spec.input_schema

    def __call__(self, call: Call) -> MethodResult:
        name, arguments, plan = self._plan(call)
        binding = self._handlers.lookup(name, plan.spec.version)
        if binding is not None and binding.requires and missing_capabilities(
                binding.requires, call.client_capabilities):
            raise capability_error(binding.requires, call.era)
        issues = self._validator(plan.spec, plan.strict).errors(arguments)
        if issues:
            return self._wire(call, plan, invalid_arguments_result(issues))
        if binding is None:
            return self._wire(call, plan, ToolResult(
                (text(f"Tool {name!r} has no handler on this gateway."),), is_error=True))

        async def run(emit: Emit) -> dict[str, Any]:
            return await self._run(call, plan, binding, arguments, emit)

        return Deferred(run)

    async def _run(self, call: Call, plan: Plan, binding: HandlerBinding,
                   arguments: dict[str, Any], emit: Emit) -> dict[str, Any]:
        spec = plan.spec
        principal: Principal = call.principal
        handle = self._log.dispatched(CallRecord(
            spec.name, str(spec.version), principal.tenant, arguments_digest(arguments),
            call.era.value))
        context = ToolContext(call, spec, principal, emit, self._tools_changed)
        started = time.perf_counter()
        outcome = "cancelled"
        try:
            try:
                value = (binding.function(arguments, context) if binding.takes_context
                         else binding.function(arguments))
                if inspect.isawaitable(value):
                    value = await value
                result = self._checked(spec, to_tool_result(value))
            except JsonRpcError:
                outcome = "protocol_error"
                raise
            except Exception:
                _log.exception("tool %s %s raised", spec.name, spec.version)
                outcome = "exception"
                result = _failure(spec.name)
            else:
                outcome = "error" if result.is_error else "ok"
        finally:
            self._log.completed(handle, outcome, (time.perf_counter() - started) * 1000.0)
        return self._wire(call, plan, result)

    def _checked(self, spec: ToolSpec, result: ToolResult) -> ToolResult:
        """A successful result's structured content must honour the output schema."""
        if spec.output_schema is None or result.is_error:
            return result
        if not result.has_structured:
            _log.error("tool %s %s returned no structured content for its output schema",
                       spec.name, spec.version)
            return _failure(spec.name)
        issues = compile_schema(spec.output_schema,
                                assert_formats=spec.assert_formats).errors(result.structured)
        if issues:
            _log.error("tool %s %s returned structured content that breaks its output schema: "
                       "%s", spec.name, spec.version, [i.to_dict() for i in issues])
            return _failure(spec.name)
        return result

    def _wire(self, call: Call, plan: Plan, result: ToolResult) -> dict[str, Any]:
        out = result.to_wire()
        if call.era is Era.LEGACY and "structuredContent" in out and (
                call.protocol_version in _NO_STRUCTURED_VERSIONS
                or not isinstance(out["structuredContent"], Mapping)):
            del out["structuredContent"]
        meta: dict[str, Any] = {"schemaVersion": str(plan.spec.version)}
        if plan.successor is not None:
            meta["successor"] = str(plan.successor)
        if plan.spec.deprecation_message is not None:
            meta["deprecation"] = plan.spec.deprecation_message
        out["_meta"] = meta
        return out
