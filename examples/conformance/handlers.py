"""Handlers of the conformance fixture estate (``contracts/`` beside this file), bound through the
normal handler API.

The official MCP conformance suite (``@modelcontextprotocol/conformance``) calls fixed tool
names; each handler here answers like the reference fixture server of the MCP Python SDK, as far
as toolkeeper's model allows.

The tools that ask the caller back (the 2026-07-28 ``input-required-result-*`` scenarios and the
2025-11-25 ``tools-call-sampling``, ``tools-call-elicitation``, ``elicitation-sep1034-defaults``
and ``elicitation-sep1330-enums`` scenarios) are written once, through ``ctx.elicit``,
``ctx.sample``, ``ctx.list_roots`` and ``ctx.ask_all``: in the modern era each ask becomes an
``input_required`` round (the keys the suite expects are given as ``key=``), in the legacy era a
server-to-client request on the call's stream (:mod:`toolkeeper.server.asking`).

The prompts of the ``prompts-*`` scenarios are bound with ``@handlers.prompt`` (served, not
governed: no contract files), and so is ``test_input_required_result_prompt``, which asks
through the same ``ctx.elicit`` (``input-required-result-non-tool-request``).

Serve it (from the repository root)::

    toolkeeper serve --registry sqlite:///tmp/conformance.db \\
        --estate examples/conformance/contracts \\
        --handlers examples/conformance/handlers.py:HANDLERS
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from toolkeeper.server import (
    PromptArgument,
    PromptContext,
    ToolContext,
    ToolHandlers,
    ToolResult,
    audio,
    embedded_resource,
    image,
    text,
)

__all__ = ["CONTRACTS", "HANDLERS", "bind_prompts", "conformance_handlers"]

CONTRACTS: Final = Path(__file__).resolve().parent / "contracts"
"""The directory of contract files (one per tool) that ``HANDLERS`` serves."""

# A 1x1 red PNG and a tiny silent WAV (44-byte header + 2 samples), as the reference uses.
PNG: Final = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
WAV: Final = base64.b64decode(
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAAAAAAAAAA==")
STEP_S: Final = 0.05
"""The pause between notifications of the progress and logging tools (the suite expects them
spread over the call, as the reference fixture does)."""


def echo(arguments: dict[str, Any]) -> str:
    return str(arguments.get("text", "echo"))


def simple_text(arguments: dict[str, Any]) -> str:
    return "This is a simple text response for testing."


def image_content(arguments: dict[str, Any]) -> ToolResult:
    return ToolResult((image(PNG, "image/png"),))


def audio_content(arguments: dict[str, Any]) -> ToolResult:
    return ToolResult((audio(WAV, "audio/wav"),))


def embedded(arguments: dict[str, Any]) -> ToolResult:
    return ToolResult((embedded_resource("test://embedded-resource", mime_type="text/plain",
                                         text="This is an embedded resource content."),))


def multiple_content_types(arguments: dict[str, Any]) -> ToolResult:
    return ToolResult((
        text("Multiple content types test:"),
        image(PNG, "image/png"),
        embedded_resource("test://mixed-content-resource", mime_type="application/json",
                          text=json.dumps({"test": "data", "value": 123})),
    ))


def error_handling(arguments: dict[str, Any]) -> ToolResult:
    return ToolResult((text("This tool intentionally returns an error for testing"),),
                      is_error=True)


async def with_progress(arguments: dict[str, Any], ctx: ToolContext) -> str:
    for step in (0, 50, 100):
        await ctx.progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await asyncio.sleep(STEP_S)
    return "progress done"


async def with_logging(arguments: dict[str, Any], ctx: ToolContext) -> str:
    for number, line in enumerate(("Tool execution started", "Tool processing data",
                                   "Tool execution completed")):
        if number:
            await asyncio.sleep(STEP_S)
        await ctx.log("info", line)
    return "Tool with logging executed successfully"


async def logging_tool(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.log("info", "log message 1")
    await ctx.log("info", "log message 2")
    return "logging tool done"


def missing_capability(arguments: dict[str, Any]) -> str:
    return "sampling capability declared"


async def streaming_without_requests(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.progress(0, 1, "working")
    return "done: toolkeeper asks nothing of the client on a response stream"


def trigger_tool_change(arguments: dict[str, Any], ctx: ToolContext) -> str:
    ctx.notify_tools_changed()
    return "tools list changed"


def custom_header(arguments: dict[str, Any]) -> str:
    return f"region={arguments['region']}"


def json_schema_2020_12(arguments: dict[str, Any]) -> str:
    seen = {"name": arguments.get("name"), "address": arguments.get("address")}
    return f"JSON Schema 2020-12 tool called with: {json.dumps(seen)}"


# --- tools that ask back (one handler for both eras) ----------------------------------------

NAME_SCHEMA: Final = {"type": "object", "properties": {"name": {"type": "string"}},
                      "required": ["name"]}
CONFIRM_SCHEMA: Final = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                         "required": ["ok"]}


def _user(text_: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": {"type": "text", "text": text_}}]


def _elicitation(message: str, schema: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return "elicitation/create", {"mode": "form", "message": message, "requestedSchema": schema}


def _sampling(prompt: str, max_tokens: int) -> tuple[str, dict[str, Any]]:
    return "sampling/createMessage", {"messages": _user(prompt), "maxTokens": max_tokens}


def _content(answer: Mapping[str, Any]) -> dict[str, Any]:
    """An ElicitResult's content when accepted, else {}."""
    content = answer.get("content")
    return content if answer.get("action") == "accept" and isinstance(content, dict) else {}


