"""The gateway end to end while the registry changes under it (SPEC 2.2-2.4, 3.3, 3.4): real
``toolkeeper serve`` processes over one SQLite registry file, changed from this process (the
Registry API) and from the ``toolkeeper`` CLI, while concurrent HTTP clients of both eras call
tools pinned and unpinned and list them.

Freshness: once a publish, deprecate or retire has returned here, every request sent after it
is answered against it (a pinned call to a retired version is -32602 ``schema_version_retired``
with ``action: relist``; tools/list shows the new newest version; a result's ``_meta`` names
the successor and the deprecation in force). Every reply is well-formed JSON-RPC with the
request's id, never a 5xx or a traceback; the server stays responsive and stops on SIGTERM with
status 0 in bounded time, streams open or not. Every wait is bounded."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from load_kit import (
    READY,
    Exchange,
    GatewayProcess,
    LegacyClient,
    ModernClient,
    derived,
    sse_messages,
    start_gateway,
    stop_gateway,
)

from process_kit import read_until
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.demo import install_demo
from toolkeeper.registry import Registry

TOOL = "payments.lookup"
V1, V2 = Version.parse("1.0.0"), Version.parse("2.0.0")
ARGS = {"reference": "PMT-771"}  # valid under 1.0.0 and 2.0.0 (which drops include_legs)
DEPRECATION = "payments.lookup 1.0.0 is going away: move to 2.0.0"
REQUEST_TIMEOUT_S = 10.0
POLLS = 3000
"""The most polls of a condition, 10 ms apart: a count, not a deadline."""
TIMEOUT = httpx.Timeout(REQUEST_TIMEOUT_S)
LATER = frozenset({1, 2, 3})


@pytest.fixture
def registry_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'registry.db'}"


@pytest.fixture
def registry(registry_url: str) -> Iterator[Registry]:
    """This process's own connection to the file the gateways serve (the demo estate in it)."""
    with Registry.open(registry_url) as opened:
        install_demo(opened)
        yield opened


@pytest.fixture
def gateway(registry: Registry, registry_url: str, tmp_path: Path) -> Iterator[GatewayProcess]:
    started = start_gateway(registry_url, tmp_path / "gateway.log")
    try:
        yield started
    finally:
        stop_gateway(started)


def _toolkeeper(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "toolkeeper", *args], capture_output=True,
                          timeout=30, check=False)
    assert done.returncode == 0, done.stderr.decode()


def _v1(registry: Registry) -> ToolSpec:
    spec = registry.get(TOOL, V1)
    assert spec is not None
    return spec


# --- what a reply says about the registry state it was answered against --------------------
# Stages: 0 only 1.0.0; 1 2.0.0 published; 2 1.0.0 deprecated (successor 2.0.0); 3 1.0.0 retired.


def _pinned_v1(ex: Exchange) -> frozenset[int]:
    error = ex.error
    if error is not None:
        assert ex.status == ex.answer_status and error["code"] == -32602, ex.message
        assert error["data"] == {"reason": "schema_version_retired", "tool": TOOL,
                                 "requestedVersion": "1.0.0", "currentVersion": "2.0.0",
                                 "action": "relist"}, ex.message
        return frozenset({3})
    result = ex.result
    assert result["isError"] is False, result
    meta = {k: v for k, v in result["_meta"].items() if not k.startswith("io.")}
    shapes: dict[tuple[tuple[str, Any], ...], frozenset[int]] = {
        (("schemaVersion", "1.0.0"),): frozenset({0}),
        (("schemaVersion", "1.0.0"), ("successor", "2.0.0")): frozenset({1}),
        (("deprecation", DEPRECATION), ("schemaVersion", "1.0.0"), ("successor", "2.0.0")):
            frozenset({2}),
    }
    return shapes[tuple(sorted(meta.items()))]


def _pinned_v2(ex: Exchange) -> frozenset[int]:
    error = ex.error
    if error is not None:
        assert ex.status == ex.answer_status and error["code"] == -32602, ex.message
        assert error["data"] == {"reason": "schema_version_unknown", "tool": TOOL,
                                 "requestedVersion": "2.0.0", "currentVersion": "1.0.0",
                                 "action": "relist"}, ex.message
        return frozenset({0})
    assert ex.result["isError"] is False, ex.result
    assert {k: v for k, v in ex.result["_meta"].items() if not k.startswith("io.")} == {
        "schemaVersion": "2.0.0"}
    return LATER


