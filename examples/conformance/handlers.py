"""Handlers of the conformance fixture estate (``contracts/`` beside this file), bound through the
normal handler API.

The official MCP conformance suite (``@modelcontextprotocol/conformance``) calls fixed tool
names; each handler here answers like the reference fixture server of the MCP Python SDK, as far
as toolkeeper's model allows: no server-to-client requests (sampling, elicitation, roots) and no
``input_required`` results, so the tools that need them are not part of this estate.
``test_reconnection`` ends its legacy response stream mid-call; the client resumes it with
``Last-Event-ID`` (SEP-1699).

Serve it (from the repository root)::

    toolkeeper serve --registry sqlite:///tmp/conformance.db \\
        --estate examples/conformance/contracts \\
        --handlers examples/conformance/handlers.py:HANDLERS
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any, Final

from toolkeeper.server import (
    ToolContext,
    ToolHandlers,
    ToolResult,
    audio,
    embedded_resource,
    image,
    text,
)

__all__ = ["CONTRACTS", "HANDLERS", "conformance_handlers"]

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


async def reconnection(arguments: dict[str, Any], ctx: ToolContext) -> str:
    """SEP-1699 polling: end the response stream mid-call (a legacy 2025-11-25 session over
    HTTP); the result is kept for the client's ``Last-Event-ID`` resumption."""
    await ctx.close_stream()
    return "Reconnection test completed successfully."


def custom_header(arguments: dict[str, Any]) -> str:
    return f"region={arguments['region']}"


def json_schema_2020_12(arguments: dict[str, Any]) -> str:
    seen = {"name": arguments.get("name"), "address": arguments.get("address")}
    return f"JSON Schema 2020-12 tool called with: {json.dumps(seen)}"


def conformance_handlers() -> ToolHandlers:
    """A handler for every contract in :data:`CONTRACTS`."""
    handlers = ToolHandlers()
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
    handlers.bind("test_reconnection", reconnection)
    handlers.bind("json_schema_2020_12_tool", json_schema_2020_12)
    return handlers


HANDLERS: Final = conformance_handlers()
