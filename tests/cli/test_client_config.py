"""``toolkeeper client-config``: the JSON Claude Desktop, Cursor and VS Code read, its shape per
client, credentials written only as given, and a client that works from it: the stdio command
line it prints, started as printed, answers MCP ``initialize`` and ``tools/list``; the HTTP
entry's URL and header reach a gateway that requires an API key."""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from process_kit import START_TIMEOUT_S, keep_draining, read_until, stop_process
from toolkeeper.cli.main import cli

_TOOLKEEPER = shutil.which("toolkeeper", path=str(Path(sys.executable).parent)) or "toolkeeper"
_ENV_REF = re.compile(r"\$\{env:(\w+)\}")
_MAX_LINES = 20
URL = "http://127.0.0.1:8000/mcp"


def _run(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if home is not None:
        env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    return subprocess.run([_TOOLKEEPER, *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def _in_process(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["client-config", *args])
    return result.exit_code, result.stdout, result.stderr


def _config(*args: str, subprocess_run: bool = False) -> dict[str, Any]:
    """The document printed for ``args``: by the ``toolkeeper`` script itself when the entry's
    command matters (``subprocess_run``), else in this process."""
    if subprocess_run:
        done = _run("client-config", *args)
        code, out, err = done.returncode, done.stdout, done.stderr
    else:
        code, out, err = _in_process(*args)
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    assert out == json.dumps(document, indent=2, sort_keys=True) + "\n"
    return document


def _entry(document: dict[str, Any], client: str) -> dict[str, Any]:
    servers = document["servers" if client == "vscode" else "mcpServers"]
    assert list(servers) == ["toolkeeper"]
    entry: dict[str, Any] = servers["toolkeeper"]
    return entry


@pytest.mark.parametrize("client", ["claude", "cursor", "vscode"])
def test_stdio_entry_starts_serve_stdio_by_absolute_path_with_the_registry_in_env(
        client: str, tmp_path: Path) -> None:
    document = _config("--client", client, "--demo", "--registry", "sqlite://rel.db",
                       subprocess_run=True)
    assert sorted(document) == (["servers"] if client == "vscode" else ["mcpServers"])
    entry = _entry(document, client)
    expected = {"command": os.path.abspath(_TOOLKEEPER), "args": ["serve", "--stdio", "--demo"],
                "env": {"TOOLKEEPER_REGISTRY": f"sqlite://{Path('rel.db').resolve()}"}}
    if client == "vscode":
        expected["type"] = "stdio"
    assert entry == expected
    assert Path(entry["command"]).is_absolute()


@pytest.mark.parametrize("client", ["claude", "cursor", "vscode"])
def test_a_client_started_from_the_printed_stdio_entry_lists_the_demo_tools(
        client: str, tmp_path: Path) -> None:
    registry = f"sqlite://{tmp_path / 'registry.db'}"
    entry = _entry(_config("--client", client, "--demo", "--registry", registry,
                           subprocess_run=True), client)
    env = {**os.environ, "HOME": str(tmp_path), **entry["env"]}
    proc = subprocess.Popen([entry["command"], *entry["args"]], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            bufsize=0)  # unbuffered: a line read is never held back
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": "2025-11-25",
                                                "capabilities": {},
                                                "clientInfo": {"name": client,
                                                               "version": "1"}}}).encode()
                         + b"\n")
        proc.stdin.flush()
        replies = _replies(proc, 1)
        assert replies[1]["result"]["protocolVersion"] == "2025-11-25"
        for message in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        tools = {tool["name"] for tool in _replies(proc, 2)[2]["result"]["tools"]}
        assert {"payments.lookup", "tickets.create", "db.query"} <= tools
    finally:
        proc.stdin.close()
        stop_process(proc)
        proc.stdout.close()


def _replies(proc: subprocess.Popen[bytes], wanted: int) -> dict[int, dict[str, Any]]:
    """Read ``proc``'s stdout until the response with id ``wanted``: at most ``_MAX_LINES``
    lines, each waited for at most ``START_TIMEOUT_S``."""
    assert proc.stdout is not None
    found: dict[int, dict[str, Any]] = {}
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        for _ in range(_MAX_LINES):
            assert selector.select(START_TIMEOUT_S), "no line in time"
            line = proc.stdout.readline()  # the server writes whole lines
            assert line, "the server closed its output"
            message = json.loads(line)
            if "id" in message:
                found[message["id"]] = message
            if wanted in found:
                return found
    raise AssertionError(f"no reply {wanted} in {_MAX_LINES} lines: {found}")


def test_http_entries_per_client_without_a_credential_have_no_header() -> None:
    assert _config("--client", "cursor", "--url", URL) == {
        "mcpServers": {"toolkeeper": {"url": URL}}}
    assert _config("--client", "vscode", "--url", URL) == {
        "servers": {"toolkeeper": {"type": "http", "url": URL}}}
    assert _config("--client", "claude", "--url", URL) == {
        "mcpServers": {"toolkeeper": {"command": "npx", "args": ["-y", "mcp-remote", URL]}}}