def _unpinned(ex: Exchange) -> frozenset[int]:
    result = ex.result
    assert result["isError"] is False, result
    meta = {k: v for k, v in result["_meta"].items() if not k.startswith("io.")}
    assert set(meta) == {"schemaVersion"}, meta
    return {"1.0.0": frozenset({0}), "2.0.0": LATER}[meta["schemaVersion"]]


def _listed(ex: Exchange) -> frozenset[int]:
    tools = ex.result["tools"]
    names = [tool["name"] for tool in tools]
    assert names == sorted(names) and len(set(names)) == len(names)
    assert names == ["db.query", "payments.lookup", "tickets.create"], names
    served = next(tool for tool in tools if tool["name"] == TOOL)["_meta"]["schemaVersion"]
    return {"1.0.0": frozenset({0}), "2.0.0": LATER}[served]


@dataclass
class _Timeline:
    """When each stage's change began and returned (``time.monotonic()``)."""

    begun: list[float]
    returned: list[float]

    def window(self, ex: Exchange) -> tuple[int, int]:
        """(the newest stage returned before the request was sent, the newest stage begun
        before its reply arrived): the reply must show a state in between."""
        low = max(k for k, at in enumerate(self.returned) if at < ex.sent)
        high = max(k for k, at in enumerate(self.begun) if at < ex.received)
        return low, high


_Probe = tuple[str, Callable[[Any], Exchange], Callable[[Exchange], frozenset[int]]]


def _probes() -> list[_Probe]:
    return [
        ("pinned 1.0.0", lambda c: c.call(TOOL, ARGS, "1.0.0"), _pinned_v1),
        ("pinned 2.0.0", lambda c: c.call(TOOL, ARGS, "2.0.0"), _pinned_v2),
        ("unpinned", lambda c: c.call(TOOL, ARGS), _unpinned),
        ("tools/list", lambda c: c.list(), _listed),
    ]


class _Worker(threading.Thread):
    """One client looping over the probes until told to stop; records every exchange."""

    def __init__(self, url: str, legacy: bool) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.legacy = legacy
        self.stop = threading.Event()
        self.seen: list[tuple[str, Exchange, frozenset[int]]] = []
        self.rounds: list[float] = []  # when each completed round was started
        self.failure: BaseException | None = None
        self.progress = threading.Condition()  # notified at each round's end and at exit

    def run(self) -> None:
        try:
            with httpx.Client(timeout=TIMEOUT) as http:
                client: Any = LegacyClient(http, self.url) if self.legacy else ModernClient(
                    http, self.url)
                while not self.stop.is_set():
                    started = time.monotonic()
                    for label, send, read in _probes():
                        exchange = send(client)
                        self.seen.append((label, exchange, read(exchange)))
                    with self.progress:
                        self.rounds.append(started)
                        self.progress.notify_all()
        except BaseException as exc:
            self.failure = exc
        finally:
            with self.progress:
                self.progress.notify_all()

    def rounds_since(self, since: float) -> int:
        return sum(1 for at in self.rounds if at > since)


def _await_rounds(workers: list[_Worker], since: float, count: int) -> None:
    """Wait until every worker has completed ``count`` rounds started after ``since``. Each
    wait is for one more round, bounded by that round's requests times the client timeout, and
    there are at most ``count`` of them per worker: a count, not an expected speed."""
    round_limit_s = (len(_probes()) + 1) * REQUEST_TIMEOUT_S
    for worker in workers:
        for _ in range(count + 1):  # one more: the round under way when ``since`` was taken
            with worker.progress:
                if (worker.rounds_since(since) >= count or worker.failure is not None
                        or not worker.is_alive()):
                    break
                worker.progress.wait(round_limit_s)
        if worker.failure is not None:
            raise worker.failure
        assert worker.rounds_since(since) >= count, [w.rounds_since(since) for w in workers]


