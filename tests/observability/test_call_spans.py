"""OpenTelemetry: one span per dispatched call (tool, version, era, outcome; never arguments),
and no OpenTelemetry import at all when spans are off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from gateway_kit import Driver, calc_estate, gateway_for

from toolkeeper.observability import CallLogSettings, MetricsSettings, build_observability
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers


def test_each_dispatched_call_is_one_span_without_its_arguments() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    registry = Registry.open("memory:")
    calc_estate(registry)
    handlers = ToolHandlers()

    def calc(arguments: dict[str, object]) -> dict[str, object]:
        if arguments["a"] == 13:
            raise RuntimeError("no")
        return {}

    handlers.bind("calc", calc)
    obs = build_observability(CallLogSettings(durable=False), MetricsSettings(),
                              registry=registry, registry_url="memory:", otel=True,
                              tracer_provider=provider)
    driver = Driver(gateway_for(registry, handlers, call_log=obs.call_log).kernel)
    driver.call("calc", {"a": 1, "b": 4242}, version="2.0.0")
    driver.call("calc", {"a": 13, "b": 0})
    driver.call("calc", {"a": "not a number", "b": 0})  # never dispatched: no span
    obs.stop()
    spans = exporter.get_finished_spans()
    assert [(s.name, s.kind, dict(s.attributes or {}), s.status.status_code) for s in spans] == [
        ("tools/call calc", SpanKind.SERVER, {"mcp.tool.name": "calc", "mcp.tool.version": "2.0.0",
                                               "mcp.era": "modern", "toolkeeper.outcome": "ok"},
         StatusCode.UNSET),
        ("tools/call calc", SpanKind.SERVER, {"mcp.tool.name": "calc", "mcp.tool.version": "2.0.0",
                                               "mcp.era": "modern",
                                               "toolkeeper.outcome": "exception"},
         StatusCode.ERROR)]
    assert all(s.start_time is not None and s.end_time is not None
               and s.end_time >= s.start_time for s in spans)
    registry.close()


def test_a_gateway_without_spans_never_imports_opentelemetry() -> None:
    code = ("import sys\n"
            "from toolkeeper.observability import CallLogSettings, MetricsSettings, "
            "build_observability\n"
            "from toolkeeper.registry import Registry\n"
            "r = Registry.open('memory:')\n"
            "build_observability(CallLogSettings(), MetricsSettings(), registry=r, "
            "registry_url='memory:').stop()\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert run.stdout.strip() == "[]"
