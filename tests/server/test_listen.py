"""``subscriptions/listen`` over real HTTP (and stdio): the acknowledgement, list_changed on a
registry publish and on a handler's announcement, the filter, the bounds, JSON mode, and a
server shutdown that ends open streams with their final result. Every wait is bounded by the
client's read timeout."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import pytest
from listen_kit import listen_body
from mcp import Client
from sdk_peer_kit import SignallingHub

from sse_kit import sse_messages
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.protocol import SUBSCRIPTION_ID_KEY
from toolkeeper.registry import Registry
from toolkeeper.server import ToolContext, ToolHandlers, build_app, build_gateway
from toolkeeper.server.changes import ChangeHub
from toolkeeper.transports import HttpConfig, ServerThread, StdioServer, runner

VERSION = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT_BOTH = "application/json, text/event-stream"
READ_TIMEOUT_S = 5.0
HELD_S = 3600.0  # a wait that, if it were waited out, only pytest's timeout would end


def tool(name: str) -> ToolSpec:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


def headers(method: str, name: str | None = None, accept: str = ACCEPT_BOTH) -> dict[str, str]:
    out = {"Accept": accept, "Content-Type": "application/json",
           "MCP-Protocol-Version": VERSION, "Mcp-Method": method}
    if name is not None:
        out["Mcp-Name"] = name
    return out


@contextmanager
def served(registry: Registry, handlers: ToolHandlers | None = None,
           config: HttpConfig | None = None, **options: Any) -> Iterator[tuple[str, ServerThread]]:
    app, _ = build_app(registry, handlers, http=config, **options)
    thread = ServerThread(app)
    running = thread.start()
    try:
        yield running.url, thread
    finally:
        thread.stop()


@contextmanager
def listening(client: httpx.Client, url: str, request_id: Any = 7, *,
              accept: str = ACCEPT_BOTH, **filters: Any
              ) -> Iterator[tuple[httpx.Response, Iterator[dict[str, Any]]]]:
    with client.stream("POST", url, content=listen_body(request_id, **filters),
                       headers=headers("subscriptions/listen", accept=accept)) as response:
        yield response, sse_messages(response)


@pytest.fixture
def registry() -> Iterator[Registry]:
    with Registry.open("memory:") as value:
        value.publish(tool("first.tool"))
        yield value


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT_S)) as http:
        yield http


def test_a_publish_through_the_registry_reaches_an_open_listen_stream(
        registry: Registry, client: httpx.Client) -> None:
    with served(registry) as (url, _), listening(client, url, 77, toolsListChanged=True) as (
            response, messages):
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        assert next(messages) == {
            "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": {"toolsListChanged": True},
                       "_meta": {SUBSCRIPTION_ID_KEY: 77}}}
        registry.publish(tool("second.tool"))
        assert next(messages) == {
            "jsonrpc": "2.0", "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID_KEY: 77}}}
        listed = client.post(url, headers=headers("tools/list"), content=json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": ENVELOPE}}).encode())
        assert [t["name"] for t in listed.json()["result"]["tools"]] == [
            "first.tool", "second.tool"]


def test_a_handler_announcing_a_change_reaches_every_listen_stream(
        registry: Registry, client: httpx.Client) -> None:
    registry.publish(tool("announce"))
    handlers = ToolHandlers()

    @handlers.tool("announce")
    def announce(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ctx.notify_tools_changed()
        return "announced"

    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "announce", "arguments": {}, "_meta": ENVELOPE}})
    with served(registry, handlers) as (url, _), \
            listening(client, url, "a", toolsListChanged=True) as (_, first), \
            listening(client, url, "b", toolsListChanged=True) as (_, second):
        assert next(first)["params"]["_meta"] == {SUBSCRIPTION_ID_KEY: "a"}
        assert next(second)["params"]["_meta"] == {SUBSCRIPTION_ID_KEY: "b"}
        result = client.post(url, headers=headers("tools/call", "announce"), content=call)
        assert result.json()["result"]["content"] == [{"type": "text", "text": "announced"}]
        for messages, tag in ((first, "a"), (second, "b")):
            assert next(messages) == {"jsonrpc": "2.0",
                                      "method": "notifications/tools/list_changed",
                                      "params": {"_meta": {SUBSCRIPTION_ID_KEY: tag}}}


def test_shutdown_ends_open_streams_with_their_final_result_and_is_not_held_by_them(
        registry: Registry, client: httpx.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also the filter: a stream that asked only for prompts hears nothing of a tool change.
    uvicorn's grace and the stop's own wait are an hour here: a stop held by the open streams
    would run into pytest's timeout, and one that cancelled them would cut their final result."""
    monkeypatch.setattr(runner, "GRACEFUL_SHUTDOWN_S", HELD_S)
    with served(registry) as (url, thread), \
            listening(client, url, 5, promptsListChanged=True) as (_, prompts_only), \
            listening(client, url, 6, toolsListChanged=True) as (_, tools):
        assert next(prompts_only)["params"]["notifications"] == {}
        assert next(tools)["params"]["notifications"] == {"toolsListChanged": True}
        registry.publish(tool("second.tool"))
        assert next(tools)["method"] == "notifications/tools/list_changed"
        thread.stop(timeout=HELD_S)
        for messages, request_id in ((prompts_only, 5), (tools, 6)):
            final = list(messages)
            assert [m.get("id") for m in final] == [request_id]
            assert final[0]["result"]["resultType"] == "complete"
            assert final[0]["result"]["_meta"][SUBSCRIPTION_ID_KEY] == request_id