def test_every_request_sent_after_a_change_returned_is_answered_against_it_under_load(
        registry: Registry, registry_url: str, gateway: GatewayProcess) -> None:
    workers = [_Worker(gateway.url, legacy=i % 2 == 1) for i in range(4)]
    for worker in workers:
        worker.start()
    timeline = _Timeline([0.0], [0.0])
    changes: list[Callable[[], object]] = [
        lambda: registry.publish(derived(_v1(registry), "2.0.0", drop_property="include_legs")),
        lambda: registry.deprecate(TOOL, V1, message=DEPRECATION, successor=V2),
        # The retire comes from another process: the CLI on the same file.
        lambda: _toolkeeper("retire", TOOL, "1.0.0", "--registry", registry_url),
    ]
    try:
        _await_rounds(workers, 0.0, 2)
        for change in changes:
            timeline.begun.append(time.monotonic())
            change()
            timeline.returned.append(time.monotonic())
            _await_rounds(workers, timeline.returned[-1], 2)
    finally:
        for worker in workers:
            worker.stop.set()
        for worker in workers:
            worker.join(timeout=15)
    assert not any(w.is_alive() for w in workers)
    for worker in workers:
        if worker.failure is not None:
            raise worker.failure

    stale = []
    for worker in workers:
        for label, exchange, shown in worker.seen:
            low, high = timeline.window(exchange)
            if not shown & set(range(low, high + 1)):
                stale.append((("legacy" if worker.legacy else "modern"), label, sorted(shown),
                              (low, high), exchange.message))
    assert stale == []
    assert {label for w in workers for label, _, shown in w.seen if 3 in shown} == {
        label for label, _, _ in _probes()}  # every probe ran after the retire

    with httpx.Client(timeout=TIMEOUT) as http:  # still responsive, in both eras
        assert _listed(ModernClient(http, gateway.url).list()) == LATER
        assert _pinned_v1(LegacyClient(http, gateway.url).call(TOOL, ARGS, "1.0.0")) == {3}
    assert stop_gateway(gateway) == 0
    assert "Traceback" not in gateway.stderr_text()



def _state(client: Any) -> dict[str, Any]:
    """What one client is told now: the version listed, and for each pin (None: unpinned) the
    result's ``_meta`` or the gate's (reason, currentVersion) / the error message."""
    out: dict[str, Any] = {"list": _served(client.list())}
    for pin in ("1.0.0", "1.1.0", "2.0.0", "3.0.0", None):
        exchange = client.call(TOOL, ARGS, pin)
        error = exchange.error
        if error is None:
            out[str(pin)] = {k: v for k, v in exchange.result["_meta"].items()
                             if not k.startswith("io.")}
        else:
            assert (exchange.status, error["code"]) == (exchange.answer_status, -32602), \
                exchange.message
            data = error.get("data")
            out[str(pin)] = ((data["reason"], data["currentVersion"]) if data is not None
                             else error["message"])
    return out


_RETIRED_11 = ("schema_version_retired", "2.0.0")
_LIFECYCLE_STEPS: list[tuple[str, dict[str, Any]]] = [
    ("deprecate 1.0.0 naming 1.1.0", {
        "list": "2.0.0",
        "1.0.0": {"schemaVersion": "1.0.0", "deprecation": "m1", "successor": "1.1.0"},
        "1.1.0": {"schemaVersion": "1.1.0", "successor": "2.0.0"},
        "2.0.0": {"schemaVersion": "2.0.0"},
        "3.0.0": ("schema_version_unknown", "2.0.0"),
        "None": {"schemaVersion": "2.0.0"}}),
    ("retire 1.1.0 (CLI)", {  # the named successor is retired: the served version is named
        "list": "2.0.0",
        "1.0.0": {"schemaVersion": "1.0.0", "deprecation": "m1", "successor": "2.0.0"},
        "1.1.0": _RETIRED_11,
        "2.0.0": {"schemaVersion": "2.0.0"},
        "3.0.0": ("schema_version_unknown", "2.0.0"),
        "None": {"schemaVersion": "2.0.0"}}),
    ("deprecate 1.0.0 again, new message (CLI)", {
        "list": "2.0.0",
        "1.0.0": {"schemaVersion": "1.0.0", "deprecation": "m2", "successor": "2.0.0"},
        "1.1.0": _RETIRED_11,
        "2.0.0": {"schemaVersion": "2.0.0"},
        "3.0.0": ("schema_version_unknown", "2.0.0"),
        "None": {"schemaVersion": "2.0.0"}}),
    ("deprecate 2.0.0: nothing active", {
        "list": None,
        "1.0.0": {"schemaVersion": "1.0.0", "deprecation": "m2"},
        "1.1.0": _RETIRED_11,
        "2.0.0": {"schemaVersion": "2.0.0", "deprecation": "m3"},
        "3.0.0": ("schema_version_unknown", "2.0.0"),
        "None": f"Unknown tool: {TOOL}"}),
    ("publish 3.0.0", {
        "list": "3.0.0",
        "1.0.0": {"schemaVersion": "1.0.0", "deprecation": "m2", "successor": "3.0.0"},
        "1.1.0": ("schema_version_retired", "3.0.0"),
        "2.0.0": {"schemaVersion": "2.0.0", "deprecation": "m3", "successor": "3.0.0"},
        "3.0.0": {"schemaVersion": "3.0.0"},
        "None": {"schemaVersion": "3.0.0"}}),
]


