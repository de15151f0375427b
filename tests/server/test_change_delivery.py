"""Change notification delivery in both eras (``subscriptions/listen``, the legacy GET
stream and stdio lines): who hears which registry change, how often, in which order relative to
``tools/list``, the bounds, cancelling, and the official SDK as a peer. Every wait is bounded."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from listen_kit import (
    ACCEPT_BOTH,
    ENVELOPE,
    LEGACY,
    WAIT_S,
    headers,
    listen_body,
    listening,
    served,
    sse_messages,
    stdio_peer,
    tool,
)
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment
from sdk_peer_kit import stdio_transport

import toolkeeper
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import DataClassification
from toolkeeper.protocol import SUBSCRIPTION_ID_KEY
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import build_gateway
from toolkeeper.server.changes import TOOLS_LIST_CHANGED, ChangeHub
from toolkeeper.server.principal import fixed_principal

LIST_CHANGED = "notifications/tools/list_changed"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'registry.db'}"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(WAIT_S)) as http:
        yield http


def list_names(client: httpx.Client, url: str) -> list[str]:
    response = client.post(url, headers=headers("tools/list"), content=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": ENVELOPE}}))
    return [t["name"] for t in response.json()["result"]["tools"]]


# --- another process's change (a second Registry on the same SQLite file) ----------------------


def test_a_publish_by_another_registry_on_the_same_sqlite_file_reaches_a_listen_stream(
        sqlite_url: str, client: httpx.Client) -> None:
    with Registry.open(sqlite_url) as served_registry, Registry.open(sqlite_url) as other:
        served_registry.publish(tool("first.tool"))
        hub = ChangeHub.for_registry(served_registry, refresh_s=0.05)
        with served(served_registry, changes=hub) as (url, _), \
                listening(client, url, 11, toolsListChanged=True) as (_, messages):
            assert next(messages)["method"] == ACKNOWLEDGED
            other.publish(tool("second.tool"))
            assert next(messages) == {"jsonrpc": "2.0", "method": LIST_CHANGED,
                                      "params": {"_meta": {SUBSCRIPTION_ID_KEY: 11}}}
            assert list_names(client, url) == ["first.tool", "second.tool"]
            other.deprecate("second.tool", Version.parse("1.0.0"))
            assert next(messages)["method"] == LIST_CHANGED
            assert list_names(client, url) == ["first.tool"]


# --- the hub: what fires, how often ------------------------------------------------------------


async def _heard(hub: ChangeHub, act: Any, quiet_s: float = 0.3) -> list[tuple[str, ...]]:
    """Open a stream, run ``act()`` (in a thread: registry callbacks run on the writer's thread)
    and collect every batch until the stream is quiet for ``quiet_s``."""
    stream = hub.open()
    try:
        await asyncio.to_thread(act)
        batches: list[tuple[str, ...]] = []
        while True:
            try:
                async with asyncio.timeout(quiet_s):
                    batch = await stream.next()
            except TimeoutError:
                return batches
            assert batch is not None
            batches.append(batch)
    finally:
        stream.close()


def test_a_refused_publish_and_an_identical_republish_fire_nothing(sqlite_url: str) -> None:
    with Registry.open(sqlite_url) as registry:
        registry.publish(tool("first.tool"))
        hub = ChangeHub.for_registry(registry, refresh_s=0.05)

        def act() -> None:
            registry.publish(tool("first.tool"))  # identical: returns the existing record
            with pytest.raises(Exception):  # noqa: B017 - a same-version different contract
                registry.publish(tool("first.tool", description="changed"))
            registry.generation  # noqa: B018 - a read: would notice a stray write

        assert asyncio.run(_heard(hub, act)) == []


def test_another_registrys_change_is_heard_exactly_once_even_when_reads_race_the_refresh(
        sqlite_url: str) -> None:
    with Registry.open(sqlite_url) as registry, Registry.open(sqlite_url) as other:
        registry.publish(tool("first.tool"))
        hub = ChangeHub.for_registry(registry, refresh_s=0.05)

        def act() -> None:
            other.publish(tool("second.tool"))
            for _ in range(20):
                registry.generation  # noqa: B018 - reads, as tools/list would make

        assert asyncio.run(_heard(hub, act)) == [(TOOLS_LIST_CHANGED,)]


def test_a_burst_of_changes_reaches_a_reader_that_did_not_read_as_one_notification() -> None:
    with Registry.open("memory:") as registry:
        hub = ChangeHub.for_registry(registry)

        def act() -> None:
            for i in range(200):
                registry.publish(tool(f"burst.t{i}"))

        assert asyncio.run(_heard(hub, act)) == [(TOOLS_LIST_CHANGED,)]


def test_deprecate_retire_and_a_redeprecation_with_a_new_message_each_fire() -> None:
    with Registry.open("memory:") as registry:
        registry.publish(tool("first.tool"))
        hub = ChangeHub.for_registry(registry)
        v1 = Version.parse("1.0.0")
        for act in (lambda: registry.deprecate("first.tool", v1, message="old"),
                    lambda: registry.deprecate("first.tool", v1, message="older"),
                    lambda: registry.retire("first.tool", v1)):
            assert asyncio.run(_heard(hub, act, 0.1)) == [(TOOLS_LIST_CHANGED,)]
        assert asyncio.run(_heard(hub, lambda: registry.retire("first.tool", v1), 0.1)) == []


# --- stdio -------------------------------------------------------------------------------------


def listen_message(request_id: Any, **filters: Any) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(listen_body(request_id, **filters))
    return message


def modern(request_id: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**params, "_meta": ENVELOPE}}


def test_on_stdio_a_listen_hears_a_publish_and_a_cancel_ends_it_without_a_response() -> None:
    with Registry.open("memory:") as registry:
        gateway = build_gateway(registry)

        async def scenario() -> None:
            async with stdio_peer(gateway.kernel, gateway.changes) as (peer, _):
                peer.send(listen_message("L1", toolsListChanged=True))
                assert (await peer.receive())["params"] == {
                    "notifications": {"toolsListChanged": True},
                    "_meta": {SUBSCRIPTION_ID_KEY: "L1"}}
                await asyncio.to_thread(registry.publish, tool("first.tool"))
                assert await peer.receive() == {"jsonrpc": "2.0", "method": LIST_CHANGED,
                                                "params": {"_meta": {SUBSCRIPTION_ID_KEY: "L1"}}}
                peer.send(modern(2, "tools/list"))
                answer = await peer.receive()
                assert [t["name"] for t in answer["result"]["tools"]] == ["first.tool"]
                peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": "L1"}})
                peer.send(modern(3, "tools/list"))
                assert (await peer.receive())["id"] == 3  # nothing for L1 came before it
                await asyncio.to_thread(registry.publish, tool("second.tool"))
                assert await peer.quiet(0.3)  # neither a notification nor a response for L1
                assert len(gateway.changes) == 0

        asyncio.run(scenario())


def test_on_stdio_a_modern_connection_never_hears_a_spontaneous_list_changed() -> None:
    with Registry.open("memory:") as registry:
        gateway = build_gateway(registry)

        async def scenario() -> None:
            async with stdio_peer(gateway.kernel, gateway.changes) as (peer, _):
                peer.send(modern(1, "server/discover"))
                discovered = await peer.receive()
                assert discovered["result"]["capabilities"]["tools"] == {"listChanged": True}
                await asyncio.to_thread(registry.publish, tool("first.tool"))
                assert await peer.quiet(0.3)

        asyncio.run(scenario())


def legacy_handshake(peer: Any) -> None:
    peer.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": LEGACY, "capabilities": {},
                          "clientInfo": {"name": "hunt", "version": "1"}}})


def test_on_stdio_a_legacy_session_hears_list_changed_once_initialized_and_not_before() -> None:
    with Registry.open("memory:") as registry:
        gateway = build_gateway(registry)

        async def scenario() -> None:
            async with stdio_peer(gateway.kernel, gateway.changes) as (peer, _):
                legacy_handshake(peer)
                init = await peer.receive()
                assert init["result"]["capabilities"]["tools"] == {"listChanged": True}
                await asyncio.to_thread(registry.publish, tool("early.tool"))
                assert await peer.quiet(0.2)  # not initialized yet
                peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
                peer.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
                assert (await peer.receive())["id"] == 1
                await asyncio.to_thread(registry.publish, tool("first.tool"))
                assert await peer.receive() == {"jsonrpc": "2.0", "method": LIST_CHANGED}
                peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
                names = [t["name"] for t in (await peer.receive())["result"]["tools"]]
                assert names == ["early.tool", "first.tool"]

        asyncio.run(scenario())


def test_on_stdio_a_server_stop_ends_an_open_listen_with_its_final_result() -> None:
    """mcp-wire 7.7: the graceful end of a listen stream is the final SubscriptionsListenResult;
    over HTTP a server stop sends it, and stdio's output is still writable on stop()."""
    with Registry.open("memory:") as registry:
        gateway = build_gateway(registry)

        async def scenario() -> list[dict[str, Any]]:
            async with stdio_peer(gateway.kernel, gateway.changes, own_changes=True) as (
                    peer, server):
                peer.send(listen_message(5, toolsListChanged=True))
                assert (await peer.receive())["method"] == ACKNOWLEDGED
                server.stop()
            out: list[dict[str, Any]] = []
            while not peer.outbox.empty():
                out.append(peer.outbox.get_nowait())
            return out

        final = asyncio.run(scenario())
        assert [m.get("id") for m in final] == [5]
        assert final[0]["result"]["resultType"] == "complete"
        assert final[0]["result"]["_meta"][SUBSCRIPTION_ID_KEY] == 5


# --- bounds: the stream cap is shared by every kind of stream ---------------------------------


def legacy_session(client: httpx.Client, url: str) -> dict[str, str]:
    init = client.post(url, headers={"Accept": ACCEPT_BOTH, "Content-Type": "application/json"},
                       content=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                           "params": {"protocolVersion": LEGACY,
                                                      "capabilities": {},
                                                      "clientInfo": {"name": "t", "version": "1"}}}))
    assert init.json()["result"]["capabilities"]["tools"] == {"listChanged": True}
    session = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json",
               "Mcp-Session-Id": init.headers["mcp-session-id"],
               "MCP-Protocol-Version": LEGACY}
    client.post(url, headers=session, content=json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}))
    return session


