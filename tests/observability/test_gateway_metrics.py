"""Prometheus metrics of a gateway: calls by tool, version and outcome, latency, gate refusals
by reason, validation failures, HTTP statuses, open streams, auth refusals, registry state."""

from __future__ import annotations

import asyncio
import socket
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from gateway_kit import Driver, calc_estate, contract, gateway_for

from toolkeeper.errors import ConfigError
from toolkeeper.observability import (
    CallLogSettings,
    GatewayMetrics,
    MetricsSettings,
    Observability,
    build_observability,
    observe_auth_refusal,
)
from toolkeeper.observability.metrics import MetricsServer
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import CallQuery, open_call_rows
from toolkeeper.server import ToolHandlers
from toolkeeper.server.calllog import CallRecord

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def handlers() -> ToolHandlers:
    bound = ToolHandlers()

    def calc(arguments: dict[str, Any]) -> dict[str, Any]:
        if arguments.get("a") == 13:
            raise RuntimeError("unlucky")
        return {"a": arguments["a"]}

    bound.bind("calc", calc)
    bound.bind("vault", lambda arguments, ctx: {"ok": True})
    return bound


@pytest.fixture
def observed(tmp_path: Path) -> Iterator[tuple[Registry, Observability, str]]:
    url = f"sqlite://{tmp_path / 'r.db'}"
    registry = Registry.open(url)
    calc_estate(registry)
    obs = build_observability(CallLogSettings(flush_interval_ms=20),
                              MetricsSettings(port=free_port()), registry=registry,
                              registry_url=url)
    yield registry, obs, url
    obs.stop()
    registry.close()


def test_a_scrape_counts_each_call_by_tool_version_and_outcome(
        observed: tuple[Registry, Observability, str]) -> None:
    registry, obs, url = observed
    assert obs.metrics_port is not None
    driver = Driver(gateway_for(registry, handlers(), call_log=obs.call_log).kernel)
    for a in (1, 2, 13):
        driver.call("calc", {"a": a, "b": 0})                    # 2.0.0: ok, ok, exception
    driver.call("calc", {"a": 1}, version="1.2.0")              # pinned: ok
    driver.call("vault", {"a": 1})                              # context handler: ok
    driver.call("calc", {"a": "x", "b": 0})                     # validation failure
    driver.call("calc", {"a": 1}, version="1.0.0")              # retired
    driver.call("calc", {"a": 1}, version="9.9.9")              # unknown version
    driver.call("secret", {"a": 1})                             # invisible: unknown tool
    samples = scrape(obs.metrics_port)
    calls = {labels: value for (name, labels), value in samples.items()
             if name == "toolkeeper_calls_total"}
    none = ("rollout_step", "none")  # no rollout routes these tools
    assert calls == {
        (("outcome", "ok"), none, ("tool", "calc"), ("version", "2.0.0")): 2.0,
        (("outcome", "exception"), none, ("tool", "calc"), ("version", "2.0.0")): 1.0,
        (("outcome", "ok"), none, ("tool", "calc"), ("version", "1.2.0")): 1.0,
        (("outcome", "ok"), none, ("tool", "vault"), ("version", "1.0.0")): 1.0,
    }
    assert samples[("toolkeeper_call_latency_seconds_count",
                    (none, ("tool", "calc"), ("version", "2.0.0")))] == 3.0
    assert samples[("toolkeeper_validation_failures_total",
                    (("tool", "calc"), ("version", "2.0.0")))] == 1.0
    refusals = {labels[0][1]: value for (name, labels), value in samples.items()
                if name == "toolkeeper_gate_refusals_total"}
    assert refusals == {"schema_version_retired": 1.0, "schema_version_unknown": 1.0,
                        "unknown_tool": 1.0}
    obs.stop()  # the durable log holds exactly the dispatched calls
    rows = open_call_rows(url, read_only=True)
    assert sorted((r.tool, r.version, r.outcome) for r in rows.query(CallQuery())) == sorted([
        ("calc", "2.0.0", "ok"), ("calc", "2.0.0", "ok"), ("calc", "2.0.0", "exception"),
        ("calc", "1.2.0", "ok"), ("vault", "1.0.0", "ok")])
    rows.close()


def test_registry_generation_and_last_change_are_reported(
        observed: tuple[Registry, Observability, str]) -> None:
    registry, obs, _ = observed
    assert obs.metrics_port is not None
    before = scrape(obs.metrics_port)
    registry.publish(contract("extra", "1.0.0", {"type": "object"}))
    after = scrape(obs.metrics_port)
    assert after[("toolkeeper_registry_generation", ())] == registry.generation
    assert after[("toolkeeper_registry_generation", ())] > before[
        ("toolkeeper_registry_generation", ())]
    assert after[("toolkeeper_registry_last_change_timestamp_seconds", ())] >= before[
        ("toolkeeper_registry_last_change_timestamp_seconds", ())]


