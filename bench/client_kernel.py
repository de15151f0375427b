"""The client kernel's own cost per call against a bare official-SDK client call (issue 15 point 7).

Loops, one ``tools/call`` of ``lookup`` (SPEC 4's ``payments.lookup`` shape: a ``reference``
string with a pattern, an optional boolean) per iteration, valid arguments:

* ``sdk``: the official Python SDK's ``mcp.client.Client`` calling an ``MCPServer`` in the same
  process (its in-memory transport, so no sockets or scheduler noise): the whole call, client
  and server;
* ``kernel``: :class:`toolkeeper.client.kernel.Kernel` over a session that answers at once
  with a fixed result: exactly what the kernel adds to a call (cache lookup, validation of the
  arguments against the listed schema, the ``schemaVersion`` pin, the retry wrapper and the
  outcome value), nothing of any transport.

The figure is ``kernel / sdk``: the share the kernel adds to a call made through the official
SDK client (target: at most 0.10).

Counted by callgrind (default): each loop runs under ``valgrind --tool=callgrind`` twice
(``--small`` and ``--large`` iterations, default 300 and 900, ``PYTHONHASHSEED=0``); the
difference of the totals over the difference of the counts is one iteration, start-up and
warm-up cancelled. ``--wall`` times the loops instead (best of five rounds, interleaved).
Run: ``python bench/client_kernel.py [--wall]`` (callgrind needs the Debian package
``valgrind``); ``--src DIR`` imports toolkeeper from another checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field  # the SDK tool's annotations are resolved in this module's globals

HERE = Path(__file__).resolve().parent
LOOPS = ("sdk", "kernel")
ARGUMENTS = {"reference": "PMT-771", "include_legs": True}
_COLLECTED = re.compile(rb"Collected\s*:\s*(\d+)")


def _server() -> Any:
    warnings.filterwarnings("ignore")
    import mcp_types as types
    from mcp.server import MCPServer

    server = MCPServer("bench-kernel", version="0.0.1")

    @server.tool(annotations=types.ToolAnnotations(readOnlyHint=True))
    def lookup(reference: Annotated[str, Field(pattern=r"^PMT-\d{3,}$")],
               include_legs: bool = False) -> str:
        """Look up a payment."""
        return f"{reference}: HELD"

    return server


async def _sdk_loop(calls: int) -> None:
    from mcp.client import Client

    async with Client(_server()) as client:
        await client.list_tools()
        for _ in range(calls + 1):  # one warm-up call
            await client.call_tool("lookup", ARGUMENTS)


class _Instant:
    """A session that lists the SDK server's descriptor (with a published schemaVersion, so
    the pin is exercised) and answers every call at once."""

    def __init__(self, descriptor: dict[str, Any]) -> None:
        from toolkeeper.protocol.versions import Era

        self.era = Era.MODERN
        self.version = "2026-07-28"
        self._listing = type("L", (), {"tools": [descriptor], "ttl_ms": 60_000,
                                        "cache_scope": "private"})()
        self._reply = type("R", (), {"result": {"content": [{"type": "text", "text": "ok"}],
                                                "isError": False}, "error": None})()

    async def list_tools(self) -> Any:
        return self._listing

    async def call_tool(self, name: str, arguments: Any, *, meta: Any = None,
                        request_id: Any = None) -> Any:
        return self._reply

    def tools_changed(self) -> Any:
        raise NotImplementedError


async def _descriptor() -> dict[str, Any]:
    from mcp.client import Client

    async with Client(_server()) as client:
        listed = await client.list_tools()
    descriptor: dict[str, Any] = listed.tools[0].model_dump(by_alias=True, exclude_none=True)
    descriptor["_meta"] = {"schemaVersion": "1.0.0"}
    return descriptor


async def _kernel_loop(calls: int) -> None:
    from toolkeeper.client.kernel import Kernel

    kernel = Kernel(_Instant(await _descriptor()))
    await kernel.tools()
    for _ in range(calls + 1):  # one warm-up call
        outcome = await kernel.call("lookup", ARGUMENTS)
    assert outcome.ok and not outcome.repairs


_RUN = {"sdk": _sdk_loop, "kernel": _kernel_loop}


def _count(loop: str, calls: int, src: str | None) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        if src:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             sys.executable, __file__, "--child", loop, str(calls)],
            capture_output=True, env=env, timeout=3600, check=True)
        found = _COLLECTED.search(done.stderr)
        if found is None:
            raise SystemExit(f"no instruction count from callgrind:\n{done.stderr[-2000:]!r}")
        return int(found.group(1))


def _callgrind(small: int, large: int, src: str | None) -> dict[str, float]:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian package valgrind); try --wall")
    per_call: dict[str, float] = {}
    for loop in LOOPS:
        low, high = _count(loop, small, src), _count(loop, large, src)
        per_call[loop] = (high - low) / (large - small)
    return per_call


def _wall(calls: int, rounds: int = 5) -> dict[str, float]:
    best = {loop: float("inf") for loop in LOOPS}
    for _ in range(rounds):
        for loop in LOOPS:
            start = time.perf_counter()
            asyncio.run(_RUN[loop](calls))
            best[loop] = min(best[loop], (time.perf_counter() - start) / (calls + 1))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("LOOP", "CALLS"), help=argparse.SUPPRESS)
    parser.add_argument("--wall", action="store_true", help="time the loops instead")
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--large", type=int, default=900)
    parser.add_argument("--src", default=None, help="import toolkeeper from this directory")
    args = parser.parse_args()
    if args.child:
        asyncio.run(_RUN[args.child[0]](int(args.child[1])))
        return
    if args.wall:
        per_call, unit = _wall(args.large), "us per call"
        per_call = {k: v * 1e6 for k, v in per_call.items()}
    else:
        per_call, unit = _callgrind(args.small, args.large, args.src), "instructions per call"
    for loop in LOOPS:
        print(f"{loop:8s} {per_call[loop]:>14,.1f} {unit}")
    print(f"kernel / sdk = {per_call['kernel'] / per_call['sdk']:.3f} (target <= 0.10)")


if __name__ == "__main__":
    main()
