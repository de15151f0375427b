"""OpenTelemetry spans for dispatched calls (``logging.otel = true``, extra ``toolkeeper[otel]``).

This module is imported only when spans are asked for, so a gateway without them neither
imports OpenTelemetry nor pays for it. A span per dispatched ``tools/call`` (``tools/call
<tool>``, kind SERVER) carries ``mcp.tool.name``, ``mcp.tool.version``, ``mcp.era`` and
``toolkeeper.outcome``, never the arguments; it is built by the call recorder's flusher after
the call, with the call's own start and end times, so the call's path stays untouched. (It
therefore starts no context of its own for the handler, and an incoming ``traceparent`` is not
its parent.) Spans go to OpenTelemetry's global tracer provider, which the process must set up
(``opentelemetry-instrument`` builds it from the ``OTEL_*`` variables; without one they are
dropped); ``tracer_provider`` overrides it.
"""

from __future__ import annotations

from typing import Any

from toolkeeper.errors import ConfigError
from toolkeeper.server.calllog import CallRecord

__all__ = ["SpanSink"]

# Outcomes that are the gateway's or the handler's failure (an isError result is the tool's
# answer, not a failed request).
_FAILED = frozenset({"exception", "invalid_output", "protocol_error"})


class SpanSink:
    """A call sink that turns each completed call into one span."""

    def __init__(self, tracer_provider: Any = None) -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            raise ConfigError("logging.otel needs OpenTelemetry: install toolkeeper[otel]",
                              code="config.otel_missing", data={"key": "logging.otel"}) from None
        self._trace = trace
        self._tracer = trace.get_tracer("toolkeeper", tracer_provider=tracer_provider)

    def completed(self, record: CallRecord, at_ns: int, outcome: str,
                  latency_ms: float) -> None:
        trace = self._trace
        span = self._tracer.start_span(
            f"tools/call {record.tool}", kind=trace.SpanKind.SERVER, start_time=at_ns,
            attributes={"mcp.tool.name": record.tool, "mcp.tool.version": record.version,
                        "mcp.era": record.era, "toolkeeper.outcome": outcome})
        if outcome in _FAILED:
            span.set_status(trace.Status(trace.StatusCode.ERROR, outcome))
        span.end(end_time=at_ns + int(latency_ms * 1_000_000))

    def refused(self, reason: str) -> None:
        """Not a span: the call was never dispatched."""

    def invalid(self, tool: str, version: str) -> None:
        """Not a span: the call was never dispatched."""
