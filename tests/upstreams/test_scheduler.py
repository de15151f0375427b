"""Coalesced syncs: requests that arrive while a sync of an upstream runs fold into exactly one
more run; a failed run is reported and does not stop later ones; the default run syncs a real
upstream."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from toolkeeper.registry import MemoryStore, Registry
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition
from toolkeeper.upstreams.report import SyncReport
from toolkeeper.upstreams.scheduler import SyncScheduler

SERVER = Path(__file__).with_name("drift_upstream_server.py")
TOOL = {"name": "search", "description": "Search.", "inputSchema": {"type": "object"}}


def _upstreams(command: tuple[str, ...] = ("unused",)) -> Upstreams:
    ups = Upstreams(Registry(MemoryStore()))
    ups.add(UpstreamDefinition(name="files", command=command), origin="cli", actor="ops")
    return ups


def test_requests_during_a_sync_fold_into_exactly_one_more_run() -> None:
    ups = _upstreams()
    reports: list[SyncReport] = []

    async def scenario() -> dict[str, int]:
        started, gate = asyncio.Event(), asyncio.Event()

        async def run(upstreams: Upstreams, name: str) -> SyncReport:
            started.set()
            await gate.wait()
            return upstreams.apply_listing(name, [TOOL], actor="sync")

        scheduler = SyncScheduler(ups, run=run, on_report=reports.append)
        scheduler.request("files")
        await started.wait()
        for _ in range(5):
            scheduler.request("files")
        gate.set()
        await scheduler.idle("files")
        await scheduler.aclose()
        return scheduler.runs

    assert asyncio.run(scenario()) == {"files": 2}
    assert [r.tools[0].action for r in reports] == ["imported", "unchanged"]


def test_a_failed_run_is_reported_and_the_next_request_runs() -> None:
    ups = _upstreams()
    errors: list[tuple[str, str]] = []
    attempts: list[int] = []

    async def scenario() -> None:
        async def run(upstreams: Upstreams, name: str) -> SyncReport:
            attempts.append(1)
            if len(attempts) == 1:
                upstreams.apply_listing("nobody", [], actor="sync")  # upstream.not_found
            return upstreams.apply_listing(name, [TOOL], actor="sync")

        scheduler = SyncScheduler(ups, run=run,
                                  on_error=lambda name, exc: errors.append(
                                      (name, getattr(exc, "code", ""))))
        scheduler.request("files")
        await scheduler.idle("files")
        scheduler.request("files")
        await scheduler.idle("files")
        await scheduler.aclose()

    asyncio.run(scenario())
    assert errors == [("files", "upstream.not_found")] and len(attempts) == 2


def test_the_default_run_syncs_the_upstream(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([TOOL]), encoding="utf-8")
    ups = _upstreams((sys.executable, str(SERVER), str(tools)))
    reports: list[dict[str, Any]] = []

    async def scenario() -> None:
        scheduler = SyncScheduler(ups, actor="timer", on_report=lambda r: reports.append(
            r.to_dict()))
        scheduler.request("files")
        await scheduler.idle("files")
        await scheduler.aclose()

    asyncio.run(scenario())
    assert reports[0]["counts"] == {"imported": 1}
    latest = ups.registry.latest("search")
    assert latest is not None and latest.publisher == "timer"