def _sampled_text(answer: Mapping[str, Any]) -> str:
    content = answer.get("content")
    if isinstance(content, dict):
        return str(content.get("text", ""))
    return str(content)


async def sampling(arguments: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.sample(_user(str(arguments.get("prompt", ""))), max_tokens=100)
    return f"LLM response: {_sampled_text(answer)}"


async def elicitation(arguments: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit(str(arguments.get("message", "")), {
        "type": "object", "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}},
        "required": ["username", "email"]})
    return (f"User response: action={answer.get('action')}, "
            f"content={json.dumps(answer.get('content') or {})}")


SEP1034_SCHEMA: Final = {"type": "object", "required": [], "properties": {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status",
               "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": True}}}

SEP1330_SCHEMA: Final = {"type": "object", "required": [], "properties": {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "oneOf": [
        {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "minItems": 1, "maxItems": 3,
                      "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
        {"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
        {"const": "value3", "title": "Third Choice"}]}}}}


def _form(message: str, schema: Mapping[str, Any]) -> Any:
    async def form(arguments: dict[str, Any], ctx: ToolContext) -> str:
        answer = await ctx.elicit(message, schema)
        return (f"Elicitation completed: action={answer.get('action')}, "
                f"content={json.dumps(answer.get('content') or {})}")
    return form


async def mrtr_elicitation(arguments: dict[str, Any], ctx: ToolContext) -> str:
    name = _content(await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"))
    return f"Hello, {name.get('name', 'stranger')}!"


async def mrtr_sampling(arguments: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.sample(_user("What is the capital of France?"), max_tokens=100,
                              key="capital_question")
    return f"Sampled: {_sampled_text(answer)}"


async def mrtr_list_roots(arguments: dict[str, Any], ctx: ToolContext) -> str:
    roots = (await ctx.list_roots(key="client_roots")).get("roots") or []
    return "Roots: " + ", ".join(str(r.get("uri", "")) for r in roots if isinstance(r, dict))


async def mrtr_request_state(arguments: dict[str, Any], ctx: ToolContext) -> str:
    answer = _content(await ctx.elicit("Please confirm", CONFIRM_SCHEMA, key="confirm"))
    return f"state-ok: confirmed={answer.get('ok')}"


async def mrtr_multiple_inputs(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.ask_all({"user_name": _elicitation("What is your name?", NAME_SCHEMA),
                       "greeting": _sampling("Generate a greeting", 50),
                       "client_roots": ("roots/list", {})})
    return "all inputs received"


async def mrtr_multi_round(arguments: dict[str, Any], ctx: ToolContext) -> str:
    name = _content(await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1"))
    color = _content(await ctx.elicit("Step 2: What is your favorite color?", {
        "type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        key="step2"))
    return f"multi-round complete: {name.get('name')} likes {color.get('color')}"


async def mrtr_tampered_state(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.elicit("Please confirm", {"type": "object", "properties": {
        "ok": {"type": "boolean"}}}, key="confirm")
    return "state verified"


async def mrtr_capabilities(arguments: dict[str, Any], ctx: ToolContext) -> str:
    """Asks only for what the caller declared (SEP-2322: never an input request for a
    capability the client lacks)."""
    offered = {"sample": ("sampling", _sampling("Say hi", 20)),
               "ask": ("elicitation", _elicitation("What is your name?", NAME_SCHEMA)),
               "roots": ("roots", ("roots/list", {}))}
    declared = ctx.client_capabilities
    await ctx.ask_all({key: request for key, (capability, request) in offered.items()
                       if isinstance(declared.get(capability), dict)})
    return "capabilities respected"


ASKING: Final = {
    "test_sampling": sampling,
    "test_elicitation": elicitation,
    "test_elicitation_sep1034_defaults": _form(
        "Please review and update the form fields with defaults", SEP1034_SCHEMA),
    "test_elicitation_sep1330_enums": _form("Please select options from the enum fields",
                                            SEP1330_SCHEMA),
    "test_input_required_result_elicitation": mrtr_elicitation,
    "test_input_required_result_sampling": mrtr_sampling,
    "test_input_required_result_list_roots": mrtr_list_roots,
    "test_input_required_result_request_state": mrtr_request_state,
    "test_input_required_result_multiple_inputs": mrtr_multiple_inputs,
    "test_input_required_result_multi_round": mrtr_multi_round,
    "test_input_required_result_tampered_state": mrtr_tampered_state,
    "test_input_required_result_capabilities": mrtr_capabilities,
}
"""The tools that ask the caller back, by name."""


def bind_prompts(handlers: ToolHandlers) -> None:
    """The prompts of the ``prompts-*`` scenarios (as the reference fixture's) and the one
    ``input-required-result-non-tool-request`` gets, which asks back before it answers."""

    @handlers.prompt("test_simple_prompt", description="A simple prompt without arguments")
    def simple_prompt(arguments: dict[str, str]) -> str:
        return "This is a simple prompt for testing."

    @handlers.prompt("test_prompt_with_arguments", description="A prompt with required arguments",
                     arguments=[PromptArgument("arg1", "First test argument", required=True),
                                PromptArgument("arg2", "Second test argument", required=True)])
    def prompt_with_arguments(arguments: dict[str, str]) -> str:
        return f"Prompt with arguments: arg1='{arguments['arg1']}', arg2='{arguments['arg2']}'"

    @handlers.prompt("test_prompt_with_embedded_resource",
                     description="A prompt that includes an embedded resource",
                     arguments=[PromptArgument("resourceUri", "URI of the resource to embed",
                                               required=True)])
    def prompt_with_embedded_resource(arguments: dict[str, str]) -> list[Any]:
        return [embedded_resource(arguments["resourceUri"], mime_type="text/plain",
                                  text="Embedded resource content for testing."),
                "Please process the embedded resource above."]

    @handlers.prompt("test_prompt_with_image", description="A prompt that includes image content")
    def prompt_with_image(arguments: dict[str, str]) -> list[Any]:
        return [image(PNG, "image/png"), "Please analyze the image above."]

    @handlers.prompt("test_input_required_result_prompt",
                     description="A prompt that asks the user for context before it answers")
    async def input_required_prompt(arguments: dict[str, str], ctx: PromptContext) -> str:
        answer = await ctx.elicit("What context should the prompt use?", {
            "type": "object", "properties": {"context": {"type": "string"}},
            "required": ["context"]}, key="user_context")
        context = answer.get("content") or {}
        return f"Prompt with context: {context.get('context', '')}"


def conformance_handlers() -> ToolHandlers:
    """A handler for every contract in :data:`CONTRACTS`, and the suite's prompts."""
    handlers = ToolHandlers()
    bind_prompts(handlers)
    handlers.bind("echo", echo)
    handlers.bind("test_simple_text", simple_text)
    handlers.bind("test_image_content", image_content)
    handlers.bind("test_audio_content", audio_content)
    handlers.bind("test_embedded_resource", embedded)
    handlers.bind("test_multiple_content_types", multiple_content_types)
    handlers.bind("test_error_handling", error_handling)
    handlers.bind("test_tool_with_progress", with_progress)
    handlers.bind("test_tool_with_logging", with_logging)
    handlers.bind("test_logging_tool", logging_tool)
    handlers.bind("test_missing_capability", missing_capability, requires={"sampling": {}})
    handlers.bind("test_streaming_elicitation", streaming_without_requests)
    handlers.bind("test_trigger_tool_change", trigger_tool_change)
    handlers.bind("test_custom_header", custom_header)
    handlers.bind("json_schema_2020_12_tool", json_schema_2020_12)
    for name, handler in ASKING.items():
        handlers.bind(name, handler)
    return handlers


HANDLERS: Final = conformance_handlers()
