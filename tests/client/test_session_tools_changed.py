"""``ClientSession.tools_changed`` hears a registry publish in both eras, through the
in-process twin (which streams: a listen stream reaches the client while it is open): modern
through ``subscriptions/listen``, legacy through the standalone GET stream."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolkeeper.client import ClientSession, Era, Target, connect
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.registry import Registry
from toolkeeper.server import build_app

WAIT_S = 10.0


def _tool(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


async def _heard_a_publish(choice: Any) -> tuple[ClientSession, list[str], list[str]]:
    registry = Registry.open("memory:")
    registry.publish(_tool("first.tool"))
    app, _ = build_app(registry)
    async with await connect(Target.from_asgi(app), era=choice) as session:
        before = [t["name"] for t in (await session.list_tools()).tools]
        signals: asyncio.Queue[None] = asyncio.Queue()

        async def listen() -> None:
            async for _ in session.tools_changed():
                signals.put_nowait(None)

        listener = asyncio.create_task(listen())
        try:
            async with asyncio.timeout(WAIT_S):
                await signals.get()  # the stream is open
                registry.publish(_tool("second.tool"))
                await signals.get()  # the publish was heard
        finally:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
        after = [t["name"] for t in (await session.list_tools()).tools]
        return session, before, after


@pytest.mark.parametrize(("choice", "era"), [("modern", Era.MODERN), ("legacy", Era.LEGACY)])
def test_a_publish_reaches_an_open_change_stream_and_the_next_listing(choice: Any,
                                                                     era: Era) -> None:
    session, before, after = asyncio.run(_heard_a_publish(choice))
    assert session.era is era
    assert before == ["first.tool"]
    assert after == ["first.tool", "second.tool"]
