"""A gateway whose tools attack the handler API (odd return
values, non-finite numbers, BaseException subclasses, late and concurrent progress, log data,
nested capability requirements), served in process or over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sdk_peer_kit import hunt_contract

from toolkeeper.registry import Registry
from toolkeeper.server import (
    Gateway,
    InMemoryCallLog,
    ToolContext,
    ToolHandlers,
    ToolResult,
    build_app,
    build_gateway,
    text,
)
from toolkeeper.transports import ServerThread

__all__ = ["NUMBER_OUTPUT", "TOOLS", "handler_gateway", "outcomes", "serve_handlers"]

NUMBER_OUTPUT: dict[str, Any] = {"type": "object", "required": ["x"],
                                 "properties": {"x": {"type": "number"}}}
_LATE: list[asyncio.Task[None]] = []
"""Tasks a handler left running after it returned (kept so they are not collected)."""


def _raise(exc: BaseException) -> Any:
    raise exc


async def _raise_async(exc: BaseException) -> Any:
    await asyncio.sleep(0)
    raise exc


async def _late_progress(arguments: dict[str, Any], ctx: ToolContext) -> str:
    async def later() -> None:
        await asyncio.sleep(0)
        await ctx.progress(2, 2, "after the result")
    _LATE.append(asyncio.ensure_future(later()))
    await ctx.progress(1, 2, "before the result")
    return "returned"


async def _concurrent_progress(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await asyncio.gather(*(ctx.progress(step, 20) for step in range(1, 21)))
    return "concurrent"


async def _bare_progress(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.progress(3)
    return "bare"


async def _log_object(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.log("error", {"when": object()}, logger="hunt")
    return "logged"


async def _log_nan(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.log("error", {"ratio": math.nan}, logger="hunt")
    return "logged"


async def _bad_message(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.progress(1, 2, 5)  # type: ignore[arg-type]  # a handler bug, as NaN is
    return "after"


async def _bad_logger(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.log("info", "x", logger=5)  # type: ignore[arg-type]  # a handler bug
    return "after"


async def _nan_async(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return {"x": -math.inf}  # the express lane's path (a context-taking async handler)


def _require_nested(arguments: dict[str, Any], ctx: ToolContext) -> str:
    ctx.require_capabilities({"elicitation": {"url": {}}})
    return "elicited"


TOOLS: dict[str, Any] = {
    "hc.nan_dict": lambda arguments: {"x": math.nan},
    "hc.inf_result": lambda arguments: ToolResult((text("inf"),), {"x": math.inf}),
    "hc.nan_async": _nan_async,
    "hc.typed_ok": lambda arguments: {"x": 1.5},
    "hc.typed_bad": lambda arguments: {"x": "one"},
    "hc.typed_text": lambda arguments: "no structured content",
    "hc.typed_error": lambda arguments: ToolResult((text("bad"),), {"x": "one"}, is_error=True),
    "hc.nan_typed": lambda arguments: ToolResult((text("nan"),), {"x": math.nan}),
    "hc.bad_block": lambda arguments: [{"type": "text"}],
    "hc.unknown_block": lambda arguments: [{"type": "video", "url": "x"}],
    "hc.bad_annotation": lambda arguments: ToolResult((text("t", annotations={"priority": 5}),)),
    "hc.meta_block": lambda arguments: [{"type": "text", "text": "m", "_meta": {"k": 1}}],
    "hc.exit_inline": lambda arguments: _raise(SystemExit(3)),
    "hc.exit_async": lambda arguments, ctx: _raise_async(SystemExit(3)),
    "hc.interrupt_async": lambda arguments, ctx: _raise_async(KeyboardInterrupt()),
    "hc.generator_exit": lambda arguments, ctx: _raise_async(GeneratorExit()),
    "hc.late": _late_progress,
    "hc.concurrent": _concurrent_progress,
    "hc.bare": _bare_progress,
    "hc.log_object": _log_object,
    "hc.log_nan": _log_nan,
    "hc.bad_message": _bad_message,
    "hc.bad_logger": _bad_logger,
    "hc.nested": _require_nested,
    "hc.nested_bind": lambda arguments: "elicited",
    "hc.ok": lambda arguments: "ok",
}
_OUTPUT = {name: NUMBER_OUTPUT for name in (
    "hc.nan_typed", "hc.typed_ok", "hc.typed_bad", "hc.typed_text", "hc.typed_error")}
_REQUIRES: dict[str, dict[str, Any]] = {"hc.nested_bind": {"elicitation": {"url": {}}}}


def _registry() -> Registry:
    registry = Registry.open("memory:")
    for name in TOOLS:
        registry.publish(hunt_contract(name, output_schema=_OUTPUT.get(name)))
    return registry


def _handlers() -> ToolHandlers:
    handlers = ToolHandlers()
    for name, function in TOOLS.items():
        handlers.bind(name, function, requires=_REQUIRES.get(name))
    return handlers


@contextmanager
def handler_gateway(**options: Any) -> Iterator[Gateway]:
    """The hunt gateway in process (no transport)."""
    registry = _registry()
    try:
        yield build_gateway(registry, _handlers(), **options)
    finally:
        registry.close()


@contextmanager
def serve_handlers() -> Iterator[tuple[str, Gateway]]:
    """The hunt gateway on an ephemeral 127.0.0.1 port."""
    registry = _registry()
    app, gateway = build_app(registry, _handlers())
    thread = ServerThread(app)
    running = thread.start()
    try:
        yield running.url, gateway
    finally:
        thread.stop()
        registry.close()


def outcomes(gateway: Gateway, tool: str) -> list[str | None]:
    log = gateway.call_log
    assert isinstance(log, InMemoryCallLog)
    return [record.outcome for record in log.records if record.tool == tool]
