"""Gateway performance (issue 4, acceptance point 5): one valid modern ``tools/call`` of the demo
estate's ``payments.lookup``, measured two ways.

(a) In-process dispatch through the core: the demo gateway over an in-memory registry, one
    pre-encoded request (body and header pairs as bytes), and a loop of
    ``kernel.handle_asgi(body, pairs)`` (what the HTTP transport calls) with the
    Pending completed (a no-op emit) and the reply encoded to bytes: decode, era selection,
    envelope ladder, header checks, principal, schema-version gate, argument validation, call
    log, the demo handler, result stamping and encoding. Every reply's status is checked, the
    first and last body decoded and compared with the expected result, and the call log must
    have grown by exactly the number of calls. Target: >= 100,000 calls/s.

(b) Over HTTP, modern era, 16 concurrent keep-alive clients: toolkeeper's ASGI app (JSON
    response mode), the official ``mcp`` SDK's server (``MCPServer``, stateless, JSON responses,
    one equivalent tool) and a bare ASGI echo (the ceiling of the server stack), each started
    here as a subprocess under uvicorn with identical settings (``bench/gateway_servers.py``) on
    127.0.0.1. The load generator is ``wrk`` (Debian package ``wrk``; checked before use) with
    one thread and 16 connections, a Lua script that posts the same request and counts every
    response that is not 200 with the expected JSON. A fourth server, the floor
    (``bench/gateway_floor.py`` behind a bare ASGI app like the echo), shows what the least
    Python work that gives the same answer costs on the same stack. Rounds are interleaved (echo,
    floor, toolkeeper, SDK per round) so background load spreads over all four; medians are
    reported. Targets: toolkeeper >= 10x the SDK, and the echo within 1.5x of toolkeeper.

Run: ``python bench/gateway.py`` (``--quick`` for a short smoke run, ``--part a`` or
``--part b`` for one half).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway_floor import CountingCallLog, Floor, bench_floor

from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    Pending,
    Reply,
    TransportFacts,
    decode_message,
    encode_message,
)
from toolkeeper.registry import Registry
from toolkeeper.server import build_app

HERE = Path(__file__).resolve().parent
VERSION = "2026-07-28"
TOOL = "payments.lookup"
EXPECTED_TEXT = "PMT-771: HELD, 250000 AED, beneficiary ACME TRADING LLC"
EXPECTED_STRUCTURED = {"amount": 250000, "beneficiary": "ACME TRADING LLC", "currency": "AED",
                       "reference": "PMT-771", "status": "HELD"}
BODY = encode_message({
    "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": TOOL, "arguments": {"reference": "PMT-771"},
        "_meta": {PROTOCOL_VERSION_KEY: VERSION, CLIENT_CAPABILITIES_KEY: {}}}})
HEADERS: tuple[tuple[str, str], ...] = (
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
    ("MCP-Protocol-Version", VERSION),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", TOOL),
)
CLIENTS = 16


# --- (a) in-process --------------------------------------------------------------------------


def asgi_pairs() -> list[tuple[bytes, bytes]]:
    """The request's header pairs as uvicorn hands them over (lowercase names, bytes)."""
    pairs = [(b"host", b"127.0.0.1:8000"), *((n.lower().encode(), v.encode()) for n, v in HEADERS)]
    pairs.append((b"content-length", str(len(BODY)).encode()))
    return pairs


def check_result(reply: Reply) -> None:
    """The reply is the expected successful lookup (raises AssertionError otherwise)."""
    message = decode_message(reply.body)
    result = message.get("result") if isinstance(message, dict) else None
    if (reply.status != 200 or not isinstance(result, dict) or result.get("isError") is not False
            or result.get("structuredContent") != EXPECTED_STRUCTURED
            or result["content"][0]["text"] != EXPECTED_TEXT):
        raise AssertionError(f"unexpected reply {reply.status}: {reply.body[:300]!r}")