def test_auth_refusals_count_by_reason_only_while_metrics_run(
        observed: tuple[Registry, Observability, str]) -> None:
    _, obs, _ = observed
    assert obs.metrics_port is not None
    observe_auth_refusal("expired")
    observe_auth_refusal("expired")
    observe_auth_refusal("missing")
    samples = scrape(obs.metrics_port)
    assert samples[("toolkeeper_auth_refusals_total", (("reason", "expired"),))] == 2.0
    assert samples[("toolkeeper_auth_refusals_total", (("reason", "missing"),))] == 1.0
    metrics = obs.metrics
    obs.stop()
    observe_auth_refusal("expired")  # no running gateway: counted nowhere
    assert metrics is not None
    assert metrics.registry.get_sample_value("toolkeeper_auth_refusals_total",
                                             {"reason": "expired"}) == 2.0


def test_http_responses_count_by_status_and_streams_stay_open_until_their_end(
        observed: tuple[Registry, Observability, str]) -> None:
    _, obs, _ = observed
    assert obs.metrics is not None
    seen_open: list[float | None] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        stream = scope["path"] == "/sse"
        await send({"type": "http.response.start", "status": 200 if stream else 404,
                    "headers": [(b"content-type",
                                 b"text/event-stream" if stream else b"application/json")]})
        await send({"type": "http.response.body", "body": b"x", "more_body": stream})
        if stream:
            seen_open.append(obs.metrics.registry.get_sample_value(  # type: ignore[union-attr]
                "toolkeeper_open_streams"))
            await send({"type": "http.response.body", "body": b""})

    wrapped = obs.wrap_app(app)

    async def send(message: dict[str, Any]) -> None:
        return None

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    for path in ("/sse", "/missing", "/missing"):
        asyncio.run(wrapped({"type": "http", "path": path}, receive, send))
    registry = obs.metrics.registry
    assert seen_open == [1.0]
    assert registry.get_sample_value("toolkeeper_open_streams") == 0.0
    assert registry.get_sample_value("toolkeeper_http_responses_total", {"status": "200"}) == 1.0
    assert registry.get_sample_value("toolkeeper_http_responses_total", {"status": "404"}) == 2.0


def test_a_metrics_port_in_use_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    registry = Registry.open("memory:")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ConfigError) as refused:
            build_observability(CallLogSettings(durable=False),
                                MetricsSettings(port=taken.getsockname()[1]),
                                registry=registry, registry_url="memory:")
    assert (refused.value.code, refused.value.data["key"]) == ("config.metrics_port",
                                                                "metrics.port")
    observe_auth_refusal("missing")  # the failed start left no metrics running


def test_with_everything_off_the_gateway_keeps_its_default_call_log() -> None:
    registry = Registry.open("memory:")
    obs = build_observability(CallLogSettings(durable=False), MetricsSettings(),
                              registry=registry, registry_url="memory:")
    assert (obs.call_log, obs.metrics, obs.metrics_port) == (None, None, None)
    app = object()
    assert obs.wrap_app(app) is app
    obs.stop()


def test_latencies_land_in_the_first_bucket_at_or_above_them_summed_over_outcomes() -> None:
    metrics = GatewayMetrics()
    calc = CallRecord("calc", "2.0.0", "acme", "sha256:00", "modern")
    for latency_ms, outcome in ((0.5, "ok"), (0.6, "ok"), (1.0, "error"), (61_000.0, "ok")):
        metrics.completed(calc, 0, outcome, latency_ms)  # 0.5 ms is the first bound exactly
    metrics.completed(CallRecord("vault", "1.0.0", "acme", "sha256:00", "modern"), 0, "ok", 2.0)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for family in
               text_string_to_metric_families(generate_latest(metrics.registry).decode())
               for s in family.samples}
    calc_labels = (("rollout_step", "none"), ("tool", "calc"), ("version", "2.0.0"))

    def bucket(le: str) -> float:
        return samples[("toolkeeper_call_latency_seconds_bucket", (("le", le), *calc_labels))]

    assert [bucket(le) for le in ("0.0005", "0.001", "0.0025", "60.0", "+Inf")] == [
        1.0, 3.0, 3.0, 3.0, 4.0]
    assert samples[("toolkeeper_call_latency_seconds_count", calc_labels)] == 4.0
    assert samples[("toolkeeper_call_latency_seconds_sum", calc_labels)] == pytest.approx(
        61.0021)
    assert ("toolkeeper_call_latency_seconds_created", calc_labels) in samples
    assert samples[("toolkeeper_calls_total", (("outcome", "ok"), *calc_labels))] == 3.0
    assert samples[("toolkeeper_calls_total", (("outcome", "error"), *calc_labels))] == 1.0
    assert samples[("toolkeeper_call_latency_seconds_count",
                    (("rollout_step", "none"), ("tool", "vault"), ("version", "1.0.0")))] == 1.0


