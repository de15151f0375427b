"""What a stdio upstream writes to its standard error reaches the gateway's log, a record per
line on ``toolkeeper.upstreams.stderr``, redacted: the official SDK's ``MCPServer`` over stdio
(``sdk_upstream.py stdio LINE...`` writes each LINE to stderr before it serves), opened as the
forwarding opens it, and the client's stdio transport on its own (lines cut at their bound,
none lost at the process's end)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
import pytest

from toolkeeper.client.stdio_transport import STDERR_LINE_MAX, StdioTransport
from toolkeeper.upstreams.connections import UpstreamConnections
from toolkeeper.upstreams.model import UpstreamDefinition

SDK_UPSTREAM = Path(__file__).resolve().parent / "sdk_upstream.py"
SECRET_URL = "postgresql://tk:pg-s3cret@127.0.0.1:5432/tk"


def test_a_stdio_upstreams_stderr_is_logged_line_by_line_and_redacted(
        caplog: pytest.LogCaptureFixture) -> None:
    defn = UpstreamDefinition(name="files", command=(
        sys.executable, str(SDK_UPSTREAM), "stdio", "starting files", f"registry {SECRET_URL}"))
    connections = UpstreamConnections({defn.name: defn})

    async def call() -> None:
        with anyio.fail_after(60):
            try:
                reply = await connections.call("files", None, "echo", {"text": "hi"})
                assert reply.result is not None and not reply.result.get("isError")
            finally:
                await connections.aclose()

    with caplog.at_level(logging.INFO, logger="toolkeeper.upstreams.stderr"):
        anyio.run(call)
    lines = [r.getMessage() for r in caplog.records if r.name == "toolkeeper.upstreams.stderr"]
    assert lines[0] == "upstream files stderr: starting files", lines
    assert lines[1].startswith("upstream files stderr: registry postgresql://"), lines
    assert not [line for line in lines if "pg-s3cret" in line]


def test_the_transport_hands_each_stderr_line_to_its_sink_cut_at_the_bound() -> None:
    script = ("import sys; sys.stderr.write('one\\n' + 'x' * 10000 + '\\n\\n' + 'three'); "
              "sys.stderr.flush(); sys.stdin.read()")
    heard: list[str] = []

    async def run() -> None:
        with anyio.fail_after(30):
            transport = await StdioTransport.start([sys.executable, "-c", script], env=None,
                                                   max_line_bytes=1 << 20, close_s=5.0,
                                                   stderr=heard.append)
            await transport.aclose()

    anyio.run(run)
    assert heard == ["one", "x" * STDERR_LINE_MAX, "three"]
