"""``toolkeeper serve``'s log output (stderr) carries no secret: a handler that raises with
every secret of the redaction corpus in its message (as a repr, JSON, ``key=value`` pairs
and header lines), served by a real process over HTTP and over stdio, and requests carrying
secrets in their query string (uvicorn's access log). Every wait is bounded."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from process_kit import read_until
from redaction_kit import CORPUS, leaks
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.registry import Registry

COMMAND = [sys.executable, "-m", "toolkeeper.cli.serve_cmd"]
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
           "Mcp-Method": "tools/call", "Mcp-Name": "boom"}
HANDLERS = """\
from redaction_kit import render
from toolkeeper.server import ToolHandlers

handlers = ToolHandlers()


@handlers.tool("boom")
def boom(arguments):
    raise ValueError(render(arguments))
"""


@pytest.fixture
def served(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A registry holding the ``boom`` tool, and the environment that finds its handlers."""
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    (tmp_path / "boom_tools.py").write_text(HANDLERS)
    with Registry.open(url) as registry:
        registry.publish(spec_from_mapping({
            "name": "boom", "version": "1.0.0", "title": "Boom", "description": "Raises.",
            "inputSchema": {"type": "object", "additionalProperties": {"type": "string"}},
            "dataClassification": "public",
            "sideEffect": "read"}))
    tests = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join([str(tmp_path), tests, os.environ.get("PYTHONPATH", "")])
    return url, {**os.environ, "PYTHONPATH": path}


def _call(ident: int, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
            "params": {"name": "boom", "arguments": arguments, "_meta": ENVELOPE}}


def _assert_no_leaks(log: str) -> None:
    found = {case.name: hits for case in CORPUS if (hits := leaks(log, case))}
    assert found == {}


def test_handler_exceptions_and_query_strings_leave_no_secret_in_the_http_server_log(
        served: tuple[str, dict[str, str]]) -> None:
    registry_url, env = served
    proc = subprocess.Popen([*COMMAND, "--registry", registry_url, "--port", "0",
                             "--handlers", "boom_tools:handlers", "--access-log", "all"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    output: list[bytes] = []
    try:
        url = read_until(proc.stderr, re.compile(rb"toolkeeper gateway on (\S+/mcp)\n"),
                          30).group(1).decode()
        # drain both pipes while the server logs (a full pipe would block it)
        drains = [threading.Thread(target=lambda s=s: output.append(s.read()), daemon=True)
                  for s in (proc.stdout, proc.stderr)]
        for drain in drains:
            drain.start()
        with httpx.Client(timeout=10) as http:
            for ident, case in enumerate(CORPUS):
                response = http.post(url, json=_call(ident, case.arguments()), headers=HEADERS)
                assert response.status_code == 200
                assert response.json()["result"]["isError"] is True
                query = {case.key or case.name: case.secrets[0]}
                assert http.post(url, params=query, json=_call(ident, {}),
                                 headers=HEADERS).status_code == 200
                assert http.get(url.replace("/mcp", "/elsewhere"), params=query
                                ).status_code == 404
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        for drain in drains:
            drain.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    log = b"".join(output).decode()
    assert log.count("tool boom 1.0.0 raised") == 2 * len(CORPUS)  # with and without secrets
    assert log.count("Traceback") == 2 * len(CORPUS)
    assert log.count('"POST /mcp?') == len(CORPUS)
    assert log.count('"GET /elsewhere?') == len(CORPUS)
    _assert_no_leaks(log)


def test_handler_exceptions_leave_no_secret_in_the_stdio_server_log(
        served: tuple[str, dict[str, str]]) -> None:
    registry_url, env = served
    requests = b"".join(json.dumps(_call(ident, case.arguments())).encode() + b"\n"
                        for ident, case in enumerate(CORPUS))
    done = subprocess.run([*COMMAND, "--registry", registry_url, "--stdio",
                           "--handlers", "boom_tools:handlers"], input=requests,
                          capture_output=True, timeout=60, env=env, check=False)
    assert done.returncode == 0
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["result"]["isError"] for r in replies] == [True] * len(CORPUS)
    log = done.stderr.decode()
    assert log.count("tool boom 1.0.0 raised") == len(CORPUS)
    _assert_no_leaks(log)
