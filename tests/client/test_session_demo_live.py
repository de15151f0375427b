"""The client against a real ``toolkeeper serve --demo`` process, over Streamable HTTP on
127.0.0.1 and over stdio, in both eras: connect, list every tool with its version, call one."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolkeeper
from process_kit import keep_draining, read_until, stop_process
from toolkeeper.client import ClientSession, ClientTimeouts, Era, Target, connect

_SRC = str(Path(toolkeeper.__file__).resolve().parent.parent)
_URL = re.compile(rb"toolkeeper gateway on (http://127\.0\.0\.1:\d+/mcp)\r?\n")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_SRC,
                                                                 os.environ.get("PYTHONPATH")]))}
BOUNDS = ClientTimeouts(probe_s=20.0, request_s=20.0, close_s=10.0)
LOOKUP = {"reference": "PMT-771", "include_legs": True}
LISTED = [("db.query", "4.0.0"), ("payments.lookup", "1.0.0"), ("tickets.create", "1.0.0")]


def _demo(registry: Path, *transport: str) -> list[str]:
    return [sys.executable, "-m", "toolkeeper", "serve", "--demo", *transport, "--registry",
            f"sqlite:///{registry}", "--log-level", "warning"]


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    registry = tmp_path_factory.mktemp("demo-http") / "registry.db"
    proc = subprocess.Popen([*_demo(registry, "--port", "0")], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    try:
        assert proc.stderr is not None
        url = read_until(proc.stderr, _URL, 30).group(1).decode()
        keep_draining(proc.stderr)
        yield url
    finally:
        stop_process(proc)


async def _use(target: Target, era: Any) -> tuple[ClientSession, list[Any], Any]:
    async with await connect(target, era=era, timeouts=BOUNDS) as session:
        listing = await session.list_tools()
        reply = await session.call_tool("payments.lookup", LOOKUP,
                                        meta={"schemaVersion": "1.0.0"})
        return session, [(t["name"], t["_meta"]["schemaVersion"]) for t in listing.tools], reply


def _check(session: ClientSession, tools: list[Any], reply: Any, era: Era) -> None:
    assert session.era is era
    assert tools == LISTED
    assert reply.error is None and reply.result is not None
    assert reply.result["isError"] is False
    assert reply.result["structuredContent"]["reference"] == "PMT-771"


@pytest.mark.parametrize(("choice", "era"), [("auto", Era.MODERN), ("legacy", Era.LEGACY)])
def test_demo_over_http_lists_and_calls_in_each_era(http_url: str, choice: Any,
                                                    era: Era) -> None:
    session, tools, reply = asyncio.run(_use(Target.from_url(http_url), choice))
    _check(session, tools, reply, era)
    assert reply.http_status == 200


@pytest.mark.parametrize(("choice", "era"), [("modern", Era.MODERN), ("legacy", Era.LEGACY)])
def test_demo_over_stdio_lists_and_calls_in_each_era(tmp_path: Path, choice: Any,
                                                     era: Era) -> None:
    target = Target.from_stdio(_demo(tmp_path / "registry.db", "--stdio"), env=ENV)
    session, tools, reply = asyncio.run(_use(target, choice))
    _check(session, tools, reply, era)
    assert reply.http_status is None