def test_result_meta_follows_deprecations_successors_and_retirements_made_by_other_processes(
        registry: Registry, registry_url: str, gateway: GatewayProcess) -> None:
    v11 = derived(_v1(registry), "1.1.0", add_property="note")
    v2 = derived(v11, "2.0.0", drop_property="include_legs")
    registry.publish(v11)
    registry.publish(v2)
    changes: list[Callable[[], object]] = [
        lambda: registry.deprecate(TOOL, V1, message="m1", successor=Version.parse("1.1.0")),
        lambda: _toolkeeper("retire", TOOL, "1.1.0", "--registry", registry_url),
        lambda: _toolkeeper("deprecate", TOOL, "1.0.0", "--message", "m2",
                            "--registry", registry_url),
        lambda: registry.deprecate(TOOL, V2, message="m3"),
        lambda: registry.publish(derived(v2, "3.0.0", drop_property="note")),
    ]
    with httpx.Client(timeout=TIMEOUT) as http:
        clients = [ModernClient(http, gateway.url), LegacyClient(http, gateway.url)]
        for change, (label, expected) in zip(changes, _LIFECYCLE_STEPS, strict=True):
            change()
            for client in clients:
                assert (label, _state(client)) == (label, expected)


# --- replicas on one SQLite file ---------------------------------------------------------------


@pytest.fixture
def replicas(registry: Registry, registry_url: str, tmp_path: Path
             ) -> Iterator[list[GatewayProcess]]:
    started: list[GatewayProcess] = []
    try:
        for n in range(2):
            started.append(start_gateway(registry_url, tmp_path / f"replica{n}.log",
                                         *_refund_handlers(tmp_path)))
        yield started
    finally:
        for replica in started:
            stop_gateway(replica)


_REFUNDS = """from toolkeeper.server import ToolHandlers

handlers = ToolHandlers()
handlers.bind("refunds.issue", lambda arguments: "refunded " + arguments["reference"])
"""


def _refund_handlers(directory: Path) -> tuple[str, str]:
    """``--handlers`` for ``refunds.issue`` (a replica lists only what it can run), a contract
    one test publishes while the replicas run."""
    module = directory / "refund_handlers.py"
    module.write_text(_REFUNDS)
    return ("--handlers", f"{module}:handlers")


def _served(ex: Exchange, name: str = TOOL) -> str | None:
    for tool in ex.result["tools"]:
        if tool["name"] == name:
            version = tool["_meta"]["schemaVersion"]
            assert isinstance(version, str)
            return version
    return None


class _Lister(threading.Thread):
    """A client listing tools on one replica until told to stop."""

    def __init__(self, url: str, legacy: bool) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.legacy = legacy
        self.stop = threading.Event()
        self.seen: list[Exchange] = []
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(timeout=TIMEOUT) as http:
                client: Any = LegacyClient(http, self.url) if self.legacy else ModernClient(
                    http, self.url)
                while not self.stop.is_set():
                    self.seen.append(client.list())
        except BaseException as exc:
            self.failure = exc