def test_a_full_hub_refuses_another_listen_with_a_plain_json_internal_error(
        registry: Registry, client: httpx.Client) -> None:
    with served(registry, changes=ChangeHub.for_registry(registry, max_streams=1)) as (url, _), \
            listening(client, url, 1, toolsListChanged=True) as (_, messages):
        next(messages)
        refused = client.post(url, content=listen_body(2, toolsListChanged=True),
                              headers=headers("subscriptions/listen"))
        assert (refused.status_code, refused.headers["content-type"]) == (200, "application/json")
        assert (refused.json()["id"], refused.json()["error"]["code"]) == (2, -32603)


@pytest.mark.parametrize(("notifications", "path"), [
    (None, "$.params.notifications"),
    ({"toolsListChanged": "yes"}, "$.params.notifications.toolsListChanged"),
    ({"resourceSubscriptions": "test://x"}, "$.params.notifications.resourceSubscriptions"),
])
def test_a_malformed_filter_is_invalid_params_before_any_stream_opens(
        registry: Registry, client: httpx.Client, notifications: Any, path: str) -> None:
    params: dict[str, Any] = {"_meta": ENVELOPE}
    if notifications is not None:
        params["notifications"] = notifications
    with served(registry) as (url, _):
        response = client.post(url, headers=headers("subscriptions/listen"), content=json.dumps(
            {"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": params}))
    assert (response.status_code, response.json()["error"]["code"]) == (400, -32602)
    assert response.json()["error"]["data"]["path"] == path


def test_in_json_mode_listen_is_still_a_stream_and_needs_event_stream_in_accept(
        registry: Registry, client: httpx.Client) -> None:
    with served(registry, config=HttpConfig(json_response=True)) as (url, _):
        with listening(client, url, 1, accept="application/json",
                       toolsListChanged=True) as (response, _):
            assert response.status_code == 406
        with listening(client, url, 2, toolsListChanged=True) as (response, messages):
            assert response.headers["content-type"] == "text/event-stream"
            assert next(messages)["method"] == "notifications/subscriptions/acknowledged"


