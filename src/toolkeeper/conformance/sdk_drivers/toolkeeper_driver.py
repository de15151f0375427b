"""The SDK diff's driver for toolkeeper's own client (:mod:`toolkeeper.client`): one request
through its public API, and one JSON line on stdout with what the client handed back.

Runs in toolkeeper's interpreter (``python -I``: the installed package, no ``PYTHONPATH``).

    python -I toolkeeper_driver.py --url URL --mode legacy|2026-07-28 --method tools/call|tools/list
                                   [--tool NAME] [--arguments JSON] [--manual-input]

The era is chosen explicitly: ``2026-07-28`` is ``connect(..., era="modern")`` (strict: modern
on the discover probe's proof, never a legacy fallback) and ``legacy`` is ``era="legacy"`` (no
modern probe; the ``initialize`` handshake). The request goes through the session
(:meth:`~toolkeeper.client.ClientSession.call_tool` / ``list_tools``): the kernel adds argument
repair and contract pinning in front of it, but hands the session's reply to the agent as it
came (``CallOutcome.result`` / ``.error``), and it calls only tools the server lists, which the
fixtures' tool is not.

Output: ``{"sdk", "era", "outcome": "value"|"exception"|"unsupported", "value"|"exception"}``.
A ``tools/call`` value is the result object exactly as the client returned it; a JSON-RPC error
answer, which the client returns as a value (``CallReply.error``), is reported as an exception
of type ``CallReply.error`` carrying the error's code, as an SDK that raises it would be. A
``tools/list`` value is the :class:`~toolkeeper.client.ToolListing` under its wire names
(``tools``, ``ttlMs``, ``cacheScope``; ``dropped`` and ``warnings`` when not empty), unset ones
left out, with the first page's other fields as the server sent them
(``ToolListing.fields``). A raised client error is ``{"type", "code", "message"}``: its JSON-RPC code when it
carries one (a refused ``tools/list``), the stable toolkeeper code leading the message.
``--manual-input`` changes nothing: the client never runs the input loop itself, so an
``input_required`` result is always handed to the caller as a value. ``unsupported`` (with a
``reason``): another mode or method. Exit 0 whenever it printed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import sys
from typing import Any, Final

from toolkeeper.client import ClientSession, EraChoice, Target, ToolListing, connect
from toolkeeper.errors import ToolkeeperError

DEADLINE_S: Final = 20.0
_ERAS: Final[dict[str, EraChoice]] = {"2026-07-28": "modern", "legacy": "legacy"}
_METHODS: Final = ("tools/call", "tools/list")


def _listing(listing: ToolListing) -> dict[str, Any]:
    optional = {"ttlMs": listing.ttl_ms, "cacheScope": listing.cache_scope,
                "dropped": list(listing.dropped), "warnings": list(listing.warnings)}
    return {**listing.fields, "tools": listing.tools,
            **{key: value for key, value in optional.items() if value not in (None, [])}}


def _raised(exc: BaseException) -> dict[str, Any]:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    code: Any = None
    text = " ".join(str(exc).split())
    if isinstance(exc, ToolkeeperError):
        found = exc.data.get("error")
        code = found.get("code") if isinstance(found, dict) else None
        text = f"{exc.code}: {text}"
    return {"type": type(exc).__name__, "code": code if type(code) is int else None,
            "message": text[:300]}


async def _request(session: ClientSession, args: argparse.Namespace) -> dict[str, Any]:
    if args.method == "tools/list":
        return {"outcome": "value", "value": _listing(await session.list_tools())}
    reply = await session.call_tool(args.tool, json.loads(args.arguments))
    if reply.error is not None:
        code = reply.error.get("code")
        return {"outcome": "exception", "exception": {
            "type": "CallReply.error", "code": code if type(code) is int else None,
            "message": " ".join(str(reply.error.get("message", "")).split())[:300]}}
    return {"outcome": "value", "value": reply.result}


async def _session(args: argparse.Namespace, era: list[str]) -> dict[str, Any]:
    async with await connect(Target.from_url(args.url), era=_ERAS[args.mode]) as session:
        era.append(session.version)
        return await _request(session, args)


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode not in _ERAS:
        return {"outcome": "unsupported", "era": None,
                "reason": f"the client speaks {sorted(_ERAS)}, not {args.mode!r}"}
    if args.method not in _METHODS:
        return {"outcome": "unsupported", "era": None,
                "reason": f"the driver makes {list(_METHODS)}, not {args.method!r}"}
    era: list[str] = []
    try:
        out = await asyncio.wait_for(_session(args, era), DEADLINE_S)
    except Exception as exc:  # every client exception is the evidence
        return {"outcome": "exception", "era": era[0] if era else None,
                "exception": _raised(exc)}
    return {**out, "era": era[0] if era else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--tool", default="")
    parser.add_argument("--arguments", default="{}")
    parser.add_argument("--manual-input", action="store_true")
    args = parser.parse_args()
    out = asyncio.run(_run(args))
    out["sdk"] = f"toolkeeper {importlib.metadata.version('toolkeeper')}"
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
