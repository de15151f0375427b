"""The interop driver for every Python MCP client: runs the matrix's ops in one client session
and prints one JSON object on its last stdout line (the format is in tests/interop/interop_kit.py
and /work's interop design).

It runs inside a client's own virtualenv (``python -I``) and adapts to what that venv holds:
``fastmcp`` (its ``Client``), ``mcp`` 2.x (``mcp.Client(server, mode=...)``) or ``mcp`` 1.x
(``ClientSession`` over ``streamable_http_client`` / ``stdio_client``, legacy only). It imports
nothing of toolkeeper; ``OPS`` and ``TOOL_CALLS`` come from interop_kit.py, loaded by path.

    python -I py_driver.py --transport http --url URL --mode MODE [--ops a,b,c]
    python -I py_driver.py --transport stdio --command '["python", "-m", ...]' --mode MODE

Never hangs: each op is bounded (10 s), the session by the run's deadline (55 s), and a
watchdog thread prints what is known and exits at 60 s. Exit status 0 whenever it printed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import sys
import threading
import time
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

OP_TIMEOUT_S = 10.0
RUN_DEADLINE_S = 55.0
WATCHDOG_S = 60.0


def _load_kit() -> Any:
    path = Path(__file__).resolve().parent.parent / "interop_kit.py"
    spec = importlib.util.spec_from_file_location("interop_kit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["interop_kit"] = module  # dataclasses resolves annotations through sys.modules
    spec.loader.exec_module(module)
    return module


KIT = _load_kit()


def _detail(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


class _Adapter:
    """One library's way of connecting and of running each kind of op."""

    library = ""
    error_types: tuple[type[BaseException], ...] = ()

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.era: str | None = None

    def session(self) -> AbstractAsyncContextManager[Any]:
        raise NotImplementedError

    async def list_tools(self, client: Any) -> list[str]:
        raise NotImplementedError

    async def call(self, client: Any, op: str, tool: str, arguments: dict[str, Any],
                   meta: dict[str, Any] | None) -> Any:
        raise NotImplementedError

    async def ping(self, client: Any) -> None:
        raise NotImplementedError

    def error_fields(self, exc: BaseException) -> tuple[int | None, Any]:
        error = getattr(exc, "error", None)
        return getattr(error, "code", None), getattr(error, "data", None)

    def stdio_argv(self) -> tuple[str, list[str]]:
        argv = json.loads(self.args.command)
        return argv[0], argv[1:]


def _result_fields(is_error: Any, structured: Any) -> dict[str, Any]:
    return {"isError": bool(is_error), "structured": structured}


class _McpV2(_Adapter):
    """mcp 2.x: ``Client(server, mode=...)``; ``meta=`` on call_tool; ``MCPError``."""

    library = "mcp"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        from mcp.shared.exceptions import MCPError

        self.error_types = (MCPError,)

    @asynccontextmanager
    async def session(self) -> Any:
        from mcp import Client, StdioServerParameters

        server: Any = self.args.url
        if self.args.transport == "stdio":
            command, rest = self.stdio_argv()
            server = StdioServerParameters(command=command, args=rest)
        async with Client(server, mode=self.args.mode) as client:
            self.era = client.protocol_version
            yield client

    async def list_tools(self, client: Any) -> list[str]:
        return [tool.name for tool in (await client.list_tools()).tools]

    async def call(self, client: Any, op: str, tool: str, arguments: dict[str, Any],
                   meta: dict[str, Any] | None) -> Any:
        result = await client.call_tool(tool, arguments, meta=meta)
        return _result_fields(result.is_error, result.structured_content)

    async def ping(self, client: Any) -> None:
        await client.send_ping()


class _McpV1(_Adapter):
    """mcp 1.x: ``ClientSession`` with the initialize handshake (it speaks 2025-11-25 only)."""

    library = "mcp"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        from mcp.shared.exceptions import McpError

        self.error_types = (McpError,)

    @asynccontextmanager
    async def session(self) -> Any:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client import streamable_http

        async with AsyncExitStack() as stack:
            if self.args.transport == "stdio":
                from mcp.client.stdio import stdio_client

                command, rest = self.stdio_argv()
                streams = await stack.enter_async_context(
                    stdio_client(StdioServerParameters(command=command, args=rest)))
            else:  # streamable_http_client from 1.24; streamablehttp_client before (and deprecated after)
                connect = getattr(streamable_http, "streamable_http_client", None) \
                    or streamable_http.streamablehttp_client
                streams = await stack.enter_async_context(connect(self.args.url))
            session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
            self.era = (await session.initialize()).protocolVersion
            yield session

    async def list_tools(self, client: Any) -> list[str]:
        return [tool.name for tool in (await client.list_tools()).tools]

    async def call(self, client: Any, op: str, tool: str, arguments: dict[str, Any],
                   meta: dict[str, Any] | None) -> Any:
        # call_tool(meta=) exists in the pinned 1.x (1.30.0); an older pin without it would
        # have to send CallToolRequestParams(_meta=...) through session.send_request.
        result = await client.call_tool(tool, arguments, meta=meta)
        return _result_fields(result.isError, result.structuredContent)

    async def ping(self, client: Any) -> None:
        await client.send_ping()


