"""What happens during a forwarded call crosses the gateway: the upstream's progress reaches
the caller (under the caller's own progress token), in both eras, from an HTTP and a stdio
upstream; the caller's cancellation reaches the upstream as ``notifications/cancelled``."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import anyio
import pytest
from forwarding_kit import SDK_STDIO, Forwarder, Imported, sdk_tools, serving_forwarder
from mcp import Client
from raw_upstream import RawUpstream

from toolkeeper.client import ClientTimeouts, Target, connect
from toolkeeper.upstreams import UpstreamDefinition

BOUNDS = ClientTimeouts(probe_s=10, request_s=20)


@pytest.fixture(scope="module")
def forwarder(sdk_url: str, raw: tuple[RawUpstream, str]) -> Iterator[Forwarder]:
    definitions = [UpstreamDefinition("sdk", url=sdk_url, prefix="sdk.", call_timeout_s=10),
                   UpstreamDefinition("local", command=SDK_STDIO, prefix="local.",
                                      call_timeout_s=20),
                   UpstreamDefinition("raw", url=raw[1], prefix="raw.", era="legacy",
                                      call_timeout_s=20)]
    imported = [*sdk_tools("sdk", "sdk."), *sdk_tools("local", "local."),
                Imported("raw", "hang", prefix="raw.")]
    with serving_forwarder(definitions, imported) as served:
        yield served


async def _progress(url: str, mode: str, name: str) -> tuple[Any, list[tuple[Any, ...]]]:
    heard: list[tuple[Any, ...]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    with anyio.fail_after(30):
        async with Client(url, mode=mode) as client:
            result = await client.call_tool(name, {"count": 3}, progress_callback=on_progress)
            return result.content[0].text, heard  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["sdk.steps", "local.steps"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_upstream_progress_reaches_the_caller(forwarder: Forwarder, mode: str,
                                              name: str) -> None:
    text, heard = anyio.run(_progress, forwarder.url, mode, name)
    assert text == "done"
    assert heard == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def _cancel_a_hung_call(url: str, era: str, app: RawUpstream) -> None:
    async with await connect(Target.from_url(url), era=era,  # type: ignore[arg-type]
                             timeouts=BOUNDS) as session:
        async with anyio.create_task_group() as group:
            group.start_soon(partial(session.call_tool, "raw.hang", {}, request_id=77))
            assert await anyio.to_thread.run_sync(app.hanging.wait, 10)
            group.cancel_scope.cancel()  # closes the call's stream (modern: its cancellation)
        if era == "legacy":  # the legacy caller says so, as the official clients do
            await session.cancel(77, "the caller gave up")


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_callers_cancellation_reaches_the_upstream(forwarder: Forwarder,
                                                       raw: tuple[RawUpstream, str],
                                                       era: str) -> None:
    app = raw[0]
    app.hanging.clear()
    app.cancel_heard.clear()
    before = len(app.cancelled)
    anyio.run(_cancel_a_hung_call, forwarder.url, era, app)
    assert app.cancel_heard.wait(10)
    sent = app.cancelled[before:]
    assert len(sent) == 1
    assert str(sent[0]["requestId"]).startswith("tk-")  # the gateway's own request id
