"""Paginated ``tools/list`` to the official ``mcp`` client (2.3.0) over real HTTP on 127.0.0.1,
in both eras: its ``list_tools(cursor=...)`` walks the pages (it does not follow
``nextCursor`` by itself), and a cursor from before a publish reaches it as -32602 with the
re-list reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from gateway_kit import contract
from mcp import Client
from mcp.shared.exceptions import MCPError

from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.transports import ServerThread

MODES = ["2026-07-28", "legacy"]
BOUND_S = 10.0
NAMES = [f"t{index:02d}" for index in range(23)]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Registry]]:
    registry = Registry.open("memory:")
    for name in NAMES:
        registry.publish(contract(name, "1.0.0", {"type": "object"}))
    app, _ = build_app(registry, sealer=Sealer.ephemeral(), list_page_size=5)
    thread = ServerThread(app)
    running = thread.start()
    try:
        yield running.url, registry
    finally:
        thread.stop()
        registry.close()


async def _walk(url: str, mode: str) -> list[list[str]]:
    pages: list[list[str]] = []
    with anyio.fail_after(BOUND_S):
        async with Client(url, mode=mode) as client:
            cursor: str | None = None
            for _ in range(50):
                result = await client.list_tools(cursor=cursor, cache_mode="bypass")
                pages.append([tool.name for tool in result.tools])
                cursor = result.next_cursor
                if cursor is None:
                    return pages
    raise AssertionError("the walk never ended")


async def _stale(url: str, mode: str, registry: Registry, name: str) -> Any:
    with anyio.fail_after(BOUND_S):
        async with Client(url, mode=mode) as client:
            first = await client.list_tools(cache_mode="bypass")
            registry.publish(contract(name, "1.0.0", {"type": "object"}))
            try:
                await client.list_tools(cursor=first.next_cursor, cache_mode="bypass")
            except MCPError as exc:
                return exc.error.code, exc.error.data
    return None


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_walks_every_page_and_sees_every_tool_once(
        served: tuple[str, Registry], mode: str) -> None:
    url, _ = served
    pages = anyio.run(_walk, url, mode)
    names = [name for page in pages for name in page]
    assert all(len(page) == 5 for page in pages[:-1]) and len(pages) > 1
    assert names == sorted(names) and len(names) == len(set(names))
    assert set(NAMES) <= set(names)


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_gets_a_relist_refusal_for_a_cursor_from_before_a_publish(
        served: tuple[str, Registry], mode: str) -> None:
    url, registry = served
    code, data = anyio.run(_stale, url, mode, registry, f"a_{mode.replace('-', '')}")
    assert code == -32602
    assert (data["reason"], data["relist"], data["path"]) == \
        ("generation_mismatch", True, "$.params.cursor")
