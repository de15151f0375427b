"""The cost of a forwarded call (issue 22, acceptance 8): what the gateway's CPU spends on a
``tools/call`` it forwards to an upstream MCP server, beside what it must spend at least.

One upstream, the official ``mcp`` SDK's server (``bench/gateway_servers.py sdk``: stateless,
JSON responses, the demo's ``payments.lookup``), serves three front servers, each its own
process under the same uvicorn settings, loaded in interleaved rounds by ``wrk`` (1 thread, 16
connections, every response checked for the expected result):

* ``native``: toolkeeper running the demo's handler itself (no upstream);
* ``forwarded``: toolkeeper serving the same contract by forwarding each call to the upstream
  (``gateway_servers.py forwarded``);
* ``fastmcp-proxy``: FastMCP's ``create_proxy`` in front of the same upstream.

and one client: ``client``, a process running toolkeeper's own MCP client against the upstream
in the session the forwarding opens (``upstreams.connections.open_session``: the same hop
transport), 16 calls in flight, counting its own CPU per call. The
forwarded call's floor is ``native`` (the gateway's own work) plus ``client`` (one HTTP client
round trip to the upstream); the front server's CPU per request is its process's CPU over the
run divided by the requests (the upstream's CPU is its own process's and is not counted).
Latency added is the forwarded row's p50 / p99 less the native row's.

Targets: ``forwarded`` <= ``native`` + ``client``; ``forwarded`` <= ``fastmcp-proxy`` / 3.

Run: ``python bench/forwarding.py`` (``--quick`` for a smoke run). FastMCP runs from a virtual
environment this script makes on first use under ``~/.cache/toolkeeper-bench`` (``fastmcp``
4.2.3, ``mcp`` 2.3.0 and ``uvicorn[standard]`` from PyPI), or the interpreter given by
``--fastmcp-python``. Needs ``wrk`` (Debian package).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from gateway import EXPECTED, find_wrk, process_cpu_seconds, run_wrk, start_server, wrk_script

HERE = Path(__file__).resolve().parent
FASTMCP_PINS = ("fastmcp==4.2.3", "mcp==2.3.0", "uvicorn[standard]>=0.30")
FRONTS = ("native", "forwarded", "fastmcp-proxy")
_KIND = {"native": "toolkeeper", "forwarded": "forwarded", "fastmcp-proxy": "fastmcp-proxy"}
IN_FLIGHT = 16


def fastmcp_python(given: str | None) -> str:
    """The interpreter FastMCP runs with: ``given``, or a cached virtual environment."""
    if given:
        return given
    venv = Path.home() / ".cache" / "toolkeeper-bench" / "fastmcp-4.2.3"
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"  making {venv} ({', '.join(FASTMCP_PINS)})", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *FASTMCP_PINS], check=True, timeout=900)
    return str(python)


async def _client_calls(url: str, calls: int) -> float:
    from toolkeeper.upstreams import UpstreamDefinition
    from toolkeeper.upstreams.connections import open_session

    # the session the forwarding opens: the same client, the same hop transport
    session = await open_session(UpstreamDefinition(name="sdk", url=url, era="modern"))
    try:
        reply = await session.call_tool("payments.lookup", {"reference": "PMT-771"})
        assert reply.result is not None and not reply.result.get("isError"), reply
        left = calls

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                answer = await session.call_tool("payments.lookup", {"reference": "PMT-771"})
                if answer.result is None or answer.result.get("isError"):
                    raise AssertionError(f"the upstream did not answer: {answer}")

        start = time.process_time()
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        return (time.process_time() - start) / calls * 1e6
    finally:
        await session.aclose()


def client_loop(url: str, calls: int) -> None:
    """``--client-loop``: print this process's CPU microseconds per call of ``calls``."""
    try:
        import uvloop
        cpu_us = uvloop.run(_client_calls(url, calls))
    except ImportError:
        cpu_us = asyncio.run(_client_calls(url, calls))
    print(f"CPU_US {cpu_us:.3f}", flush=True)


def _client_cpu(url: str, calls: int) -> float:
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--client-loop", url,
                           str(calls)], capture_output=True, text=True, timeout=600, check=True)
    for line in done.stdout.splitlines():
        if line.startswith("CPU_US "):
            return float(line.split()[1])
    raise RuntimeError(f"the client loop printed no figure: {done.stdout}\n{done.stderr}")