def test_the_bearer_resolver_counts_each_refusal_by_reason(
        observed: tuple[Registry, Observability, str]) -> None:
    from types import SimpleNamespace

    from toolkeeper.auth import build_resolver
    from toolkeeper.errors import AuthenticationError
    from toolkeeper.protocol import HeaderView, TransportFacts

    registry, obs, _ = observed
    auth = SimpleNamespace(methods=("keys",), resource="https://gw.test/mcp",
                           authorization_servers=(), scopes_supported=(), stdio=None,
                           jwt_issuers=())
    resolver = build_resolver(auth, registry)
    for header in (None, "Basic abc", "Bearer tk_000000000000_" + "A" * 43):
        pairs = [] if header is None else [("authorization", header)]
        with pytest.raises(AuthenticationError):
            resolver(TransportFacts("http", HeaderView(pairs)))
    assert obs.metrics_port is not None
    samples = scrape(obs.metrics_port)
    assert {reason: samples.get(("toolkeeper_auth_refusals_total", (("reason", reason),)))
            for reason in ("missing", "malformed", "unknown_key")} == {
        "missing": 1.0, "malformed": 1.0, "unknown_key": 1.0}


def test_the_gateway_app_counts_its_own_responses_and_streams_with_no_wrapper(
        observed: tuple[Registry, Observability, str]) -> None:
    from toolkeeper.demo import demo_handlers, install_demo
    from toolkeeper.protocol import encode_message
    from toolkeeper.server import build_gateway
    from toolkeeper.transports import HttpConfig, create_asgi_app

    registry, obs, _ = observed
    assert obs.metrics is not None
    install_demo(registry)
    gateway = build_gateway(registry, demo_handlers())
    app = create_asgi_app(gateway.kernel, HttpConfig())
    assert obs.wrap_app(app) is app  # no ASGI layer of its own
    body = encode_message({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "payments.lookup", "arguments": {"reference": "PMT-771"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "p"}}})
    seen_open: list[float | None] = []
    types: list[bytes] = []
    statuses: list[int] = []

    def scope(path: str, host: bytes, accept: bytes) -> dict[str, Any]:
        return {"type": "http", "method": "POST", "path": path, "headers": [
            (b"host", host), (b"content-type", b"application/json"), (b"accept", accept),
            (b"mcp-protocol-version", b"2026-07-28"), (b"mcp-method", b"tools/call"),
            (b"mcp-name", b"payments.lookup")], "client": ("127.0.0.1", 5000)}

    async def exchange(request: dict[str, Any]) -> None:
        given: list[bool] = []

        async def receive() -> dict[str, Any]:
            if not given:
                given.append(True)
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
                types.append(dict(message["headers"]).get(b"content-type", b""))
            elif message.get("more_body"):
                seen_open.append(obs.metrics.registry.get_sample_value(  # type: ignore[union-attr]
                    "toolkeeper_open_streams"))

        await app(request, receive, send)

    for request in (scope("/mcp", b"127.0.0.1:8000", b"application/json"),
                    scope("/mcp", b"127.0.0.1:8000", b"application/json, text/event-stream"),
                    scope("/missing", b"127.0.0.1:8000", b"application/json"),
                    scope("/mcp", b"evil.example", b"application/json")):
        asyncio.run(exchange(request))
    samples = obs.metrics.registry
    counted = {status: samples.get_sample_value("toolkeeper_http_responses_total",
                                                {"status": status})
               for status in ("200", "404", "406", "421")}
    assert statuses == [406, 200, 404, 421]
    assert counted == {"200": 1.0, "404": 1.0, "406": 1.0, "421": 1.0}
    assert types[1].startswith(b"text/event-stream")  # the handler's progress: a stream
    assert seen_open and set(seen_open) == {1.0}
    assert samples.get_sample_value("toolkeeper_open_streams") == 0.0


def test_the_metrics_listener_answers_each_scrape_and_stop_ends_it_and_frees_its_port() -> None:
    metrics = GatewayMetrics()
    hooked: list[int] = []
    server = MetricsServer(metrics, "127.0.0.1", 0, lambda: hooked.append(1))
    port = server.port
    try:
        for n in range(1, 4):
            assert ("toolkeeper_open_streams", ()) in scrape(port)
            assert len(hooked) == n  # the drain hook ran before each
    finally:
        server.stop()
    assert not server._thread.is_alive()
    with socket.socket() as probe, pytest.raises(OSError):
        probe.connect(("127.0.0.1", port))
