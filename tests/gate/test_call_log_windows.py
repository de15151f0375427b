"""``toolkeeper gate window --calls`` against a real ``toolkeeper serve`` (SQLite registry,
durable call log) under load the test sends: the window of a tool version holds exactly the
calls sent to it (count and errors), its latency percentile is the nearest rank of the
latencies the log holds, and the baseline version over the same time is compared with it."""

from __future__ import annotations

import json
import re
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


def test_a_call_log_window_holds_exactly_the_calls_sent_to_the_version(tmp_path: Path) -> None:
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
                      '[calllog]\nflush_interval_ms = 100\n[logging]\nlevel = "warning"\n')
    proc = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", "--config",
                             str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = read_until(proc.stderr, READY, 60).group(1).decode()
        keep_draining(proc.stderr)
        with httpx.Client(timeout=30) as http:
            for i in range(60):  # 1.1.0: a % 10 == 3 raises, 6 of 60; 1.0.0: 30, none raise
                _call(http, url, i, i, "1.1.0")
                if i % 2 == 0:
                    _call(http, url, 1000 + i, 2 * i, "1.0.0")
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
    logged = json.loads(CliRunner().invoke(cli, ["calls", "--registry", registry, "--tool",
                                                 "calc", "--limit", "1000", "--json"]).stdout)
    latencies = [row["latency_ms"] for row in logged if row["version"] == "1.1.0"]
    assert verdicts["window.latency"]["measured"] == percentile(latencies, 90)
    baseline = CliRunner().invoke(cli, [*args, "--version", "1.0.0"])
    assert json.loads(baseline.stdout)["samples"] == 30
    ahead = CliRunner().invoke(cli, [*args, "--version", "1.1.0", "--since",
                                     "2999-01-01T00:00:00"])
    assert ahead.exit_code == 2 and json.loads(ahead.stdout)["error"]["code"] == \
        "cli.option_conflict"  # --until (now) before --since
