"""``toolkeeper serve`` lists and serves only what it can run, and a start that fails stores
nothing: real subprocesses over real HTTP on 127.0.0.1, a SQLite registry file."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from process_kit import SRC, read_until, stop_process
from toolkeeper.registry import Registry

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
READY = re.compile(rb"toolkeeper gateway on (http://127\.0\.0\.1:(\d+)/mcp)\n")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO_TOOLS = ["db.query", "payments.lookup", "tickets.create"]
WAIT_S = 30.0
_ids = itertools.count(1)


@dataclass
class Gateway:
    url: str
    port: int
    startup: str
    """Standard error up to the ready line (the start-up report)."""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [SRC, os.environ.get("PYTHONPATH")]))}


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolkeeper", "serve", "--json-response", *args]


@contextmanager
def gateway(*args: str) -> Iterator[Gateway]:
    proc = subprocess.Popen(_command("--port", "0", *args), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env())
    try:
        match = read_until(proc.stderr, READY, WAIT_S)
        yield Gateway(match.group(1).decode(), int(match.group(2)),
                      match.string.decode(errors="replace"))
    finally:
        stop_process(proc)


def run_serve(*args: str) -> subprocess.CompletedProcess[str]:
    """A ``serve`` expected to fail at start (bounded by a timeout)."""
    return subprocess.run(_command(*args), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=_env(), timeout=WAIT_S, check=False)


def rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method,
            "params": {**params, "_meta": {**ENVELOPE, **params.get("_meta", {})}}}
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    response = httpx.post(url, content=json.dumps(body), headers=headers, timeout=WAIT_S)
    reply: dict[str, Any] = response.json()
    return reply


def listed(url: str) -> dict[str, str]:
    tools = rpc(url, "tools/list", {})["result"]["tools"]
    return {tool["name"]: tool["_meta"]["schemaVersion"] for tool in tools}


def stored(db: Path) -> tuple[list[str], int]:
    with Registry.open(f"sqlite:///{db}", create=False) as registry:
        return list(registry.names()), len(registry.audit())


def contract(name: str, version: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "version": version, "title": name, "description": f"The {name}.",
            "inputSchema": {"type": "object", "properties": properties},
            "dataClassification": "internal", "sideEffect": "read"}


def test_a_second_serve_on_a_taken_port_stores_nothing_and_the_first_lists_nothing_new(
        tmp_path: Path) -> None:
    db = tmp_path / "registry.db"
    registry_url = f"sqlite:///{db}"
    with gateway("--demo", "--registry", registry_url) as first:
        assert sorted(listed(first.url)) == DEMO_TOOLS
        before = stored(db)
        second = run_serve("--handlers", f"{EXAMPLES / 'typed_tools.py'}:handlers",
                           "--registry", registry_url, "--port", str(first.port))
        assert second.returncode == 2
        assert "[serve.listen_failed]" in second.stderr
        assert "in use" in second.stderr
        assert stored(db) == before  # no contract, no audit row
        assert "units.convert" not in before[0]
        assert sorted(listed(first.url)) == DEMO_TOOLS


def test_contracts_without_handlers_are_reported_and_not_listed_and_a_pin_is_unavailable(
        tmp_path: Path) -> None:
    estate = tmp_path / "estate"
    estate.mkdir()
    (estate / "calc-1.json").write_text(json.dumps(contract("calc", "1.0.0",
                                                            {"a": {"type": "integer"}})))
    (estate / "calc-2.json").write_text(json.dumps(contract("calc", "2.0.0",
                                                            {"a": {"type": "string"}})))
    (estate / "orphan.json").write_text(json.dumps(contract("orphan", "1.0.0", {})))
    module = tmp_path / "calc_handlers.py"
    module.write_text("from toolkeeper.server import ToolHandlers\n"
                      "handlers = ToolHandlers()\n"
                      "handlers.bind('calc', lambda arguments: 'two', version='2.0.0')\n"
                      "handlers.bind('ghost', lambda arguments: 'boo')\n")
    db = tmp_path / "registry.db"
    with gateway("--estate", str(estate), "--handlers", f"{module}:handlers",
                 "--registry", f"sqlite:///{db}") as served:
        report = served.startup
        assert re.search(r"serve\.contract_unbound: contract calc 1\.0\.0 ", report)
        assert re.search(r"serve\.contract_unbound: contract orphan 1\.0\.0 ", report)
        assert "contract calc 2.0.0" not in report
        assert re.search(r"serve\.handler_uncontracted: handler for ghost ", report)
        assert listed(served.url) == {"calc": "2.0.0"}
        pinned = rpc(served.url, "tools/call", {"name": "calc", "arguments": {"a": 1},
                                                "_meta": {"schemaVersion": "1.0.0"}})
        error = pinned["error"]
        assert error["code"] == -32602
        assert error["data"] == {"reason": "schema_version_unavailable", "tool": "calc",
                                 "requestedVersion": "1.0.0", "currentVersion": "2.0.0",
                                 "action": "relist"}
        unlisted = rpc(served.url, "tools/call", {"name": "orphan", "arguments": {}})
        assert unlisted["error"]["code"] == -32602
        ran = rpc(served.url, "tools/call", {"name": "calc", "arguments": {"a": "x"}})
        assert ran["result"]["isError"] is False
    assert sorted(stored(db)[0]) == ["calc", "orphan"]


def test_strict_refuses_an_estate_without_handlers_and_stores_nothing(tmp_path: Path) -> None:
    estate = tmp_path / "estate"
    estate.mkdir()
    (estate / "orphan.json").write_text(json.dumps(contract("orphan", "1.0.0", {})))
    db = tmp_path / "registry.db"
    refused = run_serve("--strict", "--estate", str(estate), "--registry", f"sqlite:///{db}",
                        "--port", "0")
    assert refused.returncode == 1
    assert "[serve.estate_unbound]" in refused.stderr
    assert "serve.contract_unbound: contract orphan 1.0.0" in refused.stderr
    assert stored(db) == ([], 0)


def test_a_handler_module_that_does_not_import_stores_nothing(tmp_path: Path) -> None:
    estate = tmp_path / "estate"
    estate.mkdir()
    (estate / "orphan.json").write_text(json.dumps(contract("orphan", "1.0.0", {})))
    module = tmp_path / "broken.py"
    module.write_text("raise RuntimeError('no')\n")
    db = tmp_path / "registry.db"
    refused = run_serve("--estate", str(estate), "--handlers", f"{module}:handlers",
                        "--registry", f"sqlite:///{db}", "--port", "0")
    assert refused.returncode == 2
    assert "[cli.handlers_failed]" in refused.stderr
    assert not db.exists() or stored(db) == ([], 0)
