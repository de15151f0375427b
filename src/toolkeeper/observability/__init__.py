"""Observability of the gateway: the durable call log, Prometheus metrics, OpenTelemetry spans.

How ``serve`` wires it (see :mod:`toolkeeper.observability.build`):
``obs = build_observability(CallLogSettings(...), MetricsSettings(...), registry=registry,
registry_url=url, otel=...)``; ``build_app(..., call_log=obs.call_log)``; serve
``obs.wrap_app(app)``; ``obs.stop()`` after the server stops, before the registry closes. The
auth code counts refused credentials with :func:`observe_auth_refusal` (a no-op when metrics
are off). OpenTelemetry is imported only when ``otel`` is on.
"""

from __future__ import annotations

from toolkeeper.observability.build import (
    CallLogSettings,
    MetricsSettings,
    Observability,
    build_observability,
)
from toolkeeper.observability.metrics import GatewayMetrics, observe_auth_refusal
from toolkeeper.observability.recorder import CallRecorder

__all__ = [
    "CallLogSettings",
    "CallRecorder",
    "GatewayMetrics",
    "MetricsSettings",
    "Observability",
    "build_observability",
    "observe_auth_refusal",
]
