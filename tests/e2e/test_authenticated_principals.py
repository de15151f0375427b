"""Acceptance 1: one TOML file configures two API-key tenants and one RS256 JWKS-file issuer;
``toolkeeper serve --config`` runs as a real process, and the official SDK client (both eras,
bearer token on the connection) for each of three principals sees exactly its entitled tools
and can call exactly those; an unentitled tool's refusal equals a nonexistent one's byte for
byte."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from process_kit import keep_draining, read_until

SRC = Path(__file__).resolve().parents[2] / "src"
ISSUER = "https://idp.e2e"
TOOLS = ("ledger", "vault", "secret")
ESTATE = {
    "ledger": {"tenants": ["acme"]},
    "vault": {"requiredScopes": ["vault.admin"]},
    "secret": {"dataClassification": "confidential"},
}
HANDLERS = '''
from toolkeeper.server import ToolHandlers
handlers = ToolHandlers()
for _name in ("ledger", "vault", "secret"):
    handlers.bind(_name, lambda arguments, ctx: {"tenant": ctx.principal.tenant})
'''


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))


def _toolkeeper(*args: str) -> Any:
    run = subprocess.run([sys.executable, "-m", "toolkeeper", *args], capture_output=True,
                         env=_env(), timeout=60, check=True)
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("deploy")
    estate = tmp / "estate"
    estate.mkdir()
    for name, fields in ESTATE.items():
        (estate / f"{name}.json").write_text(json.dumps({
            "name": name, "version": "1.0.0", "title": name.title(),
            "description": f"The {name} tool.", "sideEffect": "read",
            "dataClassification": "internal",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            **fields}))
    (tmp / "e2e_handlers.py").write_text(HANDLERS)
    registry = f"sqlite:///{tmp}/registry.db"
    keys = {
        "acme": _toolkeeper("keys", "add", "--create", "--registry", registry, "--tenant", "acme",
                            "--clearance", "internal", "--json")["key"],
        "globex": _toolkeeper("keys", "add", "--registry", registry, "--tenant", "globex",
                              "--scope", "vault.admin", "--clearance", "confidential",
                              "--json")["key"],
    }
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    (tmp / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "alg": "RS256"}]}))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    resource = f"http://127.0.0.1:{port}/mcp"
    (tmp / "gateway.toml").write_text(f'''
[registry]
url = "{registry}"

[server]
host = "127.0.0.1"
port = {port}

[estate]
dirs = ["{estate}"]
handlers = ["{tmp / 'e2e_handlers.py'}:handlers"]

[auth]
methods = ["keys", "jwt"]
resource = "{resource}"

[[auth.jwt.issuers]]
issuer = "{ISSUER}"
jwks_file = "{tmp / 'jwks.json'}"
''')
    token = jwt.encode({"iss": ISSUER, "aud": resource, "sub": "robot", "tenant": "acme",
                        "scope": "vault.admin", "clearance": "restricted",
                        "exp": int(time.time()) + 3600}, private, algorithm="RS256",
                       headers={"kid": "k1"})
    process = subprocess.Popen([sys.executable, "-m", "toolkeeper", "serve", "--config",
                                str(tmp / "gateway.toml")], env=_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        read_until(process.stderr, re.compile(rb"toolkeeper gateway on "), 30)
        keep_draining(process.stderr)
        yield resource, {**keys, "jwt": token}
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


ENTITLED = {"acme": ["ledger"], "globex": ["secret", "vault"],
            "jwt": ["ledger", "secret", "vault"]}


async def _session(url: str, token: str, mode: str) -> tuple[list[str], dict[str, Any]]:
    calls: dict[str, Any] = {}
    with anyio.fail_after(30):
        return await _run(url, token, mode, calls)


async def _run(url: str, token: str, mode: str, calls: dict[str, Any]
               ) -> tuple[list[str], dict[str, Any]]:
    async with (httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode) as client):
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        for name in (*TOOLS, "nonexistent"):
            try:
                result = await client.call_tool(name, {"a": 1})
                calls[name] = result.structured_content
            except MCPError as exc:
                calls[name] = ("refused", exc.error.code)
    return names, calls


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
@pytest.mark.parametrize("who", sorted(ENTITLED))
def test_each_principal_sees_and_calls_exactly_its_entitled_tools_through_the_sdk(
        deployment: tuple[str, dict[str, Any]], who: str, mode: str) -> None:
    url, tokens = deployment
    names, calls = anyio.run(_session, url, tokens[who], mode)
    assert names == ENTITLED[who]
    tenant = "acme" if who != "globex" else "globex"
    for name in TOOLS:
        want = {"tenant": tenant} if name in ENTITLED[who] else calls["nonexistent"]
        assert calls[name] == want, (who, mode, name)
    assert calls["nonexistent"] == ("refused", -32602)


@pytest.mark.parametrize("legacy", [False, True])
def test_an_unentitled_tool_is_refused_byte_for_byte_like_a_nonexistent_one(
        deployment: tuple[str, dict[str, Any]], legacy: bool) -> None:
    url, tokens = deployment
    with httpx.Client(timeout=10) as http:
        headers = {"authorization": f"Bearer {tokens['acme']}",
                   "content-type": "application/json",
                   "accept": "application/json, text/event-stream"}
        if legacy:
            init = http.post(url, headers=headers, json={
                "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "e2e", "version": "1"}}})
            headers.update({"mcp-session-id": init.headers["mcp-session-id"],
                            "mcp-protocol-version": "2025-11-25"})
            http.post(url, headers=headers,
                      json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        answers = []
        for name in ("vault", "nonexistent"):
            params: dict[str, Any] = {"name": name, "arguments": {"a": 1}}
            extra = {}
            if not legacy:
                params["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                   "io.modelcontextprotocol/clientCapabilities": {}}
                extra = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                         "mcp-name": name}
            response = http.post(url, headers={**headers, **extra}, json={
                "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
            body = response.content.replace(name.encode(), b"<tool>")
            answers.append((response.status_code, response.headers.get("content-type"), body))
    assert answers[0] == answers[1]