def test_an_env_reference_is_written_never_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TK_KEY", "tk_must_not_appear")
    for client in ("claude", "cursor", "vscode"):
        code, out, _ = _in_process("--client", client, "--url", URL, "--api-key-env", "TK_KEY")
        assert code == 0 and "tk_must_not_appear" not in out
    assert _entry(_config("--client", "cursor", "--url", URL, "--api-key-env", "TK_KEY"),
                  "cursor")["headers"] == {"Authorization": "Bearer ${env:TK_KEY}"}
    assert _entry(_config("--client", "claude", "--url", URL, "--api-key-env", "TK_KEY"),
                  "claude")["args"][-2:] == ["--header", "Authorization:Bearer ${TK_KEY}"]


def test_a_given_key_is_written_as_given_and_reaches_the_bridge_through_its_env() -> None:
    assert _config("--client", "claude", "--url", URL, "--api-key", "tk_given") == {
        "mcpServers": {"toolkeeper": {
            "command": "npx",
            "args": ["-y", "mcp-remote", URL, "--header",
                     "Authorization:${TOOLKEEPER_AUTHORIZATION}"],
            "env": {"TOOLKEEPER_AUTHORIZATION": "Bearer tk_given"}}}}
    assert _entry(_config("--client", "cursor", "--url", URL, "--api-key", "tk_given"),
                  "cursor")["headers"] == {"Authorization": "Bearer tk_given"}


def test_vscode_can_prompt_for_the_key_and_keep_it_out_of_the_file() -> None:
    assert _config("--client", "vscode", "--url", URL, "--prompt-key") == {
        "inputs": [{"type": "promptString", "id": "toolkeeper-api-key", "password": True,
                    "description": "toolkeeper API key"}],
        "servers": {"toolkeeper": {"type": "http", "url": URL, "headers": {
            "Authorization": "Bearer ${input:toolkeeper-api-key}"}}}}


@pytest.mark.parametrize(("args", "options"), [
    (("--stdio", "--url", URL), ["--stdio", "--url"]),
    (("--url", URL, "--demo"), ["--demo"]),
    (("--url", URL, "--registry", "sqlite:///x.db", "--config", "g.toml"),
     ["--config", "--registry"]),
    (("--api-key", "k"), ["--api-key"]),
    (("--url", URL, "--api-key", "k", "--api-key-env", "K"),
     ["--api-key", "--api-key-env", "--prompt-key"]),
    (("--client", "cursor", "--url", URL, "--prompt-key"), ["--prompt-key"]),
])
def test_conflicting_options_exit_2_with_a_stable_code(args: tuple[str, ...],
                                                       options: list[str]) -> None:
    code, out, err = _in_process(*args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.endswith("[client_config.conflict]\n")
    assert all(option in err for option in options)


def test_a_url_that_is_not_http_is_refused() -> None:
    code, _, err = _in_process("--url", "ftp://127.0.0.1/mcp")
    assert code == 2 and err.endswith("[client_config.url_invalid]\n")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize(("client", "how"), [("cursor", "env"), ("vscode", "key")])
def test_the_http_entry_reaches_a_gateway_that_requires_a_key(
        client: str, how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = f"sqlite://{tmp_path / 'registry.db'}"
    added = _run("keys", "add", "--create", "--registry", registry, "--tenant", "acme",
                 "--scope", "payments:read", "--clearance", "internal")
    assert added.returncode == 0, added.stderr
    key = added.stdout.strip()
    port = _free_port()
    proc = subprocess.Popen([_TOOLKEEPER, "serve", "--demo", "--auth", "keys", "--port",
                             str(port), "--registry", registry],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE,
                            env={**os.environ, "HOME": str(tmp_path)})
    try:
        assert proc.stderr is not None
        url = read_until(proc.stderr, re.compile(rb"toolkeeper gateway on (\S+)\n"),
                         START_TIMEOUT_S).group(1).decode()
        keep_draining(proc.stderr)
        monkeypatch.setenv("TK_TEST_KEY", key)
        flag = ("--api-key-env", "TK_TEST_KEY") if how == "env" else ("--api-key", key)
        entry = _entry(_config("--client", client, "--url", url, *flag), client)
        headers = {name: _ENV_REF.sub(lambda m: os.environ[m.group(1)], value)
                   for name, value in entry["headers"].items()}  # as the client resolves it
        assert headers == {"Authorization": f"Bearer {key}"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": client, "version": "1"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        assert httpx.post(entry["url"], json=body, timeout=10, headers=accept
                          ).status_code == 401
        answer = httpx.post(entry["url"], json=body, timeout=10, headers={**accept, **headers})
        assert answer.status_code == 200
    finally:
        stop_process(proc)