def test_a_full_hub_refuses_the_next_listen_and_legacy_stream_and_a_freed_slot_is_reusable(
        client: httpx.Client) -> None:
    with Registry.open("memory:") as registry:
        hub = ChangeHub.for_registry(registry, max_streams=1)
        with served(registry, changes=hub) as (url, _):
            with listening(client, url, 1, toolsListChanged=True) as (_, messages):
                assert next(messages)["method"] == ACKNOWLEDGED
                refused = client.post(url, content=listen_body(2, toolsListChanged=True),
                                      headers=headers("subscriptions/listen"))
                assert (refused.status_code, refused.json()["error"]["code"]) == (200, -32603)
                session = legacy_session(client, url)
                get = client.get(url, headers={**session, "Accept": "text/event-stream"})
                assert (get.status_code, get.json()["error"]["code"]) == (503, -32603)
            for _ in range(50):  # the server notices the hang-up at its next turn (bounded)
                if len(hub) == 0:
                    break
                asyncio.run(asyncio.sleep(0.02))
            with listening(client, url, 3, toolsListChanged=True) as (_, messages):
                assert next(messages)["params"]["_meta"] == {SUBSCRIPTION_ID_KEY: 3}


def test_a_full_hub_refuses_a_listen_on_stdio_with_an_internal_error_line() -> None:
    with Registry.open("memory:") as registry:
        gateway = build_gateway(registry, changes=ChangeHub.for_registry(registry,
                                                                         max_streams=1))

        async def scenario() -> None:
            async with stdio_peer(gateway.kernel, gateway.changes) as (peer, _):
                peer.send(listen_message(1, toolsListChanged=True))
                assert (await peer.receive())["method"] == ACKNOWLEDGED
                peer.send(listen_message(2, toolsListChanged=True))
                refused = await peer.receive()
                assert (refused["id"], refused["error"]["code"]) == (2, -32603)

        asyncio.run(scenario())