async def _dispatch_loop(kernel: Any, calls: int) -> tuple[float, float, int, Reply]:
    """(wall seconds, CPU seconds, non-200 replies, the last reply) for ``calls``
    dispatches."""
    body, pairs = BODY, asgi_pairs()

    async def emit(message: dict[str, Any]) -> None:
        return None

    bad = 0
    last: Reply | None = None
    perf_counter_ns = time.perf_counter_ns
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        outcome = kernel.handle_asgi(body, pairs, None, None, None, perf_counter_ns())
        if isinstance(outcome, Pending):
            outcome = await outcome.complete(emit)
        assert isinstance(outcome, Reply)
        outcome.body  # noqa: B018 - the encode is part of the measured path
        if outcome.status != 200:
            bad += 1
        last = outcome
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert last is not None
    check_result(last)
    return wall, cpu, bad, last


def bench_dispatch(calls: int, repeats: int) -> dict[str, float]:
    """Part (a): calls/s per repeat (wall and CPU time), median reported; each repeat is
    followed by a run of the floor (``bench/gateway_floor.py``) over the same registry and
    handlers, whose reply must be toolkeeper's byte for byte."""
    registry = Registry.open("memory:")
    install_demo(registry)
    log = CountingCallLog()
    handlers = demo_handlers()
    _, gateway = build_app(registry, handlers, call_log=log)
    first = asyncio.run(_dispatch_loop(gateway.kernel, 1))  # warm caches, check the reply
    assert first[2] == 0
    expected = first[3].body
    floor = Floor(registry, handlers, gateway.resolve_principal(TransportFacts("http", None)),
                  CountingCallLog())
    walls: list[float] = []
    cpus: list[float] = []
    floors: list[float] = []
    for i in range(repeats):
        before = log.ok
        wall, cpu, bad, _ = asyncio.run(_dispatch_loop(gateway.kernel, calls))
        if bad or log.ok - before != calls:
            raise AssertionError(f"run {i}: {bad} failed replies, {log.ok - before} calls "
                                 f"logged ok of {calls}")
        walls.append(calls / wall)
        cpus.append(calls / cpu if cpu > 0 else float("inf"))
        floors.append(bench_floor(floor, BODY, asgi_pairs(), expected, calls))
        print(f"  run {i + 1}: {calls / wall:>10,.0f} calls/s wall   "
              f"{cpus[-1]:>10,.0f} calls/s CPU   floor {floors[-1]:>10,.0f} calls/s CPU "
              f"({floors[-1] / cpus[-1]:.2f}x)", flush=True)
    return {"median": statistics.median(walls), "min": min(walls), "max": max(walls),
            "cpu_median": statistics.median(cpus), "floor_median": statistics.median(floors),
            "floor_ratio": statistics.median(f / c for f, c in zip(floors, cpus, strict=True))}


# --- (b) over HTTP ---------------------------------------------------------------------------

WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = %(body)s
%(headers)s
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) responses = 0; bad = 0 end
function response(status, headers, body)
  responses = responses + 1
  if status ~= 200 %(checks)s then bad = bad + 1 end
end
function done(summary, latency, requests)
  local seen, wrong = 0, 0
  for _, t in ipairs(threads) do seen = seen + t:get("responses"); wrong = wrong + t:get("bad") end
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests":%%d,"duration_us":%%d,"responses":%%d,"bad":%%d,"socket_errors":%%d,'
    .. '"p50_us":%%d,"p99_us":%%d}\\n', summary.requests, summary.duration, seen, wrong,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""


def _lua_string(value: str) -> str:
    return json.dumps(value)  # a JSON string of ASCII text is a valid Lua string literal


def wrk_script(expected: tuple[str, ...]) -> str:
    headers = "\n".join(f"wrk.headers[{_lua_string(n)}] = {_lua_string(v)}" for n, v in HEADERS)
    checks = "".join(f" or not string.find(body, {_lua_string(s)}, 1, true)" for s in expected)
    return WRK_SCRIPT % {"body": _lua_string(BODY.decode()), "headers": headers,
                         "checks": checks}


EXPECTED: dict[str, tuple[str, ...]] = {
    "echo": ('"ok":true',),
    "toolkeeper": (EXPECTED_TEXT, '"isError":false', '"status":"HELD"'),
    "floor": (EXPECTED_TEXT, '"isError":false', '"status":"HELD"'),
    "sdk": (EXPECTED_TEXT, '"isError":false', '"status":"HELD"'),
}


@dataclass(frozen=True)
class Server:
    kind: str
    pid: int
    url: str
    token: str | None = None


