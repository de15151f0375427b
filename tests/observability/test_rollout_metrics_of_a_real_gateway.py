"""Metrics of a rollout from a real ``toolkeeper serve`` (SQLite registry, durable call log,
Prometheus endpoint): the calls counter and the latency histogram carry ``rollout_step`` (the
step's share in percent while a rollout routes the tool, ``none`` otherwise); each routing
rollout has its share, state and holds gauges, read from the registry at scrape time, so a
change made by another process shows at the next scrape; and ``gate window --metrics`` still
counts every call of a version, summed over the steps it was served at.

The rollout is started through the registry's RolloutBook on the gateway's own SQLite file;
the anonymous local principal is hashed by its tenant, and the salt is one whose bucket for
``tenant:local`` (587) is inside every step's share, so unpinned calls get the candidate."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from process_kit import keep_draining, read_until, stop_process
from toolkeeper.contracts.semver import Version
from toolkeeper.registry import Registry
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollouts import Rollout, bucket

MODERN = "2026-07-28"
READY = re.compile(rb"toolkeeper gateway on (\S+/mcp)\n")
SALT = "01" * 16
STEPS = (25, 50, 100)
HANDLERS = '''
from toolkeeper.server import ToolHandlers

HANDLERS = ToolHandlers()
HANDLERS.bind("calc", lambda arguments: {"a": arguments["a"]})
'''
Labels = tuple[tuple[str, str], ...]


def _contract(version: str) -> dict[str, Any]:
    return {"name": "calc", "version": version, "title": "calc", "description": "The calc tool.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}},
                            "required": ["a"]},
            "dataClassification": "internal", "sideEffect": "read"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Gateway:
    def __init__(self, url: str, registry: Registry, metrics: str) -> None:
        self.url, self.registry, self.metrics = url, registry, metrics
        self._http = httpx.Client(timeout=30)
        self._ids = iter(range(1, 10**6))

    def call(self, version: str | None = None, status: int = 200) -> dict[str, Any]:
        meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                                "io.modelcontextprotocol/clientCapabilities": {}}
        if version is not None:
            meta["schemaVersion"] = version
        response = self._http.post(self.url, headers={
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call", "Mcp-Name": "calc"}, json={
            "jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call",
            "params": {"name": "calc", "arguments": {"a": 1}, "_meta": meta}})
        assert response.status_code == status, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def scrape(self) -> dict[tuple[str, Labels], float]:
        with urllib.request.urlopen(self.metrics, timeout=10) as response:
            text = response.read().decode()
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def close(self) -> None:
        self._http.close()


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    estate = tmp_path / "estate"
    estate.mkdir()
    for version in ("1.0.0", "1.1.0"):
        (estate / f"calc-{version}.json").write_text(json.dumps(_contract(version)))
    (tmp_path / "rollout_handlers.py").write_text(HANDLERS)
    url = f"sqlite://{tmp_path / 'registry.db'}"
    port = _free_port()
    config = tmp_path / "gateway.toml"
    config.write_text(f'[registry]\nurl = "{url}"\n[server]\nport = 0\n'
                      f'[estate]\ndirs = ["{estate}"]\n'
                      f'handlers = ["{tmp_path / "rollout_handlers.py"}:HANDLERS"]\n'
                      '[calllog]\nflush_interval_ms = 100\n[logging]\nlevel = "warning"\n'
                      f"[metrics]\nport = {port}\n")
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", "--config",
                             str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    registry: Registry | None = None
    served: Gateway | None = None
    try:
        mcp = read_until(proc.stderr, READY, 60).group(1).decode()
        keep_draining(proc.stderr)
        registry = Registry.open(url)
        served = Gateway(mcp, registry, f"http://127.0.0.1:{port}/metrics")
        yield served
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    finally:
        if served is not None:
            served.close()
        stop_process(proc)
        if registry is not None:
            registry.close()


def _start(registry: Registry) -> Rollout:
    assert bucket(SALT, "tenant:local") < STEPS[0] * 100  # the local tenant sees the candidate
    now = time.time_ns() // 1000
    return rollout_book(registry).start(Rollout(
        "calc", Version.parse("1.1.0"), Version.parse("1.0.0"), STEPS, 0, "running", SALT,
        {}, 300, 3, {}, now, now, now))


def _calls(scraped: dict[tuple[str, Labels], float]) -> dict[tuple[str, str], float]:
    """``toolkeeper_calls_total`` of calc by (version, rollout_step), outcome ok."""
    out = {}
    for (name, labels), value in scraped.items():
        found = dict(labels)
        if name == "toolkeeper_calls_total" and found["tool"] == "calc":
            assert found["outcome"] == "ok"
            out[found["version"], found["rollout_step"]] = value
    return out


def _rollout_gauges(scraped: dict[tuple[str, Labels], float]) -> dict[tuple[str, Labels], float]:
    return {key: value for key, value in scraped.items()
            if key[0].startswith("toolkeeper_rollout_")}


ROLLOUT = (("candidate", "1.1.0"), ("target", "1.0.0"), ("tool", "calc"))


def _state(state: str) -> tuple[str, Labels]:
    return ("toolkeeper_rollout_state", (("candidate", "1.1.0"), ("state", state),
                                         ("target", "1.0.0"), ("tool", "calc")))


def test_calls_carry_the_step_and_each_routing_rollout_has_its_gauges(
        gateway: Gateway) -> None:
    gateway.call("1.0.0")                                   # no rollout yet: step none
    before = gateway.scrape()
    assert _calls(before) == {("1.0.0", "none"): 1.0}
    assert _rollout_gauges(before) == {}                    # no rollout: no series
    started = _start(gateway.registry)
    scraped = gateway.scrape()                              # no call since: the scrape itself
    gauges = _rollout_gauges(scraped)                       # reads the rollout's start
    assert gauges[("toolkeeper_rollout_share_percent", ROLLOUT)] == 25.0
    assert {s: gauges[_state(s)] for s in ("running", "paused", "halted")} == {
        "running": 1.0, "paused": 0.0, "halted": 0.0}
    assert gauges[("toolkeeper_rollout_holds", ROLLOUT)] == 0.0
    assert gauges[("toolkeeper_rollout_max_holds", ROLLOUT)] == 3.0
    assert gauges[("toolkeeper_rollout_step_started_timestamp_seconds", ROLLOUT)] == \
        started.step_started_us / 1e6
    for _ in range(3):
        gateway.call()                                      # the candidate, at 25 percent
    gateway.call("1.0.0")                                   # a pin to the target, at 25
    book = rollout_book(gateway.registry)
    book.promote_step("calc")
    gateway.call()                                          # the candidate, at 50 percent
    scraped = gateway.scrape()
    assert _calls(scraped) == {("1.0.0", "none"): 1.0, ("1.1.0", "25"): 3.0,
                               ("1.0.0", "25"): 1.0, ("1.1.0", "50"): 1.0}
    assert scraped[("toolkeeper_call_latency_seconds_count", (
        ("rollout_step", "25"), ("tool", "calc"), ("version", "1.1.0")))] == 3.0
    assert _rollout_gauges(scraped)[("toolkeeper_rollout_share_percent", ROLLOUT)] == 50.0
    book.halt("calc")
    halted = _rollout_gauges(gateway.scrape())
    assert (halted[_state("running")], halted[_state("halted")]) == (0.0, 1.0)
    assert gateway.call(status=400)["error"]["data"]["reason"] == "release.halted"
    book.abort("calc")                                      # over: routes nothing
    assert _rollout_gauges(gateway.scrape()) == {}
    gateway.call("1.0.0")
    assert _calls(gateway.scrape())[("1.0.0", "none")] == 2.0


def test_a_metrics_window_sums_a_versions_calls_over_its_steps(
        gateway: Gateway, tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"minSamples": 1, "maxErrorRate": 0.5}))
    gate = subprocess.Popen(
        [sys.executable, "-m", "toolkeeper", "gate", "window", "--policy", str(policy),
         "--metrics", gateway.metrics, "--for", "10m", "--tool", "calc", "--version", "1.0.0",
         "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    try:
        read_until(gate.stderr, re.compile(rb"observing \S+ for 600 s"), 60)
        for _ in range(2):
            gateway.call("1.0.0")                           # step none
        _start(gateway.registry)
        for _ in range(3):
            gateway.call("1.0.0")                           # step 25
        gate.send_signal(signal.SIGINT)
        out, _ = gate.communicate(timeout=60)
    finally:
        stop_process(gate)
    assert gate.returncode == 0, out
    assert _calls(gateway.scrape()) == {("1.0.0", "none"): 2.0, ("1.0.0", "25"): 3.0}
    result = json.loads(out)
    assert (result["status"], result["samples"], result["errors"]) == ("healthy", 5, 0)
