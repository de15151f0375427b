"""A request is judged against the registry as of a check for other processes' changes begun
after it arrived; one check per request serves the principal, the route and the view.

Two Registry objects on one SQLite file stand in for two gateway processes (each has its own
connection, and SQLite's ``PRAGMA data_version`` is how one notices the other's commits)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_kit import settled

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping, spec_to_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    decode_message,
    encode_message,
)
from toolkeeper.registry import Registry
from toolkeeper.server import build_gateway
from toolkeeper.transports import StdioServer

VERSION = "2026-07-28"
V1 = Version.parse("1.0.0")


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[Registry, Registry]]:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    here = Registry.open(url)
    install_demo(here)
    there = Registry.open(url)
    yield here, there
    here.close()
    there.close()


def request(method: str, params: dict[str, Any], name: str | None = None
            ) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    body = encode_message({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
        **params, "_meta": {PROTOCOL_VERSION_KEY: VERSION, CLIENT_CAPABILITIES_KEY: {},
                            **params.get("_meta", {})}}})
    pairs = [(b"content-type", b"application/json"), (b"mcp-protocol-version", VERSION.encode()),
             (b"mcp-method", method.encode())]
    if name is not None:
        pairs.append((b"mcp-name", name.encode()))
    return body, pairs


def lookup_pinned_to_v1() -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The demo's ``payments.lookup`` called with ``schemaVersion`` 1.0.0."""
    return request("tools/call", {
        "name": "payments.lookup", "arguments": {"reference": "PMT-771"},
        "_meta": {"schemaVersion": "1.0.0"}}, "payments.lookup")


def _next_major(registry: Registry) -> ToolSpec:
    current = registry.resolve("payments.lookup", V1)
    assert current is not None
    data = spec_to_mapping(current, lifecycle=False)
    data["version"] = "2.0.0"
    data["inputSchema"] = {**data["inputSchema"], "required": ["reference", "include_legs"]}
    return spec_from_mapping(data)


def pragma_count(registry: Registry) -> list[str]:
    """The checks for other processes' changes the registry asks its store for from now on
    (white box: one ``stale()`` each, which on SQLite reads the WAL index header and runs
    ``PRAGMA data_version`` when it moved: ``tests/registry/test_sqlite.py``)."""
    checks: list[str] = []
    store = registry._store
    stale = type(store).stale

    def counted() -> bool:
        checks.append("stale")
        return stale(store)

    store.stale = counted  # type: ignore[method-assign]
    return checks


def test_a_check_begun_after_a_request_arrived_serves_it_and_a_later_one_asks_again(
        twins: tuple[Registry, Registry]) -> None:
    here, there = twins
    arrived = time.perf_counter_ns()
    before = here.generation_since(arrived)
    there.deprecate("payments.lookup", V1, message="moving")
    # A check began after the first request arrived: it answers that request unchanged.
    assert here.generation_since(arrived) == before
    # A request arriving after the commit is judged by a new check, which sees it.
    assert here.generation_since(time.perf_counter_ns()) > before
    # Without an arrival time the store is always asked.
    there.deprecate("payments.lookup", V1, message="moving on")
    assert here.generation_since(0) > before + 1


def test_a_call_arriving_after_another_process_retired_its_version_is_refused(
        twins: tuple[Registry, Registry]) -> None:
    here, there = twins
    gateway = build_gateway(here, demo_handlers())
    body, pairs = lookup_pinned_to_v1()
    served = settled(gateway.kernel.handle_asgi(body, pairs, received_ns=time.perf_counter_ns()))
    assert served["result"]["isError"] is False
    there.publish(_next_major(there))
    there.retire("payments.lookup", V1)
    refused = settled(gateway.kernel.handle_asgi(body, pairs, received_ns=time.perf_counter_ns()))
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"]["reason"] == "schema_version_retired"


def test_one_store_check_serves_a_whole_tools_call_and_a_whole_tools_list(
        twins: tuple[Registry, Registry]) -> None:
    here, _ = twins
    gateway = build_gateway(here, demo_handlers())
    call = request("tools/call", {"name": "payments.lookup",
                                  "arguments": {"reference": "PMT-771"}}, "payments.lookup")
    listing = request("tools/list", {})
    for body, pairs in (call, listing):  # warm the caches
        settled(gateway.kernel.handle_asgi(body, pairs, received_ns=time.perf_counter_ns()))
    for body, pairs in (call, listing):
        statements = pragma_count(here)
        settled(gateway.kernel.handle_asgi(body, pairs, received_ns=time.perf_counter_ns()))
        assert statements == ["stale"]
        statements = pragma_count(here)
        settled(gateway.kernel.handle_asgi(body, pairs))  # no arrival time: ask every time
        assert statements == ["stale"] * 2


def test_over_stdio_one_store_check_serves_each_tools_call_and_sees_a_later_retire(
        twins: tuple[Registry, Registry]) -> None:
    # The stdio transport stamps each line's arrival as HTTP does: one check per call, and a
    # call read after another process retired its version is refused.
    here, there = twins
    gateway = build_gateway(here, demo_handlers())
    body, _ = lookup_pinned_to_v1()
    answers: list[dict[str, Any]] = []
    checks: list[str] = []

    async def scenario() -> None:
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        replied = asyncio.Event()

        async def write(data: bytes) -> None:
            answers.append(decode_message(data))
            replied.set()

        async def call() -> None:
            replied.clear()
            await lines.put(body)
            await asyncio.wait_for(replied.wait(), 5)

        server = asyncio.ensure_future(StdioServer(gateway.kernel, lines.get, write).run())
        await call()  # warms the caches
        statements = pragma_count(here)
        await call()
        checks.extend(statements)
        there.publish(_next_major(there))
        there.retire("payments.lookup", V1)
        await call()
        await lines.put(None)
        await asyncio.wait_for(server, 5)

    asyncio.run(scenario())
    assert [a["result"]["isError"] for a in answers[:2]] == [False, False]
    assert checks == ["stale"]
    assert answers[2]["error"]["data"]["reason"] == "schema_version_retired"


def test_a_failed_catch_up_is_owed_and_the_next_call_sees_the_retire(
        twins: tuple[Registry, Registry]) -> None:
    # SQLite reports another connection's commit once (PRAGMA data_version moved); a catch-up
    # read that fails must not lose that news. The failure is injected with SQLite's own
    # authorizer: one denied read of the audit table (the change feed).
    here, there = twins
    gateway = build_gateway(here, demo_handlers())
    body, pairs = lookup_pinned_to_v1()
    assert settled(gateway.kernel.handle_asgi(body, pairs))["result"]["isError"] is False
    denied: list[str] = []

    def deny_the_feed(action: int, table: str | None, *_: object) -> int:
        # Every read of the feed fails while the authorizer is set: the request resolves its
        # principal (a registry read) more than once when the first attempt fails.
        if action == sqlite3.SQLITE_READ and table == "audit":
            denied.append(table)
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    connection = here._store._conn  # type: ignore[attr-defined]
    connection.set_authorizer(deny_the_feed)
    there.publish(_next_major(there))
    there.retire("payments.lookup", V1)
    failed = settled(gateway.kernel.handle_asgi(body, pairs, received_ns=time.perf_counter_ns()))
    assert failed["error"]["code"] == -32603 and denied and set(denied) == {"audit"}
    connection.set_authorizer(None)
    refused = settled(gateway.kernel.handle_asgi(body, pairs, received_ns=time.perf_counter_ns()))
    assert refused["error"]["data"]["reason"] == "schema_version_retired"
