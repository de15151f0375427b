"""A legacy-era ``mcp`` 1.x client answering a server's requests (elicitation, sampling,
roots): run inside a client's own virtualenv (``python -I``), it calls each tool named on the
command line in one session, answering through its callbacks, then (``--cancel TOOL``) calls
TOOL and cancels it (``notifications/cancelled``) from within the elicitation callback, before
answering. It imports nothing of toolkeeper and prints one JSON object on its last stdout line:

    {"era": "2025-11-25", "calls": {TOOL: {"isError": bool, "text": str} | {"code": int}},
     "seen": [[kind, detail], ...], "cancelled": {"code": int} | {...}}

    python -I py_ask_driver.py --url URL [--cancel TOOL] TOOL...

Bounded: the whole run by 30 s (then it prints what it has).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

RUN_S = 30.0


class Answers:
    """The client's callbacks and what they saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.cancel: tuple[ClientSession, int] | None = None

    async def elicit(self, context: Any, params: types.ElicitRequestParams
                     ) -> types.ElicitResult:
        self.seen.append(("elicit", params.message))
        if self.cancel is not None:  # cancel the call while its elicitation is open
            session, request_id = self.cancel
            await session.send_notification(types.ClientNotification(
                types.CancelledNotification(params=types.CancelledNotificationParams(
                    requestId=request_id, reason="the user went away"))))
            return types.ElicitResult(action="cancel")
        field = next(iter(params.requestedSchema["properties"]))
        return types.ElicitResult(action="accept", content={field: f"{field}-1"})

    async def sample(self, context: Any, params: types.CreateMessageRequestParams
                     ) -> types.CreateMessageResult:
        self.seen.append(("sample", [params.maxTokens, params.systemPrompt, params.temperature]))
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(type="text", text="sampled"),
                                         stopReason="endTurn")

    async def roots(self, context: Any) -> types.ListRootsResult:
        self.seen.append(("roots", None))
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


async def _call(session: ClientSession, tool: str) -> dict[str, Any]:
    try:
        result = await session.call_tool(tool, {"a": 1})
    except McpError as exc:
        return {"code": exc.error.code, "data": exc.error.data}
    block = result.content[0]
    return {"isError": bool(result.isError), "text": getattr(block, "text", None)}


async def run(url: str, tools: list[str], cancel: str | None, out: dict[str, Any]) -> None:
    answers = Answers()
    out["seen"] = answers.seen
    with anyio.move_on_after(RUN_S):
        async with streamable_http_client(url) as (read, write, _), ClientSession(
                read, write, sampling_callback=answers.sample,
                elicitation_callback=answers.elicit,
                list_roots_callback=answers.roots) as session:
            out["era"] = (await session.initialize()).protocolVersion
            for tool in tools:
                out["calls"][tool] = await _call(session, tool)
            if cancel is not None:
                await session.list_tools()  # the call's output check needs no list later
                answers.cancel = (session, session._request_id)  # the call's id, next
                out["cancelled"] = await _call(session, cancel)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--cancel")
    parser.add_argument("tools", nargs="*")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    out: dict[str, Any] = {"era": None, "calls": {}, "seen": [], "cancelled": None}
    try:
        anyio.run(run, args.url, args.tools, args.cancel, out)
    except Exception as exc:  # reported, not raised: the test reads the line
        out["failure"] = f"{type(exc).__name__}: {exc}"
    sys.stdout.write("\n" + json.dumps(out, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
