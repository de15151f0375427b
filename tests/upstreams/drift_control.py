"""Driving ``drift_upstream_server.py ... http`` from a test: its tools file, and its control
tools (``announce``, ``hold``, ``release``, ``state``) called through toolkeeper's own client
(the SDK's client would list the tools before a call, and a held listing never answers)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from process_kit import serving_announced_port
from toolkeeper.upstreams.connections import open_session
from toolkeeper.upstreams.model import UpstreamDefinition

SERVER = Path(__file__).with_name("drift_upstream_server.py")
POLLS = 200
"""Control calls a test makes at most while waiting for the upstream's state to change."""


def search(**fields: Any) -> dict[str, Any]:
    """The fixture's ``search`` tool descriptor, with ``fields`` over it."""
    return {"name": "search", "description": "Search the files by text.",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}},
                            "required": ["q"]},
            "annotations": {"readOnlyHint": True}, **fields}


def wider(**fields: Any) -> dict[str, Any]:
    """``search`` with an added optional ``limit`` (a MINOR change)."""
    schema = {"type": "object", "properties": {"q": {"type": "string"},
                                               "limit": {"type": "integer"}},
              "required": ["q"]}
    return search(inputSchema=schema, **fields)


class DriftUpstream:
    """One running HTTP drift upstream: ``url``, its ``tools`` file."""

    def __init__(self, url: str, tools: Path) -> None:
        self.url = url
        self.tools = tools

    def serve(self, *descriptors: dict[str, Any]) -> None:
        self.tools.write_text(json.dumps(list(descriptors)), encoding="utf-8")

    def control(self, name: str, **arguments: Any) -> dict[str, int]:
        """Call a control tool; the upstream's state after it."""
        async def call() -> dict[str, int]:
            with anyio.fail_after(30):
                session = await open_session(UpstreamDefinition(name="control", url=self.url))
                try:
                    reply = await session.call_tool(name, arguments)
                finally:
                    await session.aclose()
            assert reply.result is not None, reply.error
            state: dict[str, int] = json.loads(reply.result["content"][0]["text"])
            return state
        return anyio.run(call)

    def until(self, seen: Callable[[dict[str, int]], bool]) -> dict[str, int]:
        """The upstream's state once ``seen`` holds (at most :data:`POLLS` looks)."""
        for _ in range(POLLS):
            state = self.control("state")
            if seen(state):
                return state
        raise AssertionError(f"the upstream's state did not come to pass: {state}")


@contextmanager
def drift_upstream(directory: Path) -> Iterator[DriftUpstream]:
    """An HTTP drift upstream serving :func:`search`, stopped by its pid on exit."""
    tools = directory / "tools.json"
    upstream = DriftUpstream("", tools)
    upstream.serve(search())
    with serving_announced_port([sys.executable, str(SERVER), str(tools), "http"]) as url:
        upstream.url = url
        yield upstream
