"""The gateway (SPEC 3): ``tools/list`` and ``tools/call`` over the registry, the handler API,
the call log and principal resolution, assembled behind the protocol kernel; handler-bound
prompts (``prompts/list``, ``prompts/get``), served but not governed."""

from toolkeeper.server.app import build_app
from toolkeeper.server.calllog import CallLog, CallRecord, InMemoryCallLog, arguments_digest
from toolkeeper.server.calls import ToolCalls, closed_schema
from toolkeeper.server.content import (
    ToolResult,
    audio,
    embedded_resource,
    image,
    resource_link,
    text,
    to_tool_result,
)
from toolkeeper.server.gate import RETIRED, UNAVAILABLE, UNKNOWN, Plan, plan_call, unknown_tool
from toolkeeper.server.gateway import Gateway, build_gateway, default_identity
from toolkeeper.server.handlers import HandlerBinding, HandlerContext, ToolContext, ToolHandlers
from toolkeeper.server.principal import LocalPrincipal, PrincipalResolver, fixed_principal
from toolkeeper.server.prompt_methods import PromptContext
from toolkeeper.server.prompts import PromptArgument, prompt_message
from toolkeeper.server.views import ToolViews, View

__all__ = [
    "RETIRED",
    "UNAVAILABLE",
    "UNKNOWN",
    "CallLog",
    "CallRecord",
    "Gateway",
    "HandlerBinding",
    "HandlerContext",
    "InMemoryCallLog",
    "LocalPrincipal",
    "Plan",
    "PrincipalResolver",
    "PromptArgument",
    "PromptContext",
    "ToolCalls",
    "ToolContext",
    "ToolHandlers",
    "ToolResult",
    "ToolViews",
    "View",
    "arguments_digest",
    "audio",
    "build_app",
    "build_gateway",
    "closed_schema",
    "default_identity",
    "embedded_resource",
    "fixed_principal",
    "image",
    "plan_call",
    "prompt_message",
    "resource_link",
    "text",
    "to_tool_result",
    "unknown_tool",
]
