"""A legacy-era caller written with the official Python SDK 1.x (``mcp`` 1.30.0, run by the
interpreter of the virtualenv the ``peers`` fixture installs; it imports nothing of
toolkeeper): ``python -I mcp1_caller.py URL TOOL ARGUMENTS_JSON`` initializes a session over
Streamable HTTP, lists every page of tools, calls ``TOOL`` once and prints one JSON line:
``{"era", "tools", "isError", "text", "structured"}`` (each tool's name, description, both
schemas and annotations) (or ``{"failure": ...}``). Bounded: the
whole run fails after 30 s."""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

warnings.filterwarnings("ignore")

import anyio  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

RUN_S = 30


async def _run(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(RUN_S):
        async with streamable_http_client(url) as (read, write, _), \
                ClientSession(read, write) as session:
            era = (await session.initialize()).protocolVersion
            tools: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                page = await session.list_tools(cursor)
                tools += [{"name": t.name, "description": t.description,
                           "inputSchema": t.inputSchema, "outputSchema": t.outputSchema,
                           "annotations": None if t.annotations is None else
                           t.annotations.model_dump(by_alias=True, exclude_none=True)}
                          for t in page.tools]
                cursor = page.nextCursor
                if cursor is None:
                    break
            result = await session.call_tool(tool, arguments)
            texts = [block.text for block in result.content if block.type == "text"]
            return {"era": era, "tools": tools, "isError": bool(result.isError),
                    "text": texts[0] if texts else None, "structured": result.structuredContent}


def main() -> None:
    url, tool, arguments = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    try:
        out = anyio.run(_run, url, tool, arguments)
    except BaseException as exc:
        leaf = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        out = {"failure": f"{type(leaf).__name__}: {' '.join(str(leaf).split())[:200]}"}
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    main()
