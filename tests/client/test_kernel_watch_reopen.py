"""``Kernel.watch`` keeps listening: a change stream that ends or fails transiently is opened
again (under the session's current id) after a bounded, injectable backoff, and every open
drops the cached listing; a refusal ends ``watch()`` with its error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kernel_session_kit import FakeListing

from toolkeeper.client import Target, connect
from toolkeeper.client.kernel import Kernel
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.errors import (
    ClientAuthenticationError,
    ClientConnectionError,
    ClientError,
    ClientTimeoutError,
    ProtocolViolationError,
    RequestRefusedError,
    ServerUnavailableError,
)
from toolkeeper.protocol.versions import Era
from toolkeeper.registry import Registry
from toolkeeper.server import build_app

WAIT_S = 10.0
ECHO = {"name": "echo", "inputSchema": {"type": "object"}}
END = RequestRefusedError("no more streams")


class ScriptedStreams:
    """Each ``tools_changed()`` plays the next script: None yields (the cache is filled just
    before), an error raises; with no script left it raises ``END``."""

    era = Era.MODERN

    def __init__(self, *scripts: list[Any]) -> None:
        self.scripts = list(scripts)
        self.opened = 0
        self.dropped: list[bool] = []
        self.kernel: Kernel | None = None

    async def list_tools(self) -> FakeListing:
        return FakeListing([ECHO], None, None)

    async def call_tool(self, name: str, arguments: Any, *, meta: dict[str, Any] | None = None,
                        request_id: str | int | None = None) -> Any:
        raise AssertionError("not called")

    async def tools_changed(self) -> AsyncIterator[None]:
        assert self.kernel is not None
        self.opened += 1
        if not self.scripts:
            raise END
        for item in self.scripts.pop(0):
            if isinstance(item, Exception):
                raise item
            await self.kernel.refresh()
            yield None
            self.dropped.append(self.kernel.cache.listing is None)


def _watch(session: ScriptedStreams, **bounds: float) -> tuple[ClientError, list[float]]:
    kernel = Kernel(session)
    session.kernel = kernel
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    async def run() -> ClientError:
        with pytest.raises(ClientError) as caught:
            async with asyncio.timeout(WAIT_S):
                await kernel.watch(sleep=sleep, **bounds)
        return caught.value

    return asyncio.run(run()), sleeps


def test_a_stream_ended_by_the_server_is_reopened_and_a_later_change_drops_the_cache() -> None:
    session = ScriptedStreams([None], [None, None])
    error, sleeps = _watch(session)
    assert error is END
    assert session.opened == 3
    assert session.dropped == [True, True, True]
    assert sleeps == [0.5, 0.5]


def test_transient_failures_back_off_doubling_to_the_bound_and_reset_after_an_open() -> None:
    session = ScriptedStreams([ClientConnectionError("down")], [ClientTimeoutError("slow")],
                              [ServerUnavailableError("busy")], [ServerUnavailableError("busy")],
                              [None])
    error, sleeps = _watch(session, first_s=0.5, max_s=1.5)
    assert error is END
    assert session.opened == 6
    assert sleeps == [0.5, 1.0, 1.5, 1.5, 0.5]


@pytest.mark.parametrize("refusal", [RequestRefusedError("refused"),
                                     ClientAuthenticationError("unauthorized"),
                                     ProtocolViolationError("garbled")])
def test_a_refusal_after_a_reopen_ends_watch_with_the_error(refusal: ClientError) -> None:
    session = ScriptedStreams([None], [refusal], [None])
    error, sleeps = _watch(session)
    assert error is refusal
    assert session.opened == 2 and sleeps == [0.5]


def _tool(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


async def _until(check: Any) -> None:
    while not check():
        await asyncio.sleep(0)


def test_a_legacy_session_renewed_mid_watch_is_watched_again_under_the_new_id() -> None:
    registry = Registry.open("memory:")
    registry.publish(_tool("first.tool"))
    app, _ = build_app(registry)

    async def run() -> tuple[str | None, str | None, list[str]]:
        async with await connect(Target.from_asgi(app), era="legacy") as session:
            kernel = Kernel(session)
            first_id = session.session_id
            gate = asyncio.Event()

            async def sleep(delay: float) -> None:
                await gate.wait()

            watcher = asyncio.create_task(kernel.watch(sleep=sleep))
            try:
                async with asyncio.timeout(WAIT_S):
                    await kernel.tools()
                    await session.transport.end_session(
                        {"mcp-session-id": first_id or "", "mcp-protocol-version": session.version},
                        timeout=WAIT_S)  # behind the client's back
                    await kernel.tools()  # the forgotten session is renewed
                    assert session.session_id != first_id
                    gate.set()
                    await _until(lambda: kernel.cache.listing is None)  # reopened
                    await kernel.tools()
                    registry.publish(_tool("second.tool"))
                    await _until(lambda: kernel.cache.listing is None)  # heard
                    names = [t.name for t in await kernel.tools()]
                    assert not watcher.done()
            finally:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
            return first_id, session.session_id, names

    first_id, renewed_id, names = asyncio.run(run())
    assert first_id is not None and renewed_id not in (None, first_id)
    assert names == ["first.tool", "second.tool"]
