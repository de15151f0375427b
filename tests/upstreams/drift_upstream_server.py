"""An upstream MCP server written with the official Python SDK (``mcp`` 2.x ``MCPServer``)
whose tool descriptors are read, at every ``tools/list``, from the JSON file named in argv
(a list of MCP tool descriptors), so a test changes what the upstream serves by rewriting that
file. ``python drift_upstream_server.py TOOLS.json [PAGE_SIZE]`` serves stdio; with a page size
the listing comes in pages of that many tools (``nextCursor`` the next index). Every tool
answers a call with its arguments as text."""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

warnings.filterwarnings("ignore")

import mcp_types as types  # noqa: E402
from mcp.server import MCPServer  # noqa: E402

TOOLS_FILE = sys.argv[1]
PAGE = int(sys.argv[2]) if len(sys.argv) > 2 else 0


class FileToolsServer(MCPServer):
    async def list_tools(self) -> list[types.Tool]:
        with open(TOOLS_FILE, encoding="utf-8") as handle:
            return [types.Tool.model_validate(tool) for tool in json.load(handle)]

    async def _handle_list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await self.list_tools()
        if not PAGE:
            return types.ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE
        return types.ListToolsResult(tools=tools[start:end],
                                     next_cursor=str(end) if end < len(tools) else None)


    async def _handle_call_tool(self, ctx: Any, params: Any) -> types.CallToolResult:
        text = json.dumps(params.arguments or {}, sort_keys=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = FileToolsServer("drift-upstream-fixture", version="0.0.1")

if __name__ == "__main__":
    server.run("stdio")
