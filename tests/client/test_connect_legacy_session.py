"""The legacy probe judges the ``Mcp-Session-Id`` that ``initialize`` mints by the
2025-11-25 transport: visible ASCII only (0x21 to 0x7E). A server that mints anything else
fails the probe (a recorded decision, exit-2 material), never a traceback on the next request.
Driven in process: a tiny ASGI legacy server, no socket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolkeeper.client import EraSelectionError, Target, connect

INITIALIZED = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
               "serverInfo": {"name": "legacy", "version": "1"}}


def _legacy_app(session_id: bytes) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        message = json.loads(body) if body else {}
        if message.get("method") == "initialize":
            data = json.dumps({"jsonrpc": "2.0", "id": message["id"],
                               "result": INITIALIZED}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"), (b"mcp-session-id", session_id)]})
            await send({"type": "http.response.body", "body": data})
            return
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


@pytest.mark.parametrize("session_id", [b"caf\xe9", b"a b", b"tab\there", b""])
def test_a_session_id_outside_visible_ascii_fails_the_legacy_probe(session_id: bytes) -> None:
    async def run() -> None:
        await connect(Target.from_asgi(_legacy_app(session_id)), era="legacy")

    with pytest.raises(EraSelectionError) as caught:
        asyncio.run(run())
    decision = caught.value.data["decision"]
    assert decision["verdict"] == "refused.legacy_invalid"
    assert decision["legacyEvidence"]["problems"] == [
        "$.headers.mcp-session-id: must be visible ASCII (0x21 to 0x7E)"]


def test_a_visible_ascii_session_id_is_kept_for_the_session() -> None:
    async def run() -> str | None:
        async with await connect(Target.from_asgi(_legacy_app(b"s-1~!")), era="legacy") as s:
            return s.session_id

    assert asyncio.run(run()) == "s-1~!"
