"""``toolkeeper gate window`` against a real ``toolkeeper serve`` (SQLite registry, durable call
log, Prometheus endpoint) under load the test sends. From the call log (``--calls``): the
window of a tool version holds exactly the calls sent to it (count and errors), its latency
percentile is the nearest rank of the latencies the log holds, and the baseline version over the
same time is compared with it. From the metrics (``--metrics``, scraped while the load runs and
ended by SIGINT): the same counts, the percentile the upper bound of the histogram bucket that
holds the log's nearest-rank latency, and the process's resource readings."""

from __future__ import annotations

import bisect
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner

from process_kit import keep_draining, read_until, stop_process
from toolkeeper.cli.main import cli
from toolkeeper.gate import percentile

MODERN = "2026-07-28"
READY = re.compile(rb"toolkeeper gateway on (\S+/mcp)\n")
HANDLERS = '''
from toolkeeper.server import ToolHandlers

HANDLERS = ToolHandlers()

def calc(arguments):
    if arguments["a"] % 10 == 3:
        raise RuntimeError("unlucky")
    return {"a": arguments["a"]}

HANDLERS.bind("calc", calc)
'''
POLICY = {"minSamples": 10, "maxErrorRate": 0.05, "latency": {"percentile": 90, "maxMs": 10000},
          "baseline": {"maxErrorRateDelta": 0.02}}


def _contract(version: str) -> dict[str, Any]:
    return {"name": "calc", "version": version, "title": "calc", "description": "The calc tool.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}},
                            "required": ["a"]},
            "dataClassification": "internal", "sideEffect": "read"}


def _call(http: httpx.Client, url: str, request_id: int, a: int, version: str) -> None:
    response = http.post(url, headers={
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call", "Mcp-Name": "calc"}, json={
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
        "params": {"name": "calc", "arguments": {"a": a}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}, "schemaVersion": version}}})
    assert response.status_code == 200, response.text


def _gateway(tmp_path: Path, metrics_port: int | None = None) -> tuple[Path, str]:
    """The gateway's configuration file and registry URL."""
    estate = tmp_path / "estate"
    estate.mkdir()
    for version in ("1.0.0", "1.1.0"):
        (estate / f"calc-{version}.json").write_text(json.dumps(_contract(version)))
    (tmp_path / "gate_handlers.py").write_text(HANDLERS)
    registry = f"sqlite://{tmp_path / 'registry.db'}"
    config = tmp_path / "gateway.toml"
    config.write_text(f'[registry]\nurl = "{registry}"\n[server]\nport = 0\n'
                      f'[estate]\ndirs = ["{estate}"]\n'
                      f'handlers = ["{tmp_path / "gate_handlers.py"}:HANDLERS"]\n'
                      '[calllog]\nflush_interval_ms = 100\n[logging]\nlevel = "warning"\n'
                      + (f"[metrics]\nport = {metrics_port}\n" if metrics_port else ""))
    return config, registry


def _load(url: str) -> None:
    """60 calls of 1.1.0 (a % 10 == 3 raises: 6 of them) and 30 of 1.0.0 (none raise)."""
    with httpx.Client(timeout=30) as http:
        for i in range(60):
            _call(http, url, i, i, "1.1.0")
            if i % 2 == 0:
                _call(http, url, 1000 + i, 2 * i, "1.0.0")


def _logged_latencies(registry: str, version: str) -> list[float]:
    logged = json.loads(CliRunner().invoke(cli, ["calls", "--registry", registry, "--tool",
                                                 "calc", "--limit", "1000", "--json"]).stdout)
    return [row["latency_ms"] for row in logged if row["version"] == version]


def test_a_call_log_window_holds_exactly_the_calls_sent_to_the_version(tmp_path: Path) -> None:
    config, registry = _gateway(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", "--config",
                             str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = read_until(proc.stderr, READY, 60).group(1).decode()
        keep_draining(proc.stderr)
        _load(url)
        proc.terminate()  # a clean stop writes the last rows
        assert proc.wait(timeout=30) == 0
    finally:
        stop_process(proc)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    args = ["gate", "window", "--policy", str(policy), "--calls", "--tool", "calc",
            "--since", "1h", "--registry", registry, "--json"]
    done = CliRunner().invoke(cli, [*args, "--version", "1.1.0", "--baseline-version", "1.0.0"])
    assert done.exit_code == 1, done.output
    result = json.loads(done.stdout)
    assert (result["status"], result["samples"], result["errors"]) == ("failed", 60, 6)
    verdicts = {v["rule"]: v for v in result["verdicts"]}
    assert verdicts["window.error_rate"]["measured"] == 0.1
    assert verdicts["window.baseline.error_rate_delta"]["measured"] == 0.1
    latencies = _logged_latencies(registry, "1.1.0")
    assert verdicts["window.latency"]["measured"] == percentile(latencies, 90)
    baseline = CliRunner().invoke(cli, [*args, "--version", "1.0.0"])
    assert json.loads(baseline.stdout)["samples"] == 30
    ahead = CliRunner().invoke(cli, [*args, "--version", "1.1.0", "--since",
                                     "2999-01-01T00:00:00"])
    assert ahead.exit_code == 2 and json.loads(ahead.stdout)["error"]["code"] == \
        "cli.option_conflict"  # --until (now) before --since


BOUNDS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)
"""The latency histogram's finite bounds (observability/metrics.py), in milliseconds."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_a_metrics_window_counts_exactly_the_calls_sent_while_it_was_observed(
        tmp_path: Path) -> None:
    port = _free_port()
    config, registry = _gateway(tmp_path, metrics_port=port)
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({**POLICY, "resources": {"maxRssBytes": 2**40,
                                                          "maxOpenFds": 10**6}}))
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", "--config",
                             str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    gate: subprocess.Popen[bytes] | None = None
    try:
        url = read_until(proc.stderr, READY, 60).group(1).decode()
        keep_draining(proc.stderr)
        gate = subprocess.Popen(
            [sys.executable, "-m", "toolkeeper", "gate", "window", "--policy", str(policy),
             "--metrics", f"http://127.0.0.1:{port}/metrics", "--for", "10m", "--tool", "calc",
             "--version", "1.1.0", "--baseline-version", "1.0.0", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
        read_until(gate.stderr, re.compile(rb"observing \S+ for 600 s"), 60)
        _load(url)
        gate.send_signal(signal.SIGINT)  # ends the window now: the last scrape is taken
        out, _ = gate.communicate(timeout=60)
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    finally:
        if gate is not None:
            stop_process(gate)
        stop_process(proc)
    assert gate.returncode == 1, out
    result = json.loads(out)
    assert (result["status"], result["samples"], result["errors"]) == ("failed", 60, 6)
    verdicts = {v["rule"]: v for v in result["verdicts"]}
    assert verdicts["window.error_rate"]["measured"] == 0.1
    assert verdicts["window.baseline.error_rate_delta"]["measured"] == 0.1
    assert verdicts["window.resources.rss"]["status"] == "passed"
    assert verdicts["window.resources.rss"]["measured"] > 10**6  # a Python process's RSS
    assert verdicts["window.resources.open_fds"]["measured"] > 3
    true_p90 = percentile(_logged_latencies(registry, "1.1.0"), 90)
    assert true_p90 is not None
    assert verdicts["window.latency"]["measured"] == BOUNDS_MS[
        bisect.bisect_left(BOUNDS_MS, true_p90)]  # the bucket that holds it: its upper bound