# --- legacy HTTP: the standalone GET stream ---------------------------------------------------


def test_a_legacy_get_stream_hears_another_registrys_change_and_tools_list_then_shows_it(
        sqlite_url: str, client: httpx.Client) -> None:
    with Registry.open(sqlite_url) as served_registry, Registry.open(sqlite_url) as other:
        served_registry.publish(tool("first.tool"))
        hub = ChangeHub.for_registry(served_registry, refresh_s=0.05)
        with served(served_registry, changes=hub) as (url, _):
            session = legacy_session(client, url)
            with client.stream("GET", url, headers={**session, "Accept": "text/event-stream"}
                               ) as stream:
                assert stream.status_code == 200
                messages = sse_messages(stream)
                other.publish(tool("second.tool"))
                assert next(messages) == {"jsonrpc": "2.0", "method": LIST_CHANGED}
                listed = client.post(url, headers=session, content=json.dumps(
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
                assert [t["name"] for t in listed.json()["result"]["tools"]] == [
                    "first.tool", "second.tool"]


# --- the official SDK client as the peer -------------------------------------------------------


async def _sdk_hears_and_refetches(url: str, other: Registry) -> tuple[list[str], list[str]]:
    with anyio.fail_after(WAIT_S * 2):
        async with Client(url, mode="2026-07-28") as client:
            before = [t.name for t in (await client.list_tools()).tools]  # cached (ttlMs > 0)
            async with client.listen(tools_list_changed=True) as subscription:
                await anyio.to_thread.run_sync(other.publish, tool("second.tool"))
                async for event in subscription:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
                after = [t.name for t in (await client.list_tools()).tools]
    return before, after


def test_the_sdk_client_refetches_a_cached_list_after_another_registrys_change(
        sqlite_url: str) -> None:
    with Registry.open(sqlite_url) as served_registry, Registry.open(sqlite_url) as other:
        served_registry.publish(tool("first.tool"))
        hub = ChangeHub.for_registry(served_registry, refresh_s=0.05)
        with served(served_registry, changes=hub, list_ttl_ms=60_000) as (url, _):
            assert anyio.run(_sdk_hears_and_refetches, url, other) == (
                ["first.tool"], ["first.tool", "second.tool"])


async def _sdk_listen_until_server_stops(url: str, thread: Any) -> str:
    with anyio.fail_after(WAIT_S * 2):
        async with Client(url, mode="2026-07-28") as client, \
                client.listen(tools_list_changed=True) as subscription:
            await anyio.to_thread.run_sync(thread.stop)
            try:
                async for _ in subscription:
                    pass
            except Exception as exc:  # SubscriptionLost: the stream was dropped
                return type(exc).__name__
            return "graceful"
    raise AssertionError("unreachable")


def test_the_sdk_client_sees_a_server_stop_as_the_graceful_end_of_its_listen() -> None:
    with Registry.open("memory:") as registry, served(registry) as (url, thread):
        assert anyio.run(_sdk_listen_until_server_stops, url, thread) == "graceful"


async def _sdk_listen_over_stdio(registry: Registry) -> tuple[object, str]:

    gateway = build_gateway(registry)
    with anyio.fail_after(WAIT_S * 2):
        async with Client(stdio_transport(gateway.kernel), mode="2026-07-28") as client, \
                client.listen(tools_list_changed=True, prompts_list_changed=True) as subscription:
            await anyio.to_thread.run_sync(registry.publish, tool("second.tool"))
            async for event in subscription:
                honored = subscription.honored.model_dump(by_alias=True, exclude_none=True)
                return honored, type(event).__name__
    raise AssertionError("the stream ended without an event")


def test_the_sdk_client_listens_over_stdio_and_is_told_prompts_are_not_honored() -> None:
    with Registry.open("memory:") as registry:
        assert anyio.run(_sdk_listen_over_stdio, registry) == (
            {"toolsListChanged": True}, "ToolsListChanged")


def test_the_default_cap_of_1024_streams_refuses_the_1025th_and_every_open_one_hears_once(
        ) -> None:
    with Registry.open("memory:") as registry:
        gateway = build_gateway(registry)
        assert gateway.changes.max_streams == 1024

        async def scenario() -> None:
            async with stdio_peer(gateway.kernel, gateway.changes) as (peer, _):
                for i in range(1024):
                    peer.send(listen_message(i, toolsListChanged=True))
                acks = [await peer.receive() for _ in range(1024)]
                assert {m["params"]["_meta"][SUBSCRIPTION_ID_KEY] for m in acks} == set(
                    range(1024))
                peer.send(listen_message("one-more", toolsListChanged=True))
                refused = await peer.receive()
                assert (refused["id"], refused["error"]["code"]) == ("one-more", -32603)
                await asyncio.to_thread(registry.publish, tool("first.tool"))
                heard = [await peer.receive() for _ in range(1024)]
                assert sorted(m["params"]["_meta"][SUBSCRIPTION_ID_KEY] for m in heard) == list(
                    range(1024))
                assert {m["method"] for m in heard} == {LIST_CHANGED}
                assert await peer.quiet(0.2)

        asyncio.run(scenario())


def test_on_modern_http_a_posted_cancel_for_a_listen_is_dropped_and_the_stream_keeps_hearing(
        client: httpx.Client) -> None:
    """mcp-wire 6 / audit 22: there is no HTTP notifications/cancelled in 2026; a listen is
    cancelled by closing its stream, and another caller cannot end it by naming its id."""
    with Registry.open("memory:") as registry, served(registry) as (url, _), \
            listening(client, url, 7, toolsListChanged=True) as (_, messages):
        assert next(messages)["method"] == ACKNOWLEDGED
        cancel = client.post(url, headers=headers("notifications/cancelled"), content=json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled",
             "params": {"requestId": 7, "_meta": ENVELOPE}}))
        assert (cancel.status_code, cancel.content) == (202, b"")
        registry.publish(tool("first.tool"))
        assert next(messages) == {"jsonrpc": "2.0", "method": LIST_CHANGED,
                                  "params": {"_meta": {SUBSCRIPTION_ID_KEY: 7}}}


