"""A ``tools/call`` handler's value as sent: checked (its content blocks, its structured
content against the output schema), in the call's era's form, with the route's ``_meta``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Raw

from toolkeeper.protocol import Call, Era, encode_message
from toolkeeper.protocol.versions import UNSTRUCTURED_VERSIONS
from toolkeeper.server.call_outcomes import checked_output
from toolkeeper.server.content import ForwardedResult, ToolResult, check_content, to_tool_result
from toolkeeper.server.routes import Route

__all__ = ["checked_result", "encoded_wire", "wire_form"]


def checked_result(route: Route, value: Any) -> ToolResult:
    """A handler's value as a ToolResult, its content blocks checked and its structured
    content checked against the output schema (raises for a value that is not a result or
    a block a client could not parse)."""
    result = value if type(value) is ToolResult else to_tool_result(value)
    check_content(result.content)
    if route.output_validator is not None:
        result = checked_output(route.plan.spec, route.output_validator, result)
    return result


def encoded_wire(call: Call, route: Route, result: ToolResult) -> dict[str, Any]:
    """The result as sent: its content and structured content encoded to JSON here (as
    ``msgspec.Raw``, spliced into the reply verbatim), so one that cannot be raises now, in
    the tool's call, not later in the transport. A result of a subclass (a
    :class:`~toolkeeper.server.content.ForwardedResult`: its own fields and ``_meta``) has the
    rest checked here too, as the express lanes' whole-reply encoding checks it."""
    out = wire_form(call, route, result)
    if "structuredContent" in out:
        out["structuredContent"] = Raw(encode_message(out["structuredContent"]))
    out["content"] = Raw(encode_message(out["content"]))
    if result.__class__ is not ToolResult:
        encode_message(out)
    return out


def wire_form(call: Call, route: Route, result: ToolResult) -> dict[str, Any]:
    """The result's wire form for the call's era, with a ``_meta`` dict of its own."""
    out = result.to_wire()
    if ("structuredContent" in out and call.era is Era.LEGACY
            and (call.protocol_version in UNSTRUCTURED_VERSIONS
                 or not isinstance(out["structuredContent"], Mapping))):
        del out["structuredContent"]
    out["_meta"] = route.meta.copy()  # the proxied dict's copy: dict(proxy) is 5x slower
    if result.__class__ is not ToolResult and isinstance(result, ForwardedResult):
        result.with_meta(out)  # the upstream's _meta under ours
    return out
