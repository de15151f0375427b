"""stdio: newline-delimited JSON-RPC, both eras (the first request decides), concurrent
requests, cancellation, and bounded lines (in-process, over in-memory streams)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from typing import Any

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import Gateway, ToolHandlers, build_gateway
from toolkeeper.transports import StdioServer, serve_stdio

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def demo_gateway(handlers: ToolHandlers | None = None) -> Gateway:
    registry = Registry.open("memory:")
    install_demo(registry)
    all_handlers = demo_handlers()
    if handlers is not None:
        registry.publish(spec_from_mapping({
            "name": "test.block", "version": "1.0.0", "title": "Block",
            "description": "Blocks until cancelled", "dataClassification": "public",
            "sideEffect": "read", "inputSchema": {"type": "object", "properties": {}}}))
        all_handlers.merge(handlers)
    return build_gateway(registry, all_handlers)


def run_lines(lines: list[bytes], *, max_line_bytes: int = 4 * 1024 * 1024
              ) -> list[dict[str, Any]]:
    stdout = io.BytesIO()
    asyncio.run(asyncio.wait_for(serve_stdio(
        demo_gateway().kernel, stdin=io.BytesIO(b"".join(lines)), stdout=stdout,
        max_line_bytes=max_line_bytes), 20))
    return [json.loads(x) for x in stdout.getvalue().splitlines()]


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_a_legacy_session_over_stdio_answers_requests_and_never_notifications() -> None:
    out = run_lines([line(INIT), line(INITIALIZED),
                     line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
                     line({"jsonrpc": "2.0", "method": "notifications/whatever"}),
                     line({"jsonrpc": "2.0", "id": 3, "method": "ping"})])
    assert [m.get("id") for m in out] == [1, 2, 3]
    assert out[0]["result"]["protocolVersion"] == "2025-11-25"
    assert "resultType" not in out[1]["result"]


def test_progress_lines_precede_the_response_of_their_request() -> None:
    out = run_lines([line(INIT), line(INITIALIZED), line({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "payments.lookup", "arguments": {"reference": "PMT-771"},
            "_meta": {"progressToken": "p"}}})])
    assert [m.get("method", m.get("id")) for m in out] == [
        1, "notifications/progress", "notifications/progress", 2]


def test_a_modern_stdio_connection_refuses_a_later_initialize() -> None:
    out = run_lines([line({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                           "params": {"_meta": ENVELOPE}}), line({**INIT, "id": 2})])
    assert out[0]["result"]["supportedVersions"][0] == "2026-07-28"
    assert out[1]["error"]["code"] == -32022 and out[1]["id"] == 2


def test_junk_lines_get_parse_errors_and_blank_lines_are_ignored() -> None:
    out = run_lines([b"\n", b"{oops\n", b"   \n", b"\xff\xfe\n"])
    assert out == [{"jsonrpc": "2.0", "id": None, "error": {"code": -32700,
                                                            "message": "Parse error"}}] * 2


def test_an_oversized_line_is_refused_and_the_stream_goes_on() -> None:
    big = line({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"pad": "x" * 5000}})
    out = run_lines([big, line(INIT)], max_line_bytes=1000)
    assert out[0] == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "message exceeds the size limit"}}
    assert out[1]["id"] == 1


def test_requests_run_concurrently_and_a_cancelled_one_gets_no_response() -> None:
    started = asyncio.Event()

    async def block(arguments: dict[str, Any]) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    handlers = ToolHandlers()
    handlers.bind("test.block", block)
    gateway = demo_gateway(handlers)
    written: list[dict[str, Any]] = []

    async def scenario() -> None:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def write(data: bytes) -> None:
            written.append(json.loads(data))

        server = asyncio.ensure_future(StdioServer(gateway.kernel, queue.get, write).run())
        for message in (INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                            "params": {"name": "test.block", "arguments": {}}}):
            await queue.put(line(message))
        await asyncio.wait_for(started.wait(), 5)
        await queue.put(line({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        await queue.put(line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": 2}}))
        await queue.put(None)
        await asyncio.wait_for(server, 5)

    asyncio.run(scenario())
    assert [m["id"] for m in written] == [1, 3]
    assert gateway.call_log.records[-1].outcome == "cancelled"  # type: ignore[attr-defined]


def test_the_line_source_splits_and_bounds_lines_alike_from_a_descriptor_or_memory() -> None:
    import os

    from toolkeeper.transports.stdio import _TOO_LONG, _line_source

    data = (b"ok\n" + b"x" * 8 + b"\n" + b"y" * 9 + b"\n" + b"z" * 40 + b"\nafter\n"
            + b"last")
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            by_fd = _line_source(pipe, 8)
            got = [by_fd() for _ in range(7)]
    finally:
        with contextlib.suppress(OSError):
            os.close(read_fd)
    in_memory = _line_source(io.BytesIO(data), 8)
    expected = [in_memory() for _ in range(7)]
    assert got == expected == [b"ok\n", b"x" * 8 + b"\n", _TOO_LONG, _TOO_LONG, b"after\n",
                               b"last", None]