def bench(seconds: float, warmup: float, rounds: int, calls: int, python: str
          ) -> dict[str, Any]:
    wrk = find_wrk()
    cpu: dict[str, list[float]] = {k: [] for k in (*FRONTS, "client")}
    p50: dict[str, list[float]] = {k: [] for k in FRONTS}
    p99: dict[str, list[float]] = {k: [] for k in FRONTS}
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        where = Path(folder)
        upstream = stack.enter_context(start_server("sdk", where))
        env = {"BENCH_UPSTREAM_URL": upstream.url}
        servers = {
            "native": stack.enter_context(start_server("toolkeeper", where)),
            "forwarded": stack.enter_context(start_server("forwarded", where, env=env)),
            "fastmcp-proxy": stack.enter_context(start_server("fastmcp-proxy", where,
                                                              python=python, env=env)),
        }
        script = where / "call.lua"
        script.write_text(wrk_script(EXPECTED["toolkeeper"]))
        for front in FRONTS:
            # FastMCP's proxy opens its upstream session on the first call (2 s here).
            warm = run_wrk(wrk, servers[front], script,
                           max(warmup, 5.0) if front == "fastmcp-proxy" else warmup)
            if warm["failed"] or not warm["requests"]:
                raise AssertionError(f"{front}: warm-up had failures: {warm}")
        for i in range(rounds):
            for front in FRONTS:
                before = process_cpu_seconds(servers[front].pid)
                result = run_wrk(wrk, servers[front], script, seconds)
                after = process_cpu_seconds(servers[front].pid)
                if result["failed"] or before is None or after is None:
                    raise AssertionError(f"{front}: {result['failed']} failed responses")
                cpu[front].append((after - before) / result["requests"] * 1e6)
                p50[front].append(result["p50_us"] / 1000)
                p99[front].append(result["p99_us"] / 1000)
                print(f"  round {i + 1} {front:<14} CPU {cpu[front][-1]:7.1f} us/call  "
                      f"{result['rps']:>8,.0f} req/s  p50 {p50[front][-1]:.2f} ms  "
                      f"p99 {p99[front][-1]:.2f} ms  ({result['requests']} requests, 0 failed)",
                      flush=True)
            cpu["client"].append(_client_cpu(upstream.url, calls))
            print(f"  round {i + 1} {'client':<14} CPU {cpu['client'][-1]:7.1f} us/call "
                  f"({calls} calls, {IN_FLIGHT} in flight)", flush=True)
    medians = {k: statistics.median(v) for k, v in cpu.items()}
    return {"cpu": medians, "cpu_rounds": cpu,
            "p50": {k: statistics.median(v) for k, v in p50.items()},
            "p99": {k: statistics.median(v) for k, v in p99.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--fastmcp-python", help="an interpreter with fastmcp and uvicorn")
    parser.add_argument("--client-loop", nargs=2, metavar=("URL", "CALLS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client_loop:
        client_loop(args.client_loop[0], int(args.client_loop[1]))
        return 0
    rounds = args.rounds or (1 if args.quick else 5)
    seconds = args.seconds or (1.0 if args.quick else 5.0)
    calls = 500 if args.quick else 4000
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f} at start; {rounds} rounds of {seconds:g} s", flush=True)
    out = bench(seconds, 1.0 if args.quick else 2.0, rounds, calls,
                fastmcp_python(args.fastmcp_python))
    cpu, p50, p99 = out["cpu"], out["p50"], out["p99"]
    floor = cpu["native"] + cpu["client"]
    print("row             CPU us/call (median)   p50 ms   p99 ms")
    for front in FRONTS:
        print(f"{front:<15} {cpu[front]:>10.1f}             {p50[front]:>6.2f}   "
              f"{p99[front]:>6.2f}")
    print(f"{'client':<15} {cpu['client']:>10.1f}")
    print(f"forwarded - native = {cpu['forwarded'] - cpu['native']:.1f} us the forwarding adds; "
          f"native + client = {floor:.1f} us: forwarded / (native + client) = "
          f"{cpu['forwarded'] / floor:.2f} (target <= 1: "
          f"{'met' if cpu['forwarded'] <= floor else 'NOT met'})")
    print(f"fastmcp-proxy / forwarded = {cpu['fastmcp-proxy'] / cpu['forwarded']:.2f}x "
          f"(target >= 3: {'met' if cpu['fastmcp-proxy'] >= 3 * cpu['forwarded'] else 'NOT met'})")
    print(f"latency added by forwarding: p50 {p50['forwarded'] - p50['native']:+.2f} ms, p99 "
          f"{p99['forwarded'] - p99['native']:+.2f} ms; FastMCP's proxy p50 "
          f"{p50['fastmcp-proxy'] - p50['native']:+.2f} ms, p99 "
          f"{p99['fastmcp-proxy'] - p99['native']:+.2f} ms (each against native)")
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
