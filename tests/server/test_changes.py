"""The change hub: fan-out to streams on their own loops, coalescing, bounds, close, and
changes learned from the registry (in process, and from another process's SQLite writes)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import codes
from toolkeeper.registry import Registry
from toolkeeper.server.changes import TOOLS_LIST_CHANGED, ChangeHub

T = TypeVar("T")
WAIT_S = 5.0


def run(coro: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro(), WAIT_S)
    return asyncio.run(bounded())


def tool(name: str) -> ToolSpec:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


def test_a_burst_of_changes_reaches_a_slow_stream_as_one_notification() -> None:
    hub = ChangeHub()

    async def scenario() -> tuple[tuple[str, ...] | None, int]:
        stream = hub.open()
        for _ in range(1000):
            hub.tools_changed()
        await asyncio.sleep(0)  # let the loop deliver the scheduled arrivals
        batch = await stream.next()
        stream.close()
        return batch, len(hub)

    assert run(scenario) == ((TOOLS_LIST_CHANGED,), 0)


def test_every_open_stream_hears_a_change_published_from_another_thread() -> None:
    hub = ChangeHub()

    async def scenario() -> list[tuple[str, ...] | None]:
        streams = [hub.open() for _ in range(3)]
        publisher = threading.Thread(target=hub.tools_changed)
        publisher.start()
        batches = [await stream.next() for stream in streams]
        publisher.join(WAIT_S)
        return batches

    assert run(scenario) == [(TOOLS_LIST_CHANGED,)] * 3


def test_closing_the_hub_ends_every_stream_after_its_backlog_and_refuses_new_ones() -> None:
    hub = ChangeHub()

    async def scenario() -> list[tuple[str, ...] | None]:
        stream = hub.open()
        hub.tools_changed()
        hub.close()
        hub.close()  # idempotent
        return [await stream.next(), await stream.next()]

    assert run(scenario) == [(TOOLS_LIST_CHANGED,), None]
    with pytest.raises(JsonRpcError) as refused:
        hub.check_capacity()
    assert refused.value.rpc_code == codes.INTERNAL_ERROR


def test_a_full_hub_refuses_one_more_stream_with_internal_error_until_one_leaves() -> None:
    hub = ChangeHub(max_streams=2)

    async def scenario() -> int:
        first, _ = hub.open(), hub.open()
        with pytest.raises(JsonRpcError) as refused:
            hub.open()
        assert refused.value.rpc_code == codes.INTERNAL_ERROR
        first.close()
        hub.open()
        return len(hub)

    assert run(scenario) == 2


def test_a_publish_through_the_registry_notifies_and_closing_unsubscribes() -> None:
    registry = Registry.open("memory:")
    hub = ChangeHub.for_registry(registry)

    async def scenario() -> tuple[str, ...] | None:
        stream = hub.open()
        registry.publish(tool("fresh.tool"))
        return await stream.next()

    assert run(scenario) == (TOOLS_LIST_CHANGED,)
    hub.close()
    registry.publish(tool("after.close"))  # no subscriber left to call: nothing to assert but
    registry.close()                       # that publishing still works


def test_an_idle_stream_learns_of_another_process_sqlite_write_within_the_refresh_bound(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with Registry.open(url) as served, Registry.open(url) as other_replica:
        hub = ChangeHub.for_registry(served, refresh_s=0.05)

        async def scenario() -> tuple[str, ...] | None:
            stream = hub.open()
            other_replica.publish(tool("from.elsewhere"))  # SQLite cannot push this
            return await stream.next()

        assert run(scenario) == (TOOLS_LIST_CHANGED,)
        assert served.get("from.elsewhere", tool("x").version) is not None
        hub.close()


def test_a_failing_refresh_is_logged_and_the_stream_keeps_waiting(
        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> tuple[str, ...] | None:
        refreshed = asyncio.Event()

        def broken() -> None:
            refreshed.set()
            raise OSError("store unavailable")

        hub = ChangeHub(refresh_s=0.02, refresh=broken)
        stream = hub.open()
        upcoming = asyncio.ensure_future(stream.next())
        await refreshed.wait()
        hub.tools_changed()
        return await upcoming

    assert run(scenario) == (TOOLS_LIST_CHANGED,)
    assert any("refresh failed" in r.getMessage() for r in caplog.records)


def test_a_stream_whose_loop_is_gone_is_dropped_on_the_next_publish() -> None:
    hub = ChangeHub()

    async def open_one() -> None:
        hub.open()

    asyncio.run(open_one())  # the loop closes with the stream still registered
    assert len(hub) == 1
    hub.tools_changed()
    assert len(hub) == 0


def test_a_burst_while_the_loop_is_busy_queues_one_wake_up_per_stream() -> None:
    hub = ChangeHub()

    async def scenario() -> tuple[int, tuple[str, ...] | None]:
        stream = hub.open()
        loop = asyncio.get_running_loop()
        before = len(loop._ready)  # type: ignore[attr-defined]  # the loop's callback queue
        posters = [threading.Thread(target=lambda: [stream.post(TOOLS_LIST_CHANGED)
                                                    for _ in range(100)]) for _ in range(4)]
        for poster in posters:  # the loop does not run meanwhile: it is busy with this code
            poster.start()
        for poster in posters:
            poster.join(5)
        queued = len(loop._ready) - before  # type: ignore[attr-defined]
        batch = await asyncio.wait_for(stream.next(), 5)
        stream.close()
        return queued, batch

    queued, batch = asyncio.run(scenario())
    assert (queued, batch) == (1, (TOOLS_LIST_CHANGED,))
