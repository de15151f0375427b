"""Test kit for handlers that ask back: an estate of asking tools, the gateway serving them over
real HTTP on 127.0.0.1 (:func:`serving`) and a modern driver that answers
``input_required`` rounds."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gateway_kit import OPEN, Driver, contract

from toolkeeper.registry import Registry
from toolkeeper.server import InMemoryCallLog, ToolContext, ToolHandlers, build_app
from toolkeeper.transports import ServerThread, StreamableHTTPApp

ALL_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
GREET = [{"role": "user", "content": {"type": "text", "text": "Greet"}}]


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def sampled(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m",
            "stopReason": "endTurn"}


ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


def asking_estate(registry: Registry) -> None:
    for name in ("greet", "two_steps", "all_at_once", "roots", "summarize", "plain"):
        registry.publish(contract(name, "1.0.0", OPEN))


class AskingTools:
    """The handlers of :func:`asking_estate`; ``runs`` counts each handler's starts."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()

    def handlers(self) -> ToolHandlers:
        handlers = ToolHandlers()
        handlers.bind("greet", self.greet)
        handlers.bind("two_steps", self.two_steps)
        handlers.bind("all_at_once", self.all_at_once)
        handlers.bind("roots", self.roots)
        handlers.bind("summarize", self.summarize)
        handlers.bind("plain", self.plain)
        return handlers

    async def greet(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        self.runs["greet"] += 1
        answer = await ctx.elicit("Your name?", NAME_SCHEMA, key="who")
        return f"Hello, {answer['content']['name']}!"

    async def two_steps(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        self.runs["two_steps"] += 1
        name = await ctx.elicit("Your name?", NAME_SCHEMA)
        color = await ctx.elicit("Your color?", {"type": "object", "properties": {
            "color": {"type": "string"}}})
        return f"{name['content']['name']} likes {color['content']['color']}"

    async def all_at_once(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        self.runs["all_at_once"] += 1
        got = await ctx.ask_all({
            "who": ("elicitation/create", {"message": "Your name?",
                                           "requestedSchema": NAME_SCHEMA}),
            "hello": ("sampling/createMessage", {"messages": GREET, "maxTokens": 20}),
            "where": ("roots/list", {})})
        return (f"{got['who']['content']['name']}|{got['hello']['content']['text']}|"
                f"{got['where']['roots'][0]['uri']}")

    async def roots(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        self.runs["roots"] += 1
        listed = await ctx.list_roots()
        summary = await ctx.sample(GREET, max_tokens=10, system_prompt="be brief")
        return f"{listed['roots'][0]['uri']} {summary['content']['text']}"

    async def summarize(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        self.runs["summarize"] += 1
        answer = await ctx.sample(GREET, max_tokens=30, temperature=0.5)
        return f"summary: {answer['content']['text']}"

    async def plain(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        self.runs["plain"] += 1
        return "no questions"


@dataclass
class Served:
    url: str
    tools: AskingTools
    log: SignallingCallLog
    app: StreamableHTTPApp


class SignallingCallLog(InMemoryCallLog):
    """The in-memory call log, notifying its waiters as each call completes."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = threading.Condition()

    def completed(self, handle: int, outcome: str, latency_ms: float) -> None:
        super().completed(handle, outcome, latency_ms)
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Whether ``condition`` holds, checked now and after each completion, within the
        ``timeout`` safety bound."""
        with self._changed:
            return self._changed.wait_for(condition, timeout)


@contextmanager
def serving(registry: Registry) -> Iterator[Served]:
    """:func:`asking_estate` behind the gateway on a server thread, stopped after the test."""
    asking_estate(registry)
    tools, log = AskingTools(), SignallingCallLog()
    app, _ = build_app(registry, tools.handlers(), call_log=log)
    thread = ServerThread(app)
    running = thread.start()
    try:
        yield Served(running.url, tools, log, app)
    finally:
        thread.stop()


def outcomes(served: Served) -> list[str | None]:
    """The call log's outcomes, in order."""
    return [record.outcome for record in served.log.records]


def retry(driver: Driver, name: str, arguments: dict[str, Any], round_result: dict[str, Any],
          responses: dict[str, Any]) -> dict[str, Any]:
    """The retry of ``name`` answering ``round_result`` with ``responses``."""
    return driver.request("tools/call", name=name, arguments=arguments,
                          requestState=round_result["requestState"], inputResponses=responses)