class _FastMcp(_Adapter):
    """FastMCP's ``Client(transport, mode=...)``; pins through ``call_tool(version=)``."""

    library = "fastmcp"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        from mcp.shared.exceptions import MCPError

        self.error_types = (MCPError,)

    @asynccontextmanager
    async def session(self) -> Any:
        from fastmcp import Client
        from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

        transport: Any
        if self.args.transport == "stdio":
            command, rest = self.stdio_argv()
            transport = StdioTransport(command=command, args=rest, keep_alive=False)
        else:
            transport = StreamableHttpTransport(self.args.url)
        async with Client(transport, mode=self.args.mode, timeout=OP_TIMEOUT_S) as client:
            self.era = client.protocol_version
            yield client

    async def list_tools(self, client: Any) -> list[str]:
        return [tool.name for tool in await client.list_tools()]

    async def call(self, client: Any, op: str, tool: str, arguments: dict[str, Any],
                   meta: dict[str, Any] | None) -> Any:
        if op == "call_pinned" and meta is not None:  # FastMCP's own pin: _meta.fastmcp.version
            result = await client.call_tool(tool, arguments, version=meta["schemaVersion"],
                                            raise_on_error=False)
        else:
            result = await client.call_tool(tool, arguments, meta=meta, raise_on_error=False)
        return _result_fields(result.is_error, result.structured_content)

    async def ping(self, client: Any) -> None:
        await client.ping()


def _pick_adapter(args: argparse.Namespace) -> _Adapter:
    if importlib.util.find_spec("fastmcp") is not None:
        return _FastMcp(args)
    major = int(importlib.metadata.version("mcp").split(".")[0])
    return _McpV2(args) if major >= 2 else _McpV1(args)


def _version(adapter: _Adapter) -> str:
    return f"{adapter.library} {importlib.metadata.version(adapter.library)}"


def _op_runner(adapter: _Adapter, op: str) -> Callable[[Any], Awaitable[dict[str, Any]]]:
    async def list_op(client: Any) -> dict[str, Any]:
        return {"tools": sorted(await adapter.list_tools(client))}

    async def ping_op(client: Any) -> dict[str, Any]:
        await adapter.ping(client)
        return {}

    async def call_op(client: Any) -> dict[str, Any]:
        call = KIT.TOOL_CALLS[op]
        return dict(await adapter.call(client, op, call["tool"], dict(call["arguments"]), call["meta"]))

    return {"list": list_op, "ping": ping_op}.get(op, call_op)


def _record(adapter: _Adapter, exc: BaseException) -> dict[str, Any]:
    for leaf in _leaves(exc):
        if isinstance(leaf, adapter.error_types):
            code, data = adapter.error_fields(leaf)
            return {"outcome": "error", "code": code, "data": data, "detail": _detail(leaf)}
    leaf = _leaves(exc)[0]
    return {"outcome": "failure", "detail": _detail(leaf)}


class _Run:
    """The run's results, printed once: by main, or by the watchdog if main overruns."""

    def __init__(self, ops: list[str]) -> None:
        self.client = "unknown"
        self.era: str | None = None
        self.ops = ops
        self.results: dict[str, dict[str, Any]] = {}
        self._printed = threading.Lock()

    def finish(self, missing: str) -> None:
        if not self._printed.acquire(blocking=False):
            return
        empty = {"code": None, "data": None, "isError": None, "structured": None, "tools": None}
        ops = {op: {**empty, **self.results.get(op, {"outcome": "failure", "detail": missing})}
               for op in self.ops}
        line = json.dumps({"client": self.client, "era": self.era, "ops": ops}, default=str)
        sys.stdout.write("\n" + line + "\n")
        sys.stdout.flush()


async def _exercise(adapter: _Adapter, run: _Run) -> None:
    import anyio

    with anyio.move_on_after(RUN_DEADLINE_S):
        try:
            async with adapter.session() as client:
                run.era = adapter.era
                for op in run.ops:
                    try:
                        with anyio.fail_after(OP_TIMEOUT_S):
                            value = await _op_runner(adapter, op)(client)
                        run.results[op] = {"outcome": "result", "detail": "", **value}
                    except Exception as exc:
                        run.results[op] = _record(adapter, exc)
        except Exception as exc:  # connecting failed, or the session's teardown raised
            connect = _record(adapter, exc)
            for op in run.ops:
                run.results.setdefault(op, {**connect, "outcome": "failure"})


def _watchdog(run: _Run) -> None:
    run.finish(f"TimeoutError: the driver's {WATCHDOG_S:.0f} s bound passed")
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=("http", "stdio"), required=True)
    parser.add_argument("--url")
    parser.add_argument("--command", help="the server's argv as a JSON list (stdio)")
    parser.add_argument("--mode", required=True)
    parser.add_argument("--ops", default=",".join(KIT.OPS))
    args = parser.parse_args(argv)
    ops = [op for op in KIT.OPS if op in args.ops.split(",")]
    run = _Run(ops)
    timer = threading.Timer(WATCHDOG_S, _watchdog, (run,))
    timer.daemon = True
    timer.start()
    warnings.simplefilter("ignore")  # deprecations of the APIs under test are not results
    started = time.monotonic()
    try:
        adapter = _pick_adapter(args)
        run.client = _version(adapter)
        import anyio

        anyio.run(_exercise, adapter, run)
    except Exception as exc:
        print(f"driver: {_detail(exc)}", file=sys.stderr)
        run.finish(f"driver: {_detail(exc)}")
        return 0
    print(f"driver: {len(ops)} ops in {time.monotonic() - started:.1f}s", file=sys.stderr)
    run.finish("not run: the session ended or the run's deadline passed first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
