"""The kernel's listing is dropped when a live gateway says its tools changed (issue 15: the
cache is refreshed on ``notifications/tools/list_changed``, heard on the modern
``subscriptions/listen`` stream and the legacy GET stream): the operator publishes a new
version through the CLI, and the kernel's next call lists again and is pinned to it, with no
refusal and no re-list round trip."""

from __future__ import annotations

import asyncio
import contextlib
import json
from importlib import resources
from pathlib import Path

import pytest
from kernel_live_kit import BOUNDS, gateway, toolkeeper_cli

from toolkeeper.client import Target, connect
from toolkeeper.client.kernel import Kernel
from toolkeeper.client.kernel_outcome import CallOutcome


def _minor(tmp_path: Path) -> Path:
    contract = json.loads(resources.files("toolkeeper.demo").joinpath(
        "payments.lookup-1.0.0.json").read_bytes())
    contract["version"] = "1.1.0"
    contract["inputSchema"]["properties"]["note"] = {"type": "string"}
    path = tmp_path / "payments.lookup-1.1.0.json"
    path.write_text(json.dumps(contract))
    return path


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_list_changed_notification_makes_the_next_call_use_the_new_listing(
        tmp_path: Path, era: str) -> None:
    registry = tmp_path / "registry.db"
    minor = _minor(tmp_path)

    async def run(url: str) -> tuple[CallOutcome, int]:
        async with await connect(Target.from_url(url), era=era, legacy_allowed=True,
                                 timeouts=BOUNDS) as session:
            kernel = Kernel(session)
            await kernel.tools()
            invalidated = asyncio.Event()
            drop = kernel.cache.invalidate

            def invalidate() -> None:  # the watch task's list_changed drops the listing
                drop()
                invalidated.set()
            kernel.cache.invalidate = invalidate  # type: ignore[method-assign]
            watcher = asyncio.create_task(kernel.watch())
            try:
                await asyncio.sleep(0)  # let the stream open before the change
                done = await asyncio.to_thread(toolkeeper_cli, "publish", str(minor),
                                               "--registry", f"sqlite:///{registry}")
                assert done.returncode == 0, done.stderr.decode()
                await asyncio.wait_for(invalidated.wait(), 20)  # a bound, not the assertion
                assert kernel.cache.listing is None
                outcome = await kernel.call("payments.lookup", {"reference": "PMT-771"})
                return outcome, kernel.cache.generation
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    with gateway(registry, "--demo") as url:
        outcome, listings = asyncio.run(run(url))
    assert outcome.ok and not outcome.relisted and outcome.schema_version == "1.1.0"
    assert listings == 2
