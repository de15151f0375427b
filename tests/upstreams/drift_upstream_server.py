"""An upstream MCP server written with the official Python SDK (``mcp`` 2.x ``MCPServer``)
whose tool descriptors are read, at every ``tools/list``, from the JSON file named in argv
(a list of MCP tool descriptors), so a test changes what the upstream serves by rewriting that
file. ``python drift_upstream_server.py TOOLS.json [PAGE_SIZE]`` serves stdio; with a page size
the listing comes in pages of that many tools (``nextCursor`` the next index). Every tool
answers a call with its arguments as text.

``... TOOLS.json [PAGE_SIZE] http`` serves Streamable HTTP on 127.0.0.1 instead (an ephemeral
port, printed as ``PORT <n>``), where the SDK serves ``subscriptions/listen`` and a few control
tools, never listed, let a test drive the change stream and a listing's timing:

* ``announce(count)``: publishes ``count`` tools-changed events to every listen stream;
* ``hold()`` / ``release()``: from ``hold`` on, every ``tools/list`` waits until ``release``;
* ``state()``: ``{"listeners": open listen streams, "lists": listings begun, "waiting":
  listings waiting at the hold}``."""

from __future__ import annotations

import json
import socket
import sys
import warnings
from collections.abc import Callable
from typing import Any

warnings.filterwarnings("ignore")

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
import uvicorn  # noqa: E402
from mcp.server import MCPServer  # noqa: E402
from mcp.server.subscriptions import InMemorySubscriptionBus  # noqa: E402
from mcp.shared.subscriptions import ToolsListChanged  # noqa: E402

TOOLS_FILE = sys.argv[1]
PAGE = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 0
HTTP = sys.argv[-1] == "http"


class CountingBus(InMemorySubscriptionBus):
    """The SDK's bus, counting the listen streams subscribed to it."""

    listeners = 0

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self.listeners += 1
        gone = False

        def counted() -> None:
            nonlocal gone
            if not gone:
                gone = True
                self.listeners -= 1
            unsubscribe()

        return counted


BUS = CountingBus()
STATE = {"lists": 0, "waiting": 0}
HELD: list[anyio.Event] = []


class FileToolsServer(MCPServer):
    async def list_tools(self) -> list[types.Tool]:
        with open(TOOLS_FILE, encoding="utf-8") as handle:
            return [types.Tool.model_validate(tool) for tool in json.load(handle)]

    async def _handle_list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        STATE["lists"] += 1
        if HELD:
            STATE["waiting"] += 1
            try:
                await HELD[0].wait()
            finally:
                STATE["waiting"] -= 1
        tools = await self.list_tools()
        if not PAGE:
            return types.ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE
        return types.ListToolsResult(tools=tools[start:end],
                                     next_cursor=str(end) if end < len(tools) else None)


    async def _handle_call_tool(self, ctx: Any, params: Any) -> types.CallToolResult:
        arguments = params.arguments or {}
        answer: Any = arguments
        if HTTP and params.name == "announce":
            for _ in range(int(arguments.get("count", 1))):
                await BUS.publish(ToolsListChanged())
        elif HTTP and params.name == "hold":
            HELD[:] = [anyio.Event()]
        elif HTTP and params.name == "release":
            for event in HELD:
                event.set()
            HELD.clear()
        if HTTP and params.name in ("announce", "hold", "release", "state"):
            answer = {"listeners": BUS.listeners, **STATE}
        text = json.dumps(answer, sort_keys=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = FileToolsServer("drift-upstream-fixture", version="0.0.1", subscriptions=BUS)


def serve_http() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


if __name__ == "__main__":
    if HTTP:
        serve_http()
    else:
        server.run("stdio")
