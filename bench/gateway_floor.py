"""The floor of part (a)'s work: the same request answered with the same bytes by one flat
function, with toolkeeper's own components but none of its layering and none of its checks
beyond those this one request's answer needs.

It decodes the body with the same msgspec decoder, indexes the header pairs, compares the
three routing headers with the body, validates the arguments with the same compiled (closed)
schema, writes the same call record (with the SHA-256 digest of the canonical arguments) to an
in-memory call log, runs the same demo handler with a real ``ToolContext``, stamps the result
as toolkeeper does (``resultType``, ``schemaVersion``, ``serverInfo``) and encodes it with the
same encoder. The tool's route is looked up in a plain dict built once: no principal, no
registry freshness check, no envelope ladder, no exception boundary, no Pending. Whatever a
Python gateway must do for this call costs at least this much in CPython, so the ratio of
toolkeeper's time to the floor's is the price of its structure and its checks.

:func:`bench_floor` checks that the floor's reply is byte-for-byte toolkeeper's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from toolkeeper.contracts.validate import compile_schema
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    Call,
    Era,
    TransportFacts,
    decode_message,
    encode_message,
)
from toolkeeper.protocol.meta import SERVER_INFO_KEY
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import ToolContext, ToolHandlers, ToolResult
from toolkeeper.server.calllog import CallRecord, InMemoryCallLog, arguments_digest
from toolkeeper.server.gateway import default_identity
from toolkeeper.server.routes import closed_schema

__all__ = ["CountingCallLog", "Floor", "bench_floor"]

Emit = Callable[[dict[str, Any]], Coroutine[Any, Any, None]]


class Floor:
    """One flat dispatch for valid modern ``tools/call`` requests to the given registry's
    latest tools (None for anything else)."""

    def __init__(self, registry: Registry, handlers: ToolHandlers, principal: Principal,
                 log: InMemoryCallLog) -> None:
        self.log = log
        self._principal = principal
        self._server_info = default_identity().to_wire()
        self._tools: dict[str, tuple[Any, ...]] = {}
        for name in registry.names():
            spec = registry.latest(name)
            binding = None if spec is None else handlers.lookup(name, spec.version)
            if spec is not None and binding is not None:
                self._tools[name] = (spec, compile_schema(closed_schema(spec.input_schema)),
                                     binding.function, str(spec.version))

    async def dispatch(self, raw: bytes, pairs: Sequence[tuple[bytes, bytes]], emit: Emit
                       ) -> bytes | None:
        message = decode_message(raw)
        index = dict(pairs)
        params = message["params"]
        meta = params["_meta"]
        version = meta[PROTOCOL_VERSION_KEY]
        name = params["name"]
        if (index.get(b"mcp-protocol-version", b"").decode() != version
                or index.get(b"mcp-method") != b"tools/call"
                or index.get(b"mcp-name", b"").decode() != name):
            return None
        spec, validator, function, spec_version = self._tools[name]
        arguments = params["arguments"]
        if not validator.is_valid_json(arguments):  # strictly decoded JSON, as the gateway
            return None
        call = Call(message["id"], "tools/call", params, Era.MODERN, version,
                    meta[CLIENT_CAPABILITIES_KEY], None, None, None,
                    TransportFacts("http", None), self._principal)
        handle = self.log.dispatched(CallRecord(name, spec_version, self._principal.tenant,
                                                arguments_digest(arguments), "modern"))
        started = time.perf_counter()
        result: ToolResult = await function(arguments, ToolContext(call, spec, self._principal,
                                                                  emit))
        self.log.completed(handle, "ok", (time.perf_counter() - started) * 1000.0)
        out = result.to_wire()
        out["resultType"] = "complete"
        out["_meta"] = {"schemaVersion": spec_version, SERVER_INFO_KEY: self._server_info.copy()}
        return encode_message({"jsonrpc": "2.0", "id": message["id"], "result": out})


async def _loop(floor: Floor, body: bytes, pairs: Sequence[tuple[bytes, bytes]], calls: int
                ) -> tuple[float, bytes | None]:
    async def emit(message: dict[str, Any]) -> None:
        return None

    reply: bytes | None = None
    cpu = time.process_time()
    for _ in range(calls):
        reply = await floor.dispatch(body, pairs, emit)
    return time.process_time() - cpu, reply


class CountingCallLog(InMemoryCallLog):
    """The default in-memory call log, also counting calls completed ``ok`` (a check that
    every measured call went through the log and the handler; it slightly slows the loop)."""

    def __init__(self) -> None:
        super().__init__()
        self.ok = 0

    def completed(self, handle: int, outcome: str, latency_ms: float) -> None:
        super().completed(handle, outcome, latency_ms)
        self.ok += outcome == "ok"


def bench_floor(floor: Floor, body: bytes, pairs: Sequence[tuple[bytes, bytes]],
                expected: bytes, calls: int) -> float:
    """Calls per CPU second of the floor (one run of ``calls``), after checking that its reply
    is ``expected`` (toolkeeper's reply body); every call must have been logged ``ok``."""
    _, reply = asyncio.run(_loop(floor, body, pairs, 1))
    if reply != expected:
        raise AssertionError(f"the floor's reply differs from toolkeeper's:\n{reply!r}\n"
                             f"{expected!r}")
    assert isinstance(floor.log, CountingCallLog)
    before = floor.log.ok
    cpu, _ = asyncio.run(_loop(floor, body, pairs, calls))
    if floor.log.ok - before != calls:
        raise AssertionError(f"the floor logged {floor.log.ok - before} calls of {calls}")
    return calls / cpu if cpu > 0 else float("inf")
