"""Limits over real HTTP: a principal over its rate gets 429 with Retry-After (200 in its legacy
session, which lives on) while another principal is unaffected; a handler past its call
timeout is cancelled, answered as timed out and logged ``timeout``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from http_kit import legacy_headers, modern_body, modern_headers, post

from toolkeeper.contracts.spec import DataClassification, spec_from_mapping
from toolkeeper.errors import PrincipalError
from toolkeeper.protocol import TransportFacts
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import InMemoryCallLog, ToolContext, ToolHandlers, build_gateway
from toolkeeper.server.limits import (
    TIMEOUT_META_KEY,
    LimitsSettings,
    TenantLimits,
    ToolLimits,
    build_limits,
)
from toolkeeper.transports import create_asgi_app, serve_in_thread

_TENANTS = {"alice": "acme", "bob": "globex", "carol": "initech", "dave": "acme"}


def _resolve(facts: TransportFacts) -> Principal:
    """``Authorization: Bearer <name>``: a principal of that name's tenant and credential."""
    name = (facts.headers.get("authorization") or "").removeprefix("Bearer ")
    if name not in _TENANTS:
        raise PrincipalError("unknown test caller", code="principal.tenant_invalid")
    return Principal(_TENANTS[name], frozenset(), DataClassification.RESTRICTED,
                     credential=name)


def _contract(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


@dataclass
class Served:
    url: str
    log: InMemoryCallLog
    cancelled: threading.Event
    finished: threading.Event


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    registry = Registry.open("memory:")
    for name in ("calc", "slow"):
        registry.publish(_contract(name))
    cancelled, finished = threading.Event(), threading.Event()
    handlers = ToolHandlers()

    @handlers.tool("calc")
    async def calc(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return "ok"

    @handlers.tool("slow")
    async def slow(arguments: dict[str, Any], ctx: ToolContext) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        finished.set()  # never: the timeout cancels the sleep
        return "slept"

    limits = build_limits(LimitsSettings(
        rate_per_s=0.01, burst=2, tenants={"initech": TenantLimits(rate_per_s=0.0)},
        tools={"slow": ToolLimits(call_timeout_s=0.2)}))
    log = InMemoryCallLog()
    gateway = build_gateway(registry, handlers, resolve_principal=_resolve, limits=limits,
                            call_log=log)
    with serve_in_thread(create_asgi_app(gateway.kernel)) as running:
        yield Served(running.url, log, cancelled, finished)


def _call(client: httpx.Client, url: str, who: str, name: str, request_id: int = 1
          ) -> httpx.Response:
    return post(client, url, modern_body("tools/call", request_id, name=name, arguments={}),
                {**modern_headers("tools/call", name), "Authorization": f"Bearer {who}"})


def test_a_principal_over_its_rate_gets_429_with_retry_after_and_another_is_unaffected(
        served: Served) -> None:
    with httpx.Client(timeout=10) as client:
        for _ in range(2):
            assert _call(client, served.url, "alice", "calc").json()["result"]["isError"] \
                is False
        refused = _call(client, served.url, "alice", "calc")
        assert refused.status_code == 429
        error = refused.json()["error"]
        assert error["code"] == -31429
        assert error["data"] == {"retryAfterS": 100, "limit": "rate"}
        assert refused.headers["retry-after"] == "100"
        other = _call(client, served.url, "bob", "calc")
        assert other.status_code == 200 and other.json()["result"]["isError"] is False


def _legacy(client: httpx.Client, url: str, body: dict[str, Any], session: str | None
            ) -> httpx.Response:
    headers = {**legacy_headers(session), "Authorization": "Bearer dave"}
    return post(client, url, {"jsonrpc": "2.0", **body}, headers)


def test_a_legacy_session_over_its_rate_gets_the_error_with_200_and_lives_on(
        served: Served) -> None:
    initialize = {"id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    with httpx.Client(timeout=10) as client:
        # dave (acme, a credential of its own): burst 2, the initialize takes one of them
        init = _legacy(client, served.url, initialize, None)
        session = init.headers["mcp-session-id"]
        statuses = [_call(client, served.url, "dave", "calc").status_code for _ in range(2)]
        assert statuses == [200, 429]
        again = _legacy(client, served.url, initialize, None)  # the same bucket: refused too
        assert (again.status_code, again.json()["error"]["code"]) == (200, -31429)
        assert "mcp-session-id" not in again.headers
        assert _legacy(client, served.url, {"method": "notifications/initialized"},
                       session).status_code == 202
        refused = _legacy(client, served.url, {"id": 2, "method": "tools/call", "params": {
            "name": "calc", "arguments": {}}}, session)
        assert refused.status_code == 200
        assert refused.headers["retry-after"] == str(
            refused.json()["error"]["data"]["retryAfterS"])
        assert refused.json()["error"]["code"] == -31429
        ping = _legacy(client, served.url, {"id": 3, "method": "ping"}, session)
        assert ping.status_code == 200 and ping.json()["result"] == {}


def test_a_handler_past_its_timeout_is_cancelled_and_logged_timeout(served: Served) -> None:
    with httpx.Client(timeout=10) as client:
        reply = _call(client, served.url, "carol", "slow", 7)  # initech: no rate limit
    assert reply.status_code == 200
    result = reply.json()["result"]
    assert result["isError"] is True
    assert result["_meta"][TIMEOUT_META_KEY] == {"timeoutS": 0.2}
    assert result["content"][0]["text"] == "Tool 'slow' timed out after 0.2 s and was cancelled."
    assert served.cancelled.is_set() and not served.finished.is_set()
    assert [(r.tool, r.outcome) for r in served.log.records if r.tool == "slow"] == [
        ("slow", "timeout")]
