"""Several gateway replicas share one PostgreSQL registry (issue 3, SPEC 2.3/2.4): a change made
by another process reaches every replica through LISTEN/NOTIFY, each replica serves the new view,
and a client listening on a replica is told with ``notifications/tools/list_changed``. Real
processes, a real embedded PostgreSQL, real HTTP on 127.0.0.1; every wait is bounded."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from process_kit import keep_draining, read_until, stop_process

pytestmark = pytest.mark.postgres

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
READY = re.compile(rb"toolkeeper gateway on (\S+/mcp)\n")


def _toolkeeper(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolkeeper", *args]


@pytest.fixture
def replicas(pg_url: str, tmp_path: Path) -> Iterator[list[str]]:
    """Two gateway processes on one PostgreSQL registry with the demo estate; their URLs."""
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[IO[bytes]] = []
    urls: list[str] = []
    module = tmp_path / "refund_handlers.py"  # a replica lists only what it can run
    module.write_text("from toolkeeper.server import ToolHandlers\nhandlers = ToolHandlers()\n"
                      "handlers.bind('payments.refund', lambda arguments: 'refunded')\n")
    try:
        for _ in range(2):
            log = (tmp_path / f"replica{len(procs)}.log").open("wb")
            logs.append(log)
            proc = subprocess.Popen(
                _toolkeeper("serve", "--demo", "--registry", pg_url, "--port", "0",
                            "--log-level", "warning", "--handlers", f"{module}:handlers"),
                stdout=log, stderr=subprocess.PIPE)
            procs.append(proc)
            assert proc.stderr is not None
            urls.append(read_until(proc.stderr, READY, 60).group(1).decode())
            keep_draining(proc.stderr)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()  # all at once; stop_process then waits for each
        for proc in procs:
            stop_process(proc)
        for log in logs:
            log.close()


def _headers(method: str) -> dict[str, str]:
    return {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method}


def _tool_names(http: httpx.Client, url: str) -> list[str]:
    response = http.post(url, headers=_headers("tools/list"), json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": ENVELOPE}})
    assert response.status_code == 200
    return [tool["name"] for tool in response.json()["result"]["tools"]]


def _events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data:"):
            yield json.loads(line[5:])


def test_a_publish_by_another_process_reaches_every_replica_and_its_listeners(
        replicas: list[str], pg_url: str, tmp_path: Path) -> None:
    contract = json.loads((Path(__file__).parents[2] / "examples" /
                           "payments.lookup.json").read_text())
    contract.update(name="payments.refund", title="Refund a payment",
                    description="Refund a payment by its reference.", sideEffect="write")
    path = tmp_path / "refund.json"
    path.write_text(json.dumps(contract))

    with httpx.Client(timeout=httpx.Timeout(10.0, read=10.0)) as http:
        for url in replicas:
            assert "payments.refund" not in _tool_names(http, url)
        listen = {"jsonrpc": "2.0", "id": 77, "method": "subscriptions/listen",
                  "params": {"_meta": ENVELOPE, "notifications": {"toolsListChanged": True}}}
        with http.stream("POST", replicas[0], json=listen,
                         headers=_headers("subscriptions/listen")) as stream:
            assert stream.status_code == 200
            events = _events(stream.iter_lines())
            ack = next(events)
            assert ack["method"] == "notifications/subscriptions/acknowledged"

            # A third process publishes: neither replica made the change.
            published = subprocess.run(
                _toolkeeper("publish", str(path), "--registry", pg_url, "--actor", "ci"),
                capture_output=True, timeout=60)
            assert published.returncode == 0, published.stderr
            changed = next(events)  # bounded by the 10 s read timeout
            assert changed["method"] == "notifications/tools/list_changed"
            assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 77

        for url in replicas:
            assert "payments.refund" in _tool_names(http, url)
