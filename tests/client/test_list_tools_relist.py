"""``list_tools`` over a gateway whose list spans pages: a publish between two page fetches
makes the gateway refuse the cursor with ``data.relist: true``; the client lists again from
the first page, once, and gets the new list whole. A second refusal surfaces as before.
Driven in process (the gateway's app behind a wrapper that publishes between pages)."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest

from toolkeeper.client import RequestRefusedError, Target, connect
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.registry import Registry
from toolkeeper.server import build_app


def _tool(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


class PublishBetweenPages:
    """The gateway's app; before forwarding a ``tools/list`` that carries a cursor, publishes
    a new tool (``times`` times at most), so the list changed since the cursor was sealed."""

    def __init__(self, registry: Registry, app: Any, times: int) -> None:
        self.registry, self.app, self.times = registry, app, times
        self.cursored = 0
        self._names = (f"late.t{i}" for i in itertools.count())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        events = []
        while True:
            event = await receive()
            events.append(event)
            if not event.get("more_body"):
                break
        message = json.loads(b"".join(e.get("body", b"") for e in events))
        params = message.get("params") or {}
        if message.get("method") == "tools/list" and "cursor" in params:
            self.cursored += 1
            if self.times:
                self.times -= 1
                self.registry.publish(_tool(next(self._names)))
        replay = iter(events)

        async def replayed() -> Any:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)


def _listing(era: str, publishes: int) -> tuple[Any, PublishBetweenPages]:
    registry = Registry.open("memory:")
    for name in ("a.t", "b.t", "c.t"):
        registry.publish(_tool(name))
    app, _ = build_app(registry, list_page_size=2)
    wrapped = PublishBetweenPages(registry, app, publishes)

    async def run() -> Any:
        async with await connect(Target.from_asgi(wrapped), era=era) as session:
            return await session.list_tools()

    return asyncio.run(run()), wrapped


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_publish_between_pages_restarts_the_listing_once_from_the_first_page(
        era: str) -> None:
    listing, wrapped = _listing(era, publishes=1)
    assert sorted(t["name"] for t in listing.tools) == ["a.t", "b.t", "c.t", "late.t0"]
    assert wrapped.cursored == 2  # the refused page, then the new list's second page


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_second_refused_cursor_surfaces_as_a_refusal(era: str) -> None:
    with pytest.raises(RequestRefusedError) as caught:
        _listing(era, publishes=2)
    error = caught.value.data["error"]
    assert error["code"] == -32602
    assert error["data"]["relist"] is True
    assert error["data"]["path"] == "$.params.cursor"