def test_a_publish_by_another_replica_on_postgresql_reaches_a_listen_stream_by_notify(
        pg_url: str, client: httpx.Client) -> None:
    """SPEC 2.4: replicas learn of changes through LISTEN/NOTIFY (no refresh tick needed: the
    hub's idle re-read is set far beyond the read timeout)."""
    with Registry.open(pg_url) as served_registry, Registry.open(pg_url) as replica:
        served_registry.publish(tool("first.tool"))
        hub = ChangeHub.for_registry(served_registry, refresh_s=3600.0)
        with served(served_registry, changes=hub) as (url, _), \
                listening(client, url, "pg", toolsListChanged=True) as (_, messages):
            assert next(messages)["method"] == ACKNOWLEDGED
            replica.publish(tool("second.tool"))
            assert next(messages) == {"jsonrpc": "2.0", "method": LIST_CHANGED,
                                      "params": {"_meta": {SUBSCRIPTION_ID_KEY: "pg"}}}
            assert list_names(client, url) == ["first.tool", "second.tool"]
            replica.retire("second.tool", Version.parse("1.0.0"))
            assert next(messages)["method"] == LIST_CHANGED
            assert list_names(client, url) == ["first.tool"]


# --- the CLI's stdio server, another process writing the SQLite file --------------------------


