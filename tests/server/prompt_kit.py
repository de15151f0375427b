"""Test kit for handler-bound prompts: a set of prompts (plain, with arguments, with content
blocks, one that asks back, two that fail) whose handlers count their runs."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gateway_kit import Driver

from toolkeeper.server import (
    PromptArgument,
    PromptContext,
    ToolHandlers,
    embedded_resource,
    image,
    prompt_message,
)

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
PIXEL = b"\x89PNG\r\n\x1a\n"


class PromptSet:
    """The prompts; ``runs`` counts each handler's starts."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()

    def handlers(self, into: ToolHandlers | None = None) -> ToolHandlers:
        handlers = into if into is not None else ToolHandlers()
        handlers.prompt("plain", description="No arguments")(self.plain)
        handlers.prompt("greeting", title="Greeting", description="Greets someone", arguments=[
            PromptArgument("name", "Who to greet", required=True),
            {"name": "tone", "description": "How", "required": False}])(self.greeting)
        handlers.prompt("blocks", description="Content blocks and messages")(self.blocks)
        handlers.prompt("asking", description="Asks for a name first",
                        arguments=["topic"])(self.asking)
        handlers.prompt("other_asking", description="Asks too",
                        arguments=["topic"])(self.asking)
        handlers.prompt("broken", description="Raises")(self.broken)
        handlers.prompt("unreadable", description="Returns a number")(self.unreadable)
        return handlers

    def plain(self, arguments: dict[str, str]) -> str:
        self.runs["plain"] += 1
        return "Say hello."

    def greeting(self, arguments: dict[str, str]) -> str:
        self.runs["greeting"] += 1
        return f"Greet {arguments['name']} ({arguments.get('tone', 'warmly')})."

    async def blocks(self, arguments: dict[str, str], ctx: PromptContext) -> list[Any]:
        self.runs["blocks"] += 1
        return [image(PIXEL, "image/png"),
                embedded_resource("test://doc", mime_type="text/plain", text="body"),
                prompt_message("Noted.", "assistant"),
                {"role": "user", "content": {"type": "text", "text": f"from {ctx.name}"}}]

    async def asking(self, arguments: dict[str, str], ctx: PromptContext) -> str:
        self.runs["asking"] += 1
        answer = await ctx.elicit("Your name?", NAME_SCHEMA, key="who")
        return f"{arguments.get('topic', 'anything')} for {answer['content']['name']}"

    def broken(self, arguments: dict[str, str]) -> str:
        self.runs["broken"] += 1
        raise RuntimeError("db password=hunter2 leaked")

    def unreadable(self, arguments: dict[str, str]) -> Any:
        self.runs["unreadable"] += 1
        return 42


def get(driver: Driver, name: Any, arguments: Any = None, **extra: Any) -> dict[str, Any]:
    """The reply to ``prompts/get`` (``extra``: more params, e.g. ``requestState``)."""
    params: dict[str, Any] = {"name": name, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return driver.request("prompts/get", **params)


def refused(response: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The code and data of an error reply."""
    error = response["error"]
    return error["code"], error.get("data") or {}