def test_listen_is_not_part_of_the_legacy_era(registry: Registry, client: httpx.Client) -> None:
    with served(registry) as (url, _):
        init = client.post(url, headers={"Accept": ACCEPT_BOTH, "Content-Type": "application/json"},
                           content=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                               "params": {"protocolVersion": "2025-11-25",
                                                          "capabilities": {},
                                                          "clientInfo": {"name": "t",
                                                                         "version": "1"}}}))
        assert init.json()["result"]["capabilities"]["tools"] == {"listChanged": True}
        session = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json",
                   "Mcp-Session-Id": init.headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-11-25"}
        client.post(url, headers=session, content=json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}))
        response = client.post(url, headers=session, content=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
             "params": {"notifications": {"toolsListChanged": True}}}))
    # An answer to a dispatched request: HTTP 200 in the legacy era (mcp-wire 10).
    assert (response.status_code, response.json()["error"]["code"]) == (200, -32601)


def test_discover_advertises_tools_list_changed(registry: Registry, client: httpx.Client
                                                ) -> None:
    with served(registry) as (url, _):
        response = client.post(url, headers=headers("server/discover"), content=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
             "params": {"_meta": ENVELOPE}}))
    assert response.json()["result"]["capabilities"]["tools"] == {"listChanged": True}


def test_on_stdio_a_listen_stream_is_acknowledged_and_cancelled_at_end_of_input(
        registry: Registry) -> None:
    gateway = build_gateway(registry)
    lines = [listen_body(9, toolsListChanged=True) + b"\n"]
    out = io.BytesIO()

    async def scenario() -> None:
        written = asyncio.Event()

        async def read_line() -> bytes | None:
            if lines:
                return lines.pop(0)
            await written.wait()  # end of input once the stream has said something
            return None

        async def write(data: bytes) -> None:
            out.write(data)
            written.set()

        await StdioServer(gateway.kernel, read_line, write).run()

    asyncio.run(asyncio.wait_for(scenario(), READ_TIMEOUT_S))
    messages = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [m["method"] for m in messages] == ["notifications/subscriptions/acknowledged"]
    assert len(gateway.changes) == 0



def test_a_client_that_hangs_up_leaves_the_hub(registry: Registry, client: httpx.Client) -> None:
    hub = SignallingHub.for_registry(registry)
    with served(registry, changes=hub) as (url, _):
        with listening(client, url, 1, toolsListChanged=True) as (_, messages):
            next(messages)
            assert len(hub) == 1
        assert hub.left.wait(READ_TIMEOUT_S)  # the server noticed the disconnect
        assert len(hub) == 0


async def _sdk_modern(url: str, registry: Registry) -> tuple[bool | None, str]:
    with anyio.fail_after(READ_TIMEOUT_S * 2):
        async with Client(url, mode="2026-07-28") as client, \
                client.listen(tools_list_changed=True) as subscription:
            registry.publish(tool("second.tool"))  # the stream is acknowledged: it is open
            async for event in subscription:
                return subscription.honored.tools_list_changed, type(event).__name__
    raise AssertionError("the stream ended without an event")


async def _sdk_legacy(url: str, registry: Registry, hub: SignallingHub) -> list[str]:
    heard = anyio.Event()
    methods: list[str] = []

    async def on_message(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            methods.append(method)
            heard.set()

    with anyio.fail_after(READ_TIMEOUT_S * 2):
        async with Client(url, mode="legacy", message_handler=on_message) as client:
            await client.list_tools()
            # the client opens its standalone GET stream in the background after initialize
            assert await anyio.to_thread.run_sync(hub.opened.wait, READ_TIMEOUT_S)
            registry.publish(tool("second.tool"))
            await heard.wait()
    return methods


def test_the_official_client_hears_a_registry_publish_in_both_eras(registry: Registry) -> None:
    with served(registry) as (url, _):
        assert anyio.run(_sdk_modern, url, registry) == (True, "ToolsListChanged")
    with Registry.open("memory:") as legacy_registry:
        legacy_registry.publish(tool("first.tool"))
        hub = SignallingHub.for_registry(legacy_registry)
        with served(legacy_registry, changes=hub) as (url, _):
            assert anyio.run(_sdk_legacy, url, legacy_registry, hub) == [
                "notifications/tools/list_changed"]