@contextmanager
def start_server(kind: str, folder: Path, timeout: float = 60.0, *, python: str | None = None,
                 env: dict[str, str] | None = None) -> Iterator[Server]:
    """Start one server process (with ``python``, default this interpreter, and ``env`` over
    this environment), wait (bounded) for its port, stop it by PID at the end. Its stderr goes
    to a file in ``folder`` (a pipe nobody reads could fill and stall it)."""
    errors = folder / f"{kind}.stderr"
    with errors.open("w") as sink:
        process = subprocess.Popen(
            [python or sys.executable, str(HERE / "gateway_servers.py"), kind],
            stdout=subprocess.PIPE, stderr=sink, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                raise TimeoutError(f"{kind} server did not report its port in {timeout}s")
        line = process.stdout.readline().split()
        if len(line) not in (2, 4) or line[0] != "PORT":
            raise RuntimeError(f"{kind} server failed to start: {errors.read_text()[-2000:]}")
        token = line[3] if len(line) == 4 and line[3] != "-" else None
        yield Server(kind, process.pid, f"http://127.0.0.1:{line[1]}/mcp", token)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
        if process.stdout is not None:
            process.stdout.close()


def run_wrk(wrk: str, server: Server, script: Path, seconds: float) -> dict[str, Any]:
    """One wrk run: 1 thread, 16 connections (the 16 clients), ``seconds`` long (wrk takes
    whole seconds)."""
    return _wrk(wrk, server.url, script, seconds)


def _wrk(wrk: str, url: str, script: Path, seconds: float) -> dict[str, Any]:
    """One wrk run: 1 thread, 16 connections (the 16 clients), ``seconds`` long (wrk takes
    whole seconds)."""
    command = [wrk, "-t1", f"-c{CLIENTS}", f"-d{max(1, round(seconds))}s", "--latency", "-s",
               str(script), url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60,
                          check=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT "):])
            result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
            result["failed"] = (result["bad"] + result["socket_errors"]
                                + result["requests"] - result["responses"])
            return result
    raise RuntimeError(f"wrk printed no result:\n{done.stdout}\n{done.stderr}")


def process_cpu_split(pid: int) -> tuple[float, float] | None:
    """User and system CPU seconds of a process so far (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux ``/proc``; None elsewhere)."""
    split = process_cpu_split(pid)
    return None if split is None else split[0] + split[1]


def find_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("part (b) needs the wrk load generator, which is not installed: "
                         "apt-get install -y wrk (Debian package 'wrk')")
    return wrk


RATIOS = (("toolkeeper", "sdk"), ("echo", "toolkeeper"), ("floor", "sdk"), ("echo", "floor"),
          ("floor", "toolkeeper"))
"""The per-round ratios part (b) reports (the first two are the targets)."""


def bench_http(seconds: float, warmup: float, rounds: int) -> dict[str, dict[str, float]]:
    """Part (b): median requests/s per server over interleaved rounds, and the medians of the
    per-round ratios (each round's three runs are close in time, so the ratio of one round is
    less exposed to the machine's drifting background load than a ratio of medians)."""
    wrk = find_wrk()
    print(f"  load generator: {wrk} (installed), 1 thread, {CLIENTS} connections, "
          f"{seconds:g}s per run after a {warmup:g}s warm-up", flush=True)
    kinds = ("echo", "floor", "toolkeeper", "sdk")
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    cpu_us: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        servers = {k: stack.enter_context(start_server(k, Path(folder))) for k in kinds}
        scripts = {}
        for kind in kinds:
            scripts[kind] = Path(folder) / f"{kind}.lua"
            scripts[kind].write_text(wrk_script(EXPECTED[kind]))
            warm = run_wrk(wrk, servers[kind], scripts[kind], warmup)
            if warm["failed"] or not warm["requests"]:
                raise AssertionError(f"{kind}: warm-up had failures: {warm}")
        for i in range(rounds):
            for kind in kinds:
                before = process_cpu_seconds(servers[kind].pid)
                result = run_wrk(wrk, servers[kind], scripts[kind], seconds)
                after = process_cpu_seconds(servers[kind].pid)
                if result["failed"]:
                    raise AssertionError(f"{kind}: {result['failed']} failed responses: "
                                         f"{result}")
                rates[kind].append(result["rps"])
                cpu = ""
                if before is not None and after is not None and result["requests"]:
                    cpu_us[kind].append((after - before) / result["requests"] * 1e6)
                    cpu = f"  server CPU {cpu_us[kind][-1]:.1f} us/req"
                print(f"  round {i + 1} {kind:<10} {result['rps']:>9,.0f} req/s  "
                      f"p50 {result['p50_us'] / 1000:.2f} ms  p99 {result['p99_us'] / 1000:.2f} ms"
                      f"  ({result['requests']} requests, 0 failed){cpu}", flush=True)
    out = {k: {"median": statistics.median(v), "min": min(v), "max": max(v)}
           for k, v in rates.items()}
    out["rounds"] = {f"{a}/{b}": statistics.median(
        x / y for x, y in zip(rates[a], rates[b], strict=True)) for a, b in RATIOS}
    if all(len(cpu_us[k]) == rounds for k in kinds):
        out["cpu_us"] = {k: statistics.median(v) for k, v in cpu_us.items()}
    return out


# --- (c) the deployed configurations over HTTP ------------------------------------------------

DEPLOY_ROWS: tuple[tuple[str, str, str], ...] = (
    ("floor", "floor", "modern"),
    ("anonymous", "anonymous", "modern"),
    ("demo", "demo", "modern"),
    ("deploy", "deploy", "modern"),
    ("sdk", "sdk", "modern"),
    ("anonymous-legacy", "anonymous", "legacy"),
    ("demo-legacy", "demo", "legacy"),
    ("deploy-legacy", "deploy", "legacy"),
    ("sdk-legacy", "sdk-stateful", "legacy"),
)
"""(row, server kind, era): the toolkeeper rows are ``bench/deployment.py``'s configurations
through ``serve``'s runner (one process serves both eras); legacy rows use one session."""


def _row_script(era: str, token: str | None, session: str | None) -> str:
    import deployment

    headers = "\n".join(f"wrk.headers[{_lua_string(n)}] = {_lua_string(v)}"
                        for n, v in deployment.call_headers(era, token, session))
    checks = "".join(f" or not string.find(body, {_lua_string(s)}, 1, true)"
                     for s in (EXPECTED_TEXT, '"isError":false'))
    body = deployment.call_body(era).decode()
    script = WRK_SCRIPT % {"body": _lua_string(body), "headers": headers, "checks": checks}
    if era == "legacy":  # ids unique within the session (one wrk thread: one counter)
        head, tail = body.split('"id":1,', 1)
        script += (f"local head, tail = {_lua_string(head + chr(34) + 'id' + chr(34) + ':')}, "
                   f"{_lua_string(',' + tail)}\nlocal sent = 0\n"
                   "function request()\n  sent = sent + 1\n"
                   "  return wrk.format(nil, nil, nil, head .. sent .. tail)\nend\n")
    return script


def bench_deploy(seconds: float, warmup: float, rounds: int, jwt: bool
                 ) -> dict[str, dict[str, float]]:
    """Part (c): server CPU per request of each row, rounds interleaved (every other round
    in reverse order); per round, each row's ratio to the anonymous row of its era. Medians,
    with the spread of the ratios."""
    import deployment

    wrk = find_wrk()
    rows = list(DEPLOY_ROWS)
    if jwt:
        rows.insert(4, ("deploy-jwt", "deploy-jwt", "modern"))
        rows.append(("deploy-jwt-legacy", "deploy-jwt", "legacy"))
    kinds = list(dict.fromkeys(kind for _, kind, _ in rows))
    cpu_us: dict[str, list[float]] = {row: [] for row, _, _ in rows}
    sys_us: dict[str, list[float]] = {row: [] for row, _, _ in rows}
    rates: dict[str, list[float]] = {row: [] for row, _, _ in rows}
    print(f"  load generator: {wrk} (installed), 1 thread, {CLIENTS} connections, "
          f"{seconds:g}s per run after a {warmup:g}s warm-up, every response checked",
          flush=True)
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        servers = {k: stack.enter_context(start_server(k, Path(folder))) for k in kinds}
        scripts: dict[str, Path] = {}
        for row, kind, era in rows:
            server = servers[kind]
            session = (deployment.legacy_session_http(server.url, server.token)
                       if era == "legacy" else None)
            scripts[row] = Path(folder) / f"{row}.lua"
            scripts[row].write_text(_row_script(era, server.token, session))
            warm = _wrk(wrk, server.url, scripts[row], warmup)
            if warm["failed"] or not warm["requests"]:
                raise AssertionError(f"{row}: warm-up had failures: {warm}")
        for i in range(rounds):
            # Every other round in reverse order: a drift of the host's speed over a round then
            # weighs on each row's ratio to its era's anonymous row from both sides.
            for row, kind, _ in (rows if i % 2 == 0 else rows[::-1]):
                server = servers[kind]
                before = process_cpu_split(server.pid)
                result = _wrk(wrk, server.url, scripts[row], seconds)
                after = process_cpu_split(server.pid)
                if result["failed"]:
                    raise AssertionError(f"{row}: {result['failed']} failed responses: {result}")
                assert before is not None and after is not None and result["requests"]
                per = 1e6 / result["requests"]
                cpu_us[row].append((sum(after) - sum(before)) * per)
                sys_us[row].append((after[1] - before[1]) * per)
                rates[row].append(result["rps"])
                print(f"  round {i + 1} {row:<18} {result['rps']:>9,.0f} req/s  server CPU "
                      f"{cpu_us[row][-1]:6.1f} us/req  ({result['requests']} requests, "
                      "0 failed)", flush=True)
    out: dict[str, dict[str, float]] = {}
    for row, _, era in rows:
        base = "anonymous" if era == "modern" else "anonymous-legacy"
        ratios = [c / b for c, b in zip(cpu_us[row], cpu_us[base], strict=True)]
        out[row] = {"cpu_us": statistics.median(cpu_us[row]), "rps": statistics.median(rates[row]),
                    "sys_us": statistics.median(sys_us[row]),
                    "ratio": statistics.median(ratios), "ratio_min": min(ratios),
                    "ratio_max": max(ratios)}
    for sdk, deploy in (("sdk", "deploy"), ("sdk-legacy", "deploy-legacy")):
        # the SDK row against the deployment, round by round as the other ratios are
        out[sdk]["vs_deploy"] = statistics.median(
            s / d for s, d in zip(cpu_us[sdk], cpu_us[deploy], strict=True))
    return out


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--part", choices=("a", "b", "c", "all"), default="all",
                        help="c: the deployed configurations (not in all)")
    parser.add_argument("--jwt", action="store_true", help="(c) also the JWT deployment rows")
    parser.add_argument("--calls", type=int, help="calls per run of (a)")
    parser.add_argument("--repeats", type=int, help="runs of (a)")
    parser.add_argument("--seconds", type=float, help="seconds per wrk run of (b)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds of (b)")
    args = parser.parse_args(argv)
    quick = args.quick
    calls = args.calls or (2_000 if quick else 200_000)
    repeats = args.repeats or (2 if quick else 7)
    seconds = args.seconds or (1.0 if quick else 5.0)
    rounds = args.rounds or (1 if quick else 5)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    verdicts: list[str] = []
    if args.part in ("a", "all"):
        print(f"(a) in-process tools/call dispatch, {calls:,} calls x {repeats} runs", flush=True)
        a = bench_dispatch(calls, repeats)
        print(f"(a) median {a['median']:,.0f} calls/s (min {a['min']:,.0f}, max {a['max']:,.0f}; "
              f"CPU-time median {a['cpu_median']:,.0f}); target 100,000: "
              f"{'met' if a['median'] >= 100_000 else 'NOT met'}", flush=True)
        print(f"(a) floor of the work (bench/gateway_floor.py) median {a['floor_median']:,.0f} "
              f"calls/s CPU; floor/toolkeeper {a['floor_ratio']:.2f}x (median of per-run "
              f"ratios)", flush=True)
        verdicts.append(f"(a) {a['median']:,.0f} calls/s")
    if args.part in ("b", "all"):
        print(f"(b) HTTP tools/call, modern era, {CLIENTS} concurrent clients", flush=True)
        b = bench_http(seconds, 1.0 if quick else 2.0, rounds)
        tk, sdk, echo = (b[k]["median"] for k in ("toolkeeper", "sdk", "echo"))
        for kind in ("echo", "floor", "toolkeeper", "sdk"):
            row = b[kind]
            print(f"(b) {kind:<10} median {row['median']:>9,.0f} req/s "
                  f"(min {row['min']:,.0f}, max {row['max']:,.0f})")
        per_round = b["rounds"]
        print(f"(b) toolkeeper/SDK  = {tk / sdk:.2f}x (median of per-round ratios "
              f"{per_round['toolkeeper/sdk']:.2f}x); target >= 10x: "
              f"{'met' if tk / sdk >= 10 else 'NOT met'}")
        print(f"(b) echo/toolkeeper = {echo / tk:.2f}x (median of per-round ratios "
              f"{per_round['echo/toolkeeper']:.2f}x); target <= 1.5x: "
              f"{'met' if echo / tk <= 1.5 else 'NOT met'}", flush=True)
        floor = b["floor"]["median"]
        print(f"(b) the floor of the work on the same stack: floor/SDK = {floor / sdk:.2f}x, "
              f"echo/floor = {echo / floor:.2f}x, floor/toolkeeper = {floor / tk:.2f}x "
              f"(medians of per-round ratios {per_round['floor/sdk']:.2f}x, "
              f"{per_round['echo/floor']:.2f}x, {per_round['floor/toolkeeper']:.2f}x)",
              flush=True)
        if "cpu_us" in b:
            cpu = b["cpu_us"]
            print(f"(b) server CPU per request, medians: echo {cpu['echo']:.1f} us, floor "
                  f"{cpu['floor']:.1f} us, toolkeeper {cpu['toolkeeper']:.1f} us, SDK "
                  f"{cpu['sdk']:.1f} us (SDK/toolkeeper {cpu['sdk'] / cpu['toolkeeper']:.2f}x, "
                  f"toolkeeper/echo {cpu['toolkeeper'] / cpu['echo']:.2f}x, floor/echo "
                  f"{cpu['floor'] / cpu['echo']:.2f}x)", flush=True)
            # Read as CPU per request, the two (b) targets leave one budget: at most 1.5x the
            # echo's and at most a tenth of the SDK's.
            budget = min(1.5 * cpu["echo"], cpu["sdk"] / 10)
            print(f"(b) in server CPU, both targets allow at most {budget:.1f} us per request "
                  f"(min of 1.5 x echo, SDK / 10): toolkeeper {cpu['toolkeeper']:.1f} us "
                  f"({cpu['toolkeeper'] / budget:.2f}x the budget), the floor "
                  f"{cpu['floor']:.1f} us ({cpu['floor'] / budget:.2f}x)", flush=True)
        verdicts.append(f"(b) {tk / sdk:.2f}x SDK, echo/toolkeeper {echo / tk:.2f}x")
    if args.part == "c":
        print(f"(c) HTTP tools/call of the deployed configurations, both eras, {CLIENTS} "
              f"concurrent clients, {rounds} interleaved rounds", flush=True)
        c = bench_deploy(seconds, 1.0 if quick else 2.0, rounds, args.jwt)
        print("(c) row                 CPU us/call (system)  req/s      vs anonymous (median; "
              "min-max of the rounds)")
        for row, value in c.items():
            print(f"(c) {row:<18} {value['cpu_us']:>9.1f} {value['sys_us']:>8.1f} "
                  f"{value['rps']:>9,.0f}   {value['ratio']:.2f}x "
                  f"({value['ratio_min']:.2f}-{value['ratio_max']:.2f})")
        for era, suffix in (("modern", ""), ("legacy", "-legacy")):
            deploy, demo = c[f"deploy{suffix}"]["ratio"], c[f"demo{suffix}"]["ratio"]
            sdk = c[f"sdk{suffix}"]["vs_deploy"]
            verdicts.append(f"{era}: deploy {deploy:.2f}x (target <= 1.15), demo {demo:.2f}x "
                            f"(target <= 1.05), SDK/deploy {sdk:.1f}x (target >= 5)")
    print(f"load average {os.getloadavg()[0]:.2f} at end; " + "; ".join(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
