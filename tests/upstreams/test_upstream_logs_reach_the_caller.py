"""An upstream's log messages during a forwarded call reach the caller at the level the caller
asked for, in both caller eras, from an HTTP upstream (the gateway's hop: modern, whose
upstream logs only when the hop's ``_meta`` asks for a level) and from a stdio one; a modern
caller that asked for no logs hears none."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from forwarding_kit import SDK_STDIO, Forwarder, sdk_tools, serving_forwarder
from mcp import Client

from toolkeeper.upstreams import UpstreamDefinition

ALL = [("info", "one", None), ("info", "two", None), ("warning", "three", "chatty")]


@pytest.fixture(scope="module")
def forwarder(sdk_url: str) -> Iterator[Forwarder]:
    definitions = [UpstreamDefinition("sdk", url=sdk_url, prefix="sdk.", call_timeout_s=10),
                   UpstreamDefinition("local", command=SDK_STDIO, prefix="local.",
                                      call_timeout_s=20)]
    with serving_forwarder(definitions, [*sdk_tools("sdk", "sdk."),
                                         *sdk_tools("local", "local.")]) as served:
        yield served


async def _logs(url: str, mode: str, name: str, level: str | None) -> tuple[Any, list[Any]]:
    heard: list[tuple[Any, ...]] = []

    async def on_log(params: Any) -> None:
        heard.append((params.level, params.data, params.logger))

    with anyio.fail_after(30):
        async with Client(url, mode=mode, logging_callback=on_log,  # type: ignore[arg-type]
                          log_level=level if mode != "legacy" else None) as client:
            if mode == "legacy" and level is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await client.set_logging_level(level)  # type: ignore[arg-type]
            result = await client.call_tool(name, {})
            return result.content[0].text, heard  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["sdk.chatty", "local.chatty"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_upstream_logs_reach_the_caller_at_its_level(forwarder: Forwarder, mode: str,
                                                     name: str) -> None:
    assert anyio.run(_logs, forwarder.url, mode, name, "debug") == ("said", ALL)
    assert anyio.run(_logs, forwarder.url, mode, name, "warning") == ("said", ALL[2:])


def test_a_modern_caller_that_asked_for_no_logs_hears_none(forwarder: Forwarder) -> None:
    assert anyio.run(_logs, forwarder.url, "auto", "sdk.chatty", None) == ("said", [])
