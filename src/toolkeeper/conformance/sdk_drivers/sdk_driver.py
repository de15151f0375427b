"""The SDK diff's driver for the official Python ``mcp`` client (1.x and 2.x): one request
through the SDK's own API, and one JSON line on stdout with what the SDK handed back.

Runs inside the SDK's interpreter (``python -I``) and imports nothing of toolkeeper.

    python -I sdk_driver.py --url URL --mode legacy|2026-07-28 --method tools/call|tools/list
                            [--tool NAME] [--arguments JSON] [--manual-input]

``--manual-input``: the answer is ``input_required``; take the SDK's manual multi-round-trip
path (``session.call_tool(..., allow_input_required=True)``), which hands the result to the
application, instead of its driver loop (which needs an elicitation handler to run at all).

Output: ``{"sdk", "era", "outcome": "value"|"exception"|"unsupported", "value"|"exception"}``;
a value is the SDK's result model dumped by alias with unset optionals left out, an exception
is ``{"type", "code", "message"}``. Exit 0 whenever it printed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import sys
import warnings
from contextlib import AsyncExitStack
from typing import Any

DEADLINE_S = 20.0


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _exception(exc: BaseException) -> dict[str, Any]:
    exc = _leaf(exc)
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    if code is None:
        code = getattr(exc, "code", None)
    return {"type": type(exc).__name__, "code": code if isinstance(code, int) else None,
            "message": " ".join(str(exc).split())[:300]}


def _dump(result: Any) -> Any:
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


async def _v2(args: argparse.Namespace) -> tuple[str | None, Any]:
    from mcp import Client

    async with Client(args.url, mode=args.mode) as client:
        era = client.protocol_version
        if args.method == "tools/list":
            return era, await client.list_tools()
        if args.manual_input:
            return era, await client.session.call_tool(args.tool, json.loads(args.arguments),
                                                       allow_input_required=True)
        return era, await client.call_tool(args.tool, json.loads(args.arguments))


async def _v1(args: argparse.Namespace) -> tuple[str | None, Any]:
    from mcp import ClientSession
    from mcp.client import streamable_http

    # Names differ across 1.x (streamablehttp_client before 1.24, protocolVersion throughout):
    # looked up by name so the module type-checks against whichever mcp is installed.
    connect = getattr(streamable_http, "streamable_http_client", None) \
        or getattr(streamable_http, "streamablehttp_client")  # noqa: B009
    async with AsyncExitStack() as stack:
        streams = await stack.enter_async_context(connect(args.url))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        era = getattr(await session.initialize(), "protocolVersion")  # noqa: B009
        if args.method == "tools/list":
            return era, await session.list_tools()
        return era, await session.call_tool(args.tool, json.loads(args.arguments))


async def _run(args: argparse.Namespace, major: int) -> dict[str, Any]:
    if major < 2 and args.mode != "legacy":
        return {"outcome": "unsupported", "era": None}
    era: str | None = None
    try:
        era, result = await asyncio.wait_for((_v2 if major >= 2 else _v1)(args), DEADLINE_S)
    except BaseException as exc:  # every SDK exception is the evidence
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"outcome": "exception", "era": era, "exception": _exception(exc)}
    return {"outcome": "value", "era": era, "value": _dump(result)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--tool", default="")
    parser.add_argument("--arguments", default="{}")
    parser.add_argument("--manual-input", action="store_true")
    args = parser.parse_args()
    version = importlib.metadata.version("mcp")
    warnings.simplefilter("ignore")
    out = asyncio.run(_run(args, int(version.split(".")[0])))
    out["sdk"] = f"mcp {version}"
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
