"""At the scale of the attack (20,000 legacy ``initialize`` requests from one tenant's API key,
twice the global session bound), the default per-principal session bounds keep another
tenant's idle session alive: the flooding key keeps only its own newest
``DEFAULT_MAX_PER_CREDENTIAL`` sessions, and the table never holds more than that beside the
other tenant's one.

The real Streamable HTTP app and API-key resolver over a memory registry, driven in process
(one ASGI exchange per request, as uvicorn would make it) to keep 20,000 requests fast.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

from toolkeeper.auth.keys import issue_key
from toolkeeper.auth.resolver import build_resolver
from toolkeeper.config import AuthSettings
from toolkeeper.protocol.sessions import DEFAULT_MAX_PER_CREDENTIAL, DEFAULT_MAX_SESSIONS
from toolkeeper.registry import Registry
from toolkeeper.registry.apikeys import key_store
from toolkeeper.server import build_gateway
from toolkeeper.transports import HttpConfig, create_asgi_app

FLOOD: Final = 20_000
INIT: Final = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "flood", "version": "1"}}}).encode()
INITIALIZED: Final = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}
                              ).encode()
LIST: Final = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()


def scope(token: str, session: str | None = None) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"),
               (b"authorization", f"Bearer {token}".encode())]
    if session is not None:
        headers += [(b"mcp-session-id", session.encode()),
                    (b"mcp-protocol-version", b"2025-11-25")]
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
            "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}


async def post(app: Any, request: dict[str, Any], body: bytes
               ) -> tuple[int, dict[bytes, bytes], bytes]:
    """One request: its status, headers and body."""
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(request, receive, send)
    return (sent[0]["status"], dict(sent[0]["headers"]),
            b"".join(m.get("body", b"") for m in sent[1:]))


def test_twenty_thousand_initialize_requests_of_one_tenant_never_end_another_tenants_session(
        ) -> None:
    registry = Registry.open("memory:")
    keys = key_store(registry.store)
    acme = issue_key(keys, tenant="acme", scopes=[], clearance="public").token
    globex = issue_key(keys, tenant="globex", scopes=[], clearance="public").token
    gateway = build_gateway(registry, resolve_principal=build_resolver(
        AuthSettings(methods=("keys",)), registry, resource="http://127.0.0.1:8000/mcp"))
    app = create_asgi_app(gateway.kernel, HttpConfig(json_response=True))
    sessions = gateway.kernel.sessions
    ended: list[str] = []
    sessions.ended.append(ended.append)
    assert FLOOD >= 2 * DEFAULT_MAX_SESSIONS  # past the global line, as the attack went

    async def run() -> None:
        status, headers, _ = await post(app, scope(acme), INIT)
        assert status == 200
        kept = headers[b"mcp-session-id"].decode()
        assert (await post(app, scope(acme, kept), INITIALIZED))[0] == 202
        opened: list[str] = []
        for _ in range(FLOOD):
            status, headers, _ = await post(app, scope(globex), INIT)
            assert status == 200
            opened.append(headers[b"mcp-session-id"].decode())
            assert len(sessions) <= DEFAULT_MAX_PER_CREDENTIAL + 1
        assert len(sessions) == DEFAULT_MAX_PER_CREDENTIAL + 1
        assert kept not in ended and len(ended) == FLOOD - DEFAULT_MAX_PER_CREDENTIAL
        status, _, body = await post(app, scope(acme, kept), LIST)
        assert status == 200 and "tools" in json.loads(body)["result"]
        for lost in (opened[0], opened[-DEFAULT_MAX_PER_CREDENTIAL - 1]):
            assert (await post(app, scope(globex, lost), LIST))[0] == 404
        assert sessions.get(opened[-DEFAULT_MAX_PER_CREDENTIAL]) is not None

    try:
        asyncio.run(run())
    finally:
        registry.close()
