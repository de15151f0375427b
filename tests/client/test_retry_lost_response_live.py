"""Issue 15 acceptance 6 on the wire: a real gateway behind a proxy that loses the first
``tools/call`` answer after the tool ran. A non-idempotent write is not retried (the failure
surfaces, the call log holds one execution); a read is retried with the same request id and
succeeds (two executions of the read, both under that id)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kernel_drop_kit import dropping_proxy
from kernel_live_kit import BOUNDS, call_log, gateway

from toolkeeper.client import ClientConnectionError, Target, connect
from toolkeeper.client.kernel import Kernel
from toolkeeper.client.kernel_outcome import CallOutcome
from toolkeeper.client.retry import RetryPolicy


async def _no_wait(delay: float) -> None:
    return None


POLICY = RetryPolicy(attempts=3, delays=(0.1,), sleep=_no_wait)


async def _call(url: str, tool: str, arguments: dict[str, object]) -> CallOutcome:
    async with await connect(Target.from_url(url), timeouts=BOUNDS) as session:
        return await Kernel(session, retry=POLICY).call(tool, arguments)


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    return tmp_path / "registry.db"


def test_a_lost_answer_to_a_write_is_not_retried_and_a_lost_read_is(registry: Path) -> None:
    with gateway(registry, "--demo") as upstream, dropping_proxy(
            upstream, {"tickets.create", "payments.lookup"}) as url:
        with pytest.raises(ClientConnectionError):
            asyncio.run(_call(url, "tickets.create", {"title": "disk full"}))
        read = asyncio.run(_call(url, "payments.lookup", {"reference": "PMT-771"}))
        writes = call_log(registry, "tickets.create", at_least=1)
        reads = call_log(registry, "payments.lookup", at_least=2)
    assert len(writes) == 1
    assert read.ok and read.attempts == 2
    assert len(reads) == 2 and len({row["request_id"] for row in reads}) == 1
    assert writes[0]["request_id"] != reads[0]["request_id"]
