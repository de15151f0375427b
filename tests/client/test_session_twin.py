"""The client against toolkeeper's own gateway app driven in process (no socket), both eras:
era selection, every page of ``tools/list``, and a ``tools/call`` carrying ``_meta``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolkeeper.client import ClientSession, Era, Target, connect
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import build_app

LOOKUP = {"reference": "PMT-771", "include_legs": True}


def _demo_app() -> Any:
    registry = Registry.open("memory:")
    install_demo(registry)
    app, _ = build_app(registry, demo_handlers())
    return app


async def _listed_and_called(session: ClientSession) -> tuple[list[Any], Any]:
    listing = await session.list_tools()
    reply = await session.call_tool("payments.lookup", LOOKUP, meta={"schemaVersion": "1.0.0"})
    return [(t["name"], t["_meta"]["schemaVersion"]) for t in listing.tools], reply


@pytest.mark.parametrize(("choice", "era", "verdict"), [
    ("auto", Era.MODERN, "modern.discovered"),
    ("modern", Era.MODERN, "modern.discovered"),
    ("legacy", Era.LEGACY, "legacy.initialized"),
])
def test_twin_session_lists_every_demo_tool_and_calls_one(choice: Any, era: Era,
                                                          verdict: str) -> None:
    async def run() -> tuple[ClientSession, list[Any], Any]:
        async with await connect(Target.from_asgi(_demo_app()), era=choice) as session:
            tools, reply = await _listed_and_called(session)
            return session, tools, reply

    session, tools, reply = asyncio.run(run())
    assert session.era is era
    assert session.decision.verdict == verdict
    assert tools == [("db.query", "4.0.0"), ("payments.lookup", "1.0.0"),
                     ("tickets.create", "1.0.0")]
    assert reply.error is None and reply.result is not None
    assert reply.result["isError"] is False
    assert reply.result["_meta"]["schemaVersion"] == "1.0.0"
    assert ("resultType" in reply.result) is (era is Era.MODERN)


def test_modern_listing_carries_the_cache_hints_and_legacy_none() -> None:
    async def run(choice: Any) -> tuple[Any, Any]:
        async with await connect(Target.from_asgi(_demo_app()), era=choice) as session:
            listing = await session.list_tools()
            return listing.ttl_ms, listing.cache_scope

    assert asyncio.run(run("modern")) == (0, "private")
    assert asyncio.run(run("legacy")) == (None, None)


def test_a_retired_pin_comes_back_as_an_error_value_not_an_exception() -> None:
    async def run() -> Any:
        async with await connect(Target.from_asgi(_demo_app()), era="modern") as session:
            return await session.call_tool("db.query", {"sql": "select 1"},
                                           meta={"schemaVersion": "3.0.0"})

    reply = asyncio.run(run())
    assert reply.result is None and reply.error is not None
    assert type(reply.error["code"]) is int
    assert reply.http_status == 400
