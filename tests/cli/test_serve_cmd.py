"""``toolkeeper serve`` as a real process: stdio in both eras, HTTP on an ephemeral port, the
demo estate persisted in a SQLite file, custom handlers, and bad input. Every wait is bounded."""

from __future__ import annotations

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
import pytest

from process_kit import read_until
from toolkeeper.registry import Registry

COMMAND = [sys.executable, "-m", "toolkeeper.cli.serve_cmd"]
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}


def _lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def run_stdio(args: list[str], stdin: bytes, env: dict[str, str] | None = None
              ) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run([*COMMAND, *args, "--stdio"], input=stdin, capture_output=True,
                          timeout=60, env={**os.environ, **(env or {})}, check=False)
    out = [json.loads(line) for line in done.stdout.splitlines()]
    return done.returncode, out, done.stderr.decode()


def _path_with(directory: Path) -> dict[str, str]:
    """PYTHONPATH with ``directory`` first, keeping the sources under test ahead of the
    installed package (an older toolkeeper would refuse the test's newer registry schema)."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(directory),
                                                         os.environ.get("PYTHONPATH")]))}


@pytest.fixture
def registry_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'registry.db'}"


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}


def test_serve_demo_over_stdio_speaks_the_legacy_era_and_logs_only_to_stderr(
        registry_url: str) -> None:
    code, out, err = run_stdio(["--demo", "--registry", registry_url], _lines(
        INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "payments.lookup", "arguments": {"reference": "PMT-771"}}}))
    assert code == 0
    assert [m["id"] for m in out] == [1, 2]
    assert out[1]["result"]["content"][0]["text"].startswith("PMT-771: HELD, 250000 AED")
    assert "published payments.lookup 1.0.0" in err and "retired db.query 3.0.0" in err


def test_serve_demo_over_stdio_speaks_the_modern_era_when_the_first_request_does(
        registry_url: str) -> None:
    code, out, _ = run_stdio(["--demo", "--registry", registry_url, "--log-level", "warning"],
                             _lines({"jsonrpc": "2.0", "id": "a", "method": "tools/list",
                                     "params": {"_meta": ENVELOPE}}, {**INIT, "id": "b"}))
    assert code == 0
    assert out[0]["result"]["resultType"] == "complete"
    assert [t["name"] for t in out[0]["result"]["tools"]] == [
        "db.query", "payments.lookup", "tickets.create"]
    assert out[1]["error"]["code"] == -32022


def test_the_demo_estate_is_published_once_into_the_sqlite_registry(registry_url: str) -> None:
    run_stdio(["--demo", "--registry", registry_url], b"")
    code, _, err = run_stdio(["--demo", "--registry", registry_url], b"")
    assert code == 0 and "published" not in err
    with Registry.open(registry_url) as registry:
        assert [(s.name, str(s.version), s.status.value) for n in registry.names()
                for s in registry.versions(n)] == [
            ("db.query", "3.0.0", "retired"), ("db.query", "4.0.0", "active"),
            ("payments.lookup", "1.0.0", "active"), ("tickets.create", "1.0.0", "active")]


def test_the_registry_comes_from_the_environment_when_not_given(registry_url: str) -> None:
    code, out, _ = run_stdio(["--demo"], _lines({"jsonrpc": "2.0", "id": 1, "method":
                                                  "tools/list", "params": {"_meta": ENVELOPE}}),
                             env={"TOOLKEEPER_REGISTRY": registry_url})
    assert code == 0 and len(out[0]["result"]["tools"]) == 3
    with Registry.open(registry_url) as registry:
        assert registry.names() == ("db.query", "payments.lookup", "tickets.create")


def test_custom_handlers_are_loaded_from_module_attribute(tmp_path: Path,
                                                          registry_url: str) -> None:
    (tmp_path / "my_tools.py").write_text(
        "from toolkeeper.server import ToolHandlers\n"
        "handlers = ToolHandlers()\n"
        "handlers.bind('hello', lambda arguments: 'hello ' + arguments['who'])\n")
    from toolkeeper.contracts.spec import spec_from_mapping

    with Registry.open(registry_url) as registry:
        registry.publish(spec_from_mapping({
            "name": "hello", "version": "1.0.0", "title": "Hello", "description": "Greets.",
            "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}},
            "dataClassification": "public", "sideEffect": "read"}))
    code, out, _ = run_stdio(
        ["--registry", registry_url, "--handlers", "my_tools:handlers"],
        _lines({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "hello", "arguments": {"who": "ada"}, "_meta": ENVELOPE}}),
        env=_path_with(tmp_path))
    assert code == 0 and out[0]["result"]["content"][0]["text"] == "hello ada"


@pytest.mark.parametrize(("args", "code"), [
    (["--registry", "bogus:nowhere"], "config.bad_url"),
    (["--registry", "memory:", "--handlers", "no_such_module_xyz:handlers"],
     "cli.handlers_reference"),
    (["--registry", "memory:", "--handlers", "json"], "config.bad_value"),
    (["--registry", "memory:", "--handlers", "raising_tools:handlers"], "cli.handlers_failed"),
    (["--registry", "memory:", "--handlers", "broken_tools:handlers"], "cli.handlers_failed"),
])
def test_bad_input_exits_2_with_a_stable_code_and_no_traceback(
        tmp_path: Path, args: list[str], code: str) -> None:
    (tmp_path / "raising_tools.py").write_text('raise RuntimeError("boom at import")\n')
    (tmp_path / "broken_tools.py").write_text("def handlers(:\n")
    status, out, err = run_stdio(args, b"", env=_path_with(tmp_path))
    assert (status, out) == (2, [])
    assert f"[{code}]" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("path", ["nopath", "/mcp path", ""])
def test_a_path_that_is_not_an_absolute_url_path_exits_2(path: str) -> None:
    status, out, err = run_stdio(["--registry", "memory:", "--path", path], b"")
    assert (status, out) == (2, [])
    assert "Traceback" not in err


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_serve_demo_over_http_on_an_ephemeral_port_and_stop_cleanly_on_a_signal(
        registry_url: str, stop: signal.Signals) -> None:
    proc = subprocess.Popen([*COMMAND, "--demo", "--registry", registry_url, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = read_until(proc.stderr, re.compile(rb"toolkeeper gateway on (\S+/mcp)\n"),
                          30).group(1).decode()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        with httpx.Client(timeout=10) as http:
            response = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                            "params": {"name": "tickets.create",
                                                       "arguments": {"title": "printer"},
                                                       "_meta": ENVELOPE}},
                                 headers={"Accept": "application/json, text/event-stream",
                                          "MCP-Protocol-Version": "2026-07-28",
                                          "Mcp-Method": "tools/call",
                                          "Mcp-Name": "tickets.create"})
        assert response.status_code == 200
        assert response.json()["result"]["structuredContent"]["ticket"].startswith("TCK-")
        proc.send_signal(stop)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_an_unusable_address_exits_2() -> None:
    with socket.socket() as taken:  # a loopback port already bound: the anonymous principal
        taken.bind(("127.0.0.1", 0))  # needs a loopback host, so that is the unusable one
        taken.listen(1)
        port = str(taken.getsockname()[1])
        done = subprocess.run([*COMMAND, "--registry", "memory:", "--port", port],
                              capture_output=True, timeout=60, check=False)
    assert done.returncode == 2 and b"cannot listen" in done.stderr