def test_replicas_on_one_sqlite_file_answer_each_request_against_every_change_returned_before_it(
        registry: Registry, replicas: list[GatewayProcess]) -> None:
    listers = [_Lister(replica.url, legacy=n == 1) for n, replica in enumerate(replicas)]
    for lister in listers:
        lister.start()
    returned: list[tuple[float, int]] = [(0.0, 0)]  # (when, newest minor of 1.x.0 published)
    current = _v1(registry)
    try:
        with httpx.Client(timeout=TIMEOUT) as http:
            modern = [ModernClient(http, replica.url) for replica in replicas]
            legacy = [LegacyClient(http, replica.url) for replica in replicas]
            for minor in range(1, 16):
                newer = derived(current, f"1.{minor}.0", add_property=f"note{minor}")
                registry.publish(newer)
                returned.append((time.monotonic(), minor))
                new, old = str(newer.version), str(current.version)
                for n in (minor % 2, 1 - minor % 2):  # alternate which replica is asked first
                    assert _served(modern[n].list()) == new
                    pinned = legacy[n].call(TOOL, ARGS, new)
                    assert pinned.result["_meta"]["schemaVersion"] == new
                    assert "successor" not in pinned.result["_meta"]
                    behind = modern[n].call(TOOL, ARGS, old)
                    assert (behind.result["_meta"]["schemaVersion"],
                            behind.result["_meta"]["successor"]) == (old, new)
                if minor % 3 == 0:
                    registry.retire(TOOL, current.version)
                    for n in (0, 1):
                        refused = legacy[n].call(TOOL, ARGS, old).error
                        assert refused is not None and refused["data"]["reason"] == (
                            "schema_version_retired"), refused
                current = newer
    finally:
        for lister in listers:
            lister.stop.set()
        for lister in listers:
            lister.join(timeout=15)
    for lister in listers:
        assert not lister.is_alive()
        if lister.failure is not None:
            raise lister.failure
        assert len(lister.seen) > 15
        for exchange in lister.seen:
            owed = max(minor for at, minor in returned if at < exchange.sent)
            shown = _served(exchange)
            assert shown is not None and Version.parse(shown).minor >= owed, (
                owed, shown, exchange.sent)
    for replica in replicas:
        assert stop_gateway(replica) == 0
        assert "Traceback" not in replica.stderr_text()


def test_a_contract_one_replica_publishes_at_start_is_served_by_the_other_at_once(
        registry: Registry, registry_url: str, replicas: list[GatewayProcess],
        tmp_path: Path) -> None:
    estate = tmp_path / "estate"
    estate.mkdir()
    (estate / "refunds.issue.json").write_text(json.dumps({
        "name": "refunds.issue", "version": "1.0.0", "title": "Issue a refund",
        "description": "Refund a payment by its reference.",
        "inputSchema": {"type": "object", "properties": {"reference": {"type": "string"}},
                        "required": ["reference"]},
        "dataClassification": "internal", "requiredScopes": ["refunds.write"],
        "sideEffect": "write"}))
    with httpx.Client(timeout=TIMEOUT) as http:
        # Sessions and clients that exist before the change (a legacy session's principal
        # must not be frozen at initialize: the new tool needs a scope nothing needed before).
        clients = [(ModernClient(http, r.url), LegacyClient(http, r.url)) for r in replicas]
        for modern, legacy in clients:
            assert _served(modern.list(), "refunds.issue") is None
            assert _served(legacy.list(), "refunds.issue") is None
        third = start_gateway(registry_url, tmp_path / "replica2.log", "--estate", str(estate),
                              *_refund_handlers(tmp_path))
        try:
            clients.append((ModernClient(http, third.url), LegacyClient(http, third.url)))
            for modern, legacy in clients:
                assert _served(modern.list(), "refunds.issue") == "1.0.0"
                assert _served(legacy.list(), "refunds.issue") == "1.0.0"
                called = legacy.call("refunds.issue", {"reference": "PMT-1"})
                assert called.result["isError"] is False
                assert called.result["_meta"]["schemaVersion"] == "1.0.0"
        finally:
            assert stop_gateway(third) == 0