_NAMED_HANDLERS = """from toolkeeper.server import ToolHandlers

handlers = ToolHandlers()
for _name in ("first.tool", "second.tool", "third.tool"):
    handlers.bind(_name, lambda arguments: "ran")
"""


def cli_params(db: Path) -> StdioServerParameters:
    """A CLI stdio server on ``db`` with handlers for the three tools these tests publish (a
    gateway lists only what it can run)."""
    module = db.parent / "named_handlers.py"
    module.write_text(_NAMED_HANDLERS)
    env = {**get_default_environment(), "PYTHONPATH": str(Path(toolkeeper.__file__).parents[1])}
    return StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "toolkeeper", "serve", "--stdio", "--log-level", "error",
        "--registry", f"sqlite:///{db}", "--handlers", f"{module}:handlers"])


async def _cli_modern(params: StdioServerParameters, other: Registry) -> tuple[str, list[str]]:
    with anyio.fail_after(WAIT_S * 2):
        async with Client(params, mode="2026-07-28") as client, \
                client.listen(tools_list_changed=True) as subscription:
            await anyio.to_thread.run_sync(other.publish, tool("second.tool"))
            async for event in subscription:
                return type(event).__name__, [t.name for t in (await client.list_tools()).tools]
    raise AssertionError("the stream ended without an event")


async def _cli_legacy(params: StdioServerParameters, other: Registry) -> list[str]:
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(getattr(message, "root", message), "method", None) == LIST_CHANGED:
            heard.set()

    with anyio.fail_after(WAIT_S * 2):
        async with Client(params, mode="legacy", message_handler=on_message) as client:
            await client.list_tools()  # the session is initialized: the server announces
            await anyio.to_thread.run_sync(other.publish, tool("third.tool"))
            await heard.wait()
            return [t.name for t in (await client.list_tools()).tools]


def test_the_cli_stdio_server_tells_the_sdk_of_another_processs_publish_in_both_eras(
        tmp_path: Path) -> None:
    db = tmp_path / "registry.db"
    with Registry.open(f"sqlite:///{db}") as other:
        other.publish(tool("first.tool"))
        assert anyio.run(_cli_modern, cli_params(db), other) == (
            "ToolsListChanged", ["first.tool", "second.tool"])
        assert anyio.run(_cli_legacy, cli_params(db), other) == [
            "first.tool", "second.tool", "third.tool"]


def test_a_change_outside_the_listeners_view_still_fires_as_spec_2_3_says(
        client: httpx.Client) -> None:
    """SPEC 2.3: any registry change invalidates every view and "the same change fires
    notifications/tools/list_changed to listening clients"; the notification means "re-fetch",
    and the re-fetch shows this listener the same list as before."""
    principal = Principal("local", frozenset(), DataClassification.RESTRICTED)
    with Registry.open("memory:") as registry, \
            served(registry, resolve_principal=fixed_principal(principal)) as (url, _), \
            listening(client, url, 1, toolsListChanged=True) as (_, messages):
        assert next(messages)["method"] == ACKNOWLEDGED
        before = list_names(client, url)
        registry.publish(tool("acme.only", tenants=["acme"]))
        registry.publish(tool("scoped.only", requiredScopes=["admin"]))
        assert next(messages)["method"] == LIST_CHANGED
        assert list_names(client, url) == before
