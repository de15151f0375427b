"""An upstream's health reaches ``toolkeeper upstream list`` (another process) through the
registry and the metrics at scrape time: a stdio upstream in a crash loop (the official SDK
fixture, dying mid-call, on the test's clock) ends ``failed``, which the serving side records
once per change, the list shows with its transport, era, breaker, restarts, tool count and
pending drifts, and ``toolkeeper_upstream_state`` shows; it stays failed until the operator's
``toolkeeper upstream sync`` (another process), after which the next call goes through."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from forwarding_kit import SDK_STDIO, Clock, sdk_tools, serving_forwarder
from prometheus_client import generate_latest

from process_kit import SRC
from toolkeeper.client import ClientTimeouts, Target, connect
from toolkeeper.observability import upstream_metrics
from toolkeeper.observability.metrics import GatewayMetrics
from toolkeeper.registry import Registry
from toolkeeper.registry.upstream_records import HealthRecord
from toolkeeper.upstreams import UpstreamDefinition, health_record
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.health_record import HealthRecorder, metric_rows, summary
from toolkeeper.upstreams.supervision import Supervision
from toolkeeper.upstreams.sync import sync

DEFN = UpstreamDefinition("local", command=SDK_STDIO, prefix="local.", call_timeout_s=20)
KEY = "io.toolkeeper/upstream"


async def _call(url: str, name: str) -> str:
    async with await connect(Target.from_url(url), era="modern",
                             timeouts=ClientTimeouts(probe_s=10, request_s=30)) as session:
        reply = await session.call_tool(name, {"text": "x"} if name.endswith("echo") else {})
        assert reply.result is not None, reply.error
        meta = reply.result.get("_meta", {}).get(KEY)
        return str(meta["code"]) if reply.result.get("isError") else "ok"


def _listed(registry_url: str, *extra: str) -> Any:
    done = subprocess.run([sys.executable, "-m", "toolkeeper", "upstream", "list",
                           "--registry", registry_url, *extra], capture_output=True,
                          timeout=60, check=False, env={"PYTHONPATH": SRC, "PATH": ""})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in extra else done.stdout.decode()


def _metric_lines(metrics: GatewayMetrics) -> list[str]:
    return [line for line in generate_latest(metrics.registry).decode().splitlines()
            if line.startswith("toolkeeper_upstream_") and not line.endswith(" 0.0")]


def test_a_crash_loop_ends_failed_in_upstream_list_and_the_metrics(tmp_path: Path) -> None:
    registry_url = f"sqlite://{tmp_path / 'registry.db'}"
    registry = Registry.open(registry_url, create=True)
    ups = Upstreams(registry)
    ups.add(DEFN, origin="config", actor="config")
    imported = asyncio.run(sync(ups, "local", actor="sync"))
    assert {o.action for o in imported.tools} == {"imported"}
    tools = len(imported.tools)  # every tool of the SDK fixture
    clock = Clock()
    settings = Supervision(backoff_initial_s=1, restart_limit=1, restart_window_s=600)
    holder: list[Any] = []
    recorder = HealthRecorder(ups, lambda name: holder[0].connections.status_of(name),
                              replica="replica-a",
                              reset=lambda name: holder[0].connections.reset(name))
    metrics = GatewayMetrics()
    try:
        with serving_forwarder([DEFN], sdk_tools("local", "local."), clock=clock,
                               supervision=settings, on_change=recorder.changed) as served:
            holder.append(served)
            metrics.watch_upstreams(lambda: metric_rows(ups, served.connections.status()))
            assert anyio.run(_call, served.url, "local.echo") == "ok"
            assert anyio.run(_call, served.url, "local.echo") == "ok"  # no change: no write
            assert [r.status["state"] for r in ups.health("local")] == ["connected"]
            assert anyio.run(_call, served.url, "local.die") == "upstream.unavailable"
            clock.now += 1
            assert anyio.run(_call, served.url, "local.die") == "upstream.unavailable"
            clock.now += 100
            assert anyio.run(_call, served.url, "local.echo") == "upstream.failed"
            [row] = _listed(registry_url, "--json")
            text = _listed(registry_url)
            lines = _metric_lines(metrics)
            assert anyio.run(_call, served.url, "local.echo") == "upstream.failed"
            synced = subprocess.run(  # the operator's sync, another process
                [sys.executable, "-m", "toolkeeper", "upstream", "sync", "local", "--registry",
                 registry_url, "--actor", "ops", "--json"], capture_output=True, timeout=60,
                check=False, env={"PYTHONPATH": SRC, "PATH": ""})
            assert synced.returncode == 0, synced.stderr
            assert anyio.run(_call, served.url, "local.echo") == "ok"
            [after] = _listed(registry_url, "--json")
        # one row per replica, replaced on each change, and the operator's reset
        assert [r.replica for r in ups.health("local")] == ["operator", "replica-a"]
    finally:
        registry.close()
    assert {key: row[key] for key in ("name", "transport", "era", "health", "breaker",
                                      "restarts", "tools", "pending")} == {
        "name": "local", "transport": "stdio", "era": "modern", "health": "failed",
        "breaker": "closed", "restarts": 2, "tools": tools, "pending": 0}
    [replica] = row["replicas"]
    assert (replica["replica"], replica["state"], replica["lastError"]) == (
        "replica-a", "failed", "upstream.unavailable")
    assert text == (f"local stdio era=modern health=failed breaker=closed restarts=2 "
                    f"tools={tools} missing=0 pending=0\n")
    assert lines == [
        'toolkeeper_upstream_info{era="modern",transport="stdio",upstream="local"} 1.0',
        'toolkeeper_upstream_state{state="failed",upstream="local"} 1.0',
        'toolkeeper_upstream_breaker{breaker="closed",upstream="local"} 1.0',
        f'toolkeeper_upstream_tools{{upstream="local"}} {float(tools)}',
        'toolkeeper_upstream_restarts_total{upstream="local"} 2.0',
        'toolkeeper_upstream_calls_total{upstream="local"} 4.0',
        'toolkeeper_upstream_failures_total{upstream="local"} 2.0']
    assert (after["health"], after["restarts"]) == ("connected", 2)
    assert after["lastReset"]["by"] == "ops" and row["lastReset"] is None


def test_upstream_list_folds_the_replicas_views_into_the_worst() -> None:
    views = [HealthRecord("local", "a:1", {"state": "connected", "breaker": "closed",
                                           "restarts": 1}, "t1"),
             HealthRecord("local", "b:2", {"state": "open-breaker", "breaker": "open",
                                           "restarts": 2}, "t2"),
             HealthRecord("local", "operator", {"reset": True, "by": "ops"}, "t0")]
    folded = summary(views)
    assert (folded["health"], folded["breaker"], folded["restarts"]) == (
        "open-breaker", "open", 3)
    assert [r["replica"] for r in folded["replicas"]] == ["a:1", "b:2"]
    assert folded["lastReset"] == {"by": "ops", "at": "t0"}


def test_the_list_and_the_metrics_name_the_same_states() -> None:
    assert health_record.STATES == upstream_metrics.STATES
    assert health_record.BREAKERS == upstream_metrics.BREAKERS