# --- SIGTERM -------------------------------------------------------------------------------------


# Started with this launcher, ``toolkeeper serve`` runs unchanged, except that its ready line is
# written from a weakref callback that then lingers for a moment, so a SIGTERM sent on the ready
# line arrives while the callback runs. Unlaunched, the same happens by chance: the import
# system's module-lock callbacks run about 1 ms after the ready line while uvicorn starts, and a
# SIGTERM sent on the ready line was lost in about 1 start in 8 (--demo on SQLite, 4 at once).
_LAUNCHER = """
import time, weakref
import click
from toolkeeper.cli.main import main

_echo = click.echo


class _Payload:
    pass


def echo(message=None, **kwargs):
    if message is None or "toolkeeper gateway on" not in str(message):
        _echo(message, **kwargs)
        return

    def callback(ref):
        _echo(message, **kwargs)
        time.sleep(0.3)  # the SIGTERM sent on the ready line arrives meanwhile

    payload = _Payload()
    ref = weakref.ref(payload, callback)
    del payload  # the callback runs here


click.echo = echo
main()
"""


def test_a_gateway_stopped_the_moment_it_says_it_is_ready_exits_0(
        registry: Registry, registry_url: str, tmp_path: Path) -> None:
    launcher = tmp_path / "launch.py"
    launcher.write_text(_LAUNCHER)
    proc = subprocess.Popen([sys.executable, str(launcher), "serve", "--demo", "--registry",
                             registry_url, "--port", "0", "--log-level", "warning"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        read_until(proc.stderr, READY, 30)
        proc.send_signal(signal.SIGTERM)
        try:
            code: int | None = proc.wait(timeout=4)
        except subprocess.TimeoutExpired:
            code = None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr is not None:
            proc.stderr.close()
    assert code == 0, err[-1500:]


_SLOW_TOOLS = """
import asyncio
from toolkeeper.server import ToolHandlers

handlers = ToolHandlers()


async def wait(arguments, ctx):
    await ctx.progress(0, 1, "waiting")
    await asyncio.sleep(3600)
    return "never"


handlers.bind("slow.wait", wait)
"""


def test_open_streams_of_both_eras_hear_another_process_change_and_sigterm_ends_everything(
        registry: Registry, registry_url: str, tmp_path: Path) -> None:
    registry.publish(spec_from_mapping({
        "name": "slow.wait", "version": "1.0.0", "title": "Wait", "description": "Waits.",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"}))
    (tmp_path / "slow_tools.py").write_text(_SLOW_TOOLS)
    gateway = start_gateway(registry_url, tmp_path / "gateway.log", "--handlers",
                            f"{tmp_path / 'slow_tools.py'}:handlers")
    workers = [_Lister(gateway.url, legacy=n == 1) for n in range(2)]
    in_flight: dict[str, Any] = {}

    def slow_call() -> None:
        with httpx.Client(timeout=httpx.Timeout(30.0)) as http:
            client = ModernClient(http, gateway.url)
            body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
                "name": "slow.wait", "arguments": {},
                "_meta": {**client.listen_request(0)[0]["params"]["_meta"], "progressToken": 1}}}
            try:
                with http.stream("POST", gateway.url, json=body,
                                 headers=client._headers("tools/call", "slow.wait")) as response:
                    in_flight["status"] = response.status_code
                    in_flight["messages"] = list(sse_messages(response.iter_raw()))
            except httpx.TransportError as exc:  # cut at the graceful-shutdown bound
                in_flight["cut"] = type(exc).__name__

    caller = threading.Thread(target=slow_call, daemon=True)
    try:
        with httpx.Client(timeout=httpx.Timeout(10.0)) as http:
            modern, legacy = ModernClient(http, gateway.url), LegacyClient(http, gateway.url)
            listen_body, listen_headers = modern.listen_request(77)
            with http.stream("POST", gateway.url, json=listen_body,
                             headers=listen_headers) as listen, \
                    http.stream("GET", gateway.url,
                                headers=legacy.headers("text/event-stream")) as standalone:
                assert (listen.status_code, standalone.status_code) == (200, 200)
                heard = sse_messages(listen.iter_raw())
                told = sse_messages(standalone.iter_raw())
                assert next(heard)["method"] == "notifications/subscriptions/acknowledged"
                for worker in workers:
                    worker.start()
                caller.start()
                # Another process retires a tool; SQLite cannot push, the gateway finds out
                # on its next read or idle re-check (within 1 s); the read timeout bounds it.
                _toolkeeper("retire", "tickets.create", "1.0.0", "--registry", registry_url)
                assert next(heard) == {
                    "jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                    "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 77}}}
                assert next(told) == {"jsonrpc": "2.0",
                                      "method": "notifications/tools/list_changed"}
                for _ in range(POLLS):  # the slow call is running (committed SSE)
                    if "status" in in_flight or not caller.is_alive():
                        break
                    time.sleep(0.01)
                assert "status" in in_flight, (in_flight, caller.is_alive())
                assert in_flight["status"] == 200
                assert all(len(w.seen) > 0 for w in workers)

                gateway.proc.send_signal(signal.SIGTERM)
                rest = list(heard)  # ends when the server ends the stream (read timeout 10 s)
                assert [m.get("result") for m in rest][-1:] == [{
                    "_meta": {"io.modelcontextprotocol/subscriptionId": 77,
                              "io.modelcontextprotocol/serverInfo": rest[-1]["result"]["_meta"][
                                  "io.modelcontextprotocol/serverInfo"]},
                    "resultType": "complete"}], rest
                assert rest[-1]["id"] == 77
                assert all(m.get("method") == "notifications/tools/list_changed"
                           for m in rest[:-1])
                assert all(m["method"] == "notifications/tools/list_changed" for m in told)
        assert gateway.proc.wait(timeout=20) == 0  # the graceful-shutdown bound, with room
    finally:
        for worker in workers:
            worker.stop.set()
        for worker in workers:
            if worker.ident is not None:
                worker.join(timeout=15)
        if caller.ident is not None:
            caller.join(timeout=15)
        stop_gateway(gateway)
    assert not caller.is_alive() and not any(w.is_alive() for w in workers)
    # Requests racing the shutdown got a whole reply or no connection, never a 5xx.
    for worker in workers:
        assert worker.failure is None or isinstance(worker.failure, httpx.TransportError), (
            worker.failure)
        for exchange in worker.seen:
            assert exchange.status == 200
            assert _served(exchange, "tickets.create") in (None, "1.0.0")
    assert "messages" in in_flight or "cut" in in_flight, in_flight


# --- PostgreSQL ----------------------------------------------------------------------------------


@pytest.mark.postgres
def test_on_postgresql_requests_sent_after_a_change_returned_are_answered_against_it(
        pg_url: str, tmp_path: Path) -> None:
    with Registry.open(pg_url) as registry:
        install_demo(registry)
        gateway = start_gateway(pg_url, tmp_path / "gateway.log")
        stale: list[tuple[str, str, Any]] = []
        load = [_Lister(gateway.url, legacy=n == 1) for n in range(2)]  # keeps the gateway busy
        for lister in load:
            lister.start()
        try:
            with httpx.Client(timeout=TIMEOUT) as http:
                modern, legacy = ModernClient(http, gateway.url), LegacyClient(http, gateway.url)
                current = _v1(registry)
                for minor in range(1, 41):
                    newer = derived(current, f"1.{minor}.0", add_property=f"note{minor}")
                    registry.publish(newer)
                    shown = _served(modern.list())
                    if shown != str(newer.version):
                        stale.append(("tools/list after publish", str(newer.version), shown))
                    registry.retire(TOOL, current.version)
                    called = legacy.call(TOOL, ARGS, str(current.version))
                    if called.error is None:
                        stale.append(("pinned call after retire", str(current.version),
                                      called.result["_meta"]))
                    else:
                        assert called.error["data"]["reason"] == "schema_version_retired"
                    if stale:
                        break  # one is enough
                    current = newer
        finally:
            for lister in load:
                lister.stop.set()
            for lister in load:
                lister.join(timeout=15)
            assert stop_gateway(gateway) == 0
    assert not any(lister.is_alive() or lister.failure for lister in load)
    assert stale == []
