"""Assembling the gateway's observability from its configuration.

How ``serve`` wires it: build the settings from ``[calllog]``, ``[metrics]`` and
``logging.otel``, open the registry, then ``obs = build_observability(calllog, metrics,
registry=registry, registry_url=url, otel=otel)`` (the loader's ``config.calllog`` and
``config.metrics`` fit as they are); pass ``call_log=obs.call_log`` to
``build_app``/``build_gateway`` (None: keep the default in-memory log), serve
``obs.wrap_app(app)`` instead of ``app``, and call ``obs.stop()`` after the server stops and
before the registry closes (it writes the last rows). ``obs.metrics_port`` is the port the
metrics listener bound (``metrics.port``; None when off). An unusable registry for the call
log is a :class:`~toolkeeper.errors.StoreError`; a missing OpenTelemetry with ``otel`` on is
``config.otel_missing``; a metrics port that cannot be bound is ``config.metrics_port``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolkeeper.errors import ConfigError
from toolkeeper.observability.metrics import GatewayMetrics, MetricsMiddleware, MetricsServer
from toolkeeper.observability.recorder import CallRecorder, CallSink
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import (
    CallRows,
    RefusalRows,
    open_call_rows,
    open_refusal_rows,
)
from toolkeeper.server.calllog import CallLog

__all__ = ["CallLogSettings", "MetricsSettings", "Observability", "build_observability"]


@dataclass(frozen=True, slots=True)
class CallLogSettings:
    """``[calllog]``: see ``docs/configuration.md``."""

    durable: bool = True
    flush_interval_ms: int = 200
    max_batch: int = 1000
    retention_days: int = 30
    retention_rows: int = 1_000_000
    refusals: bool = True


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    """``[metrics]``: ``port`` 0 is off."""

    port: int = 0
    host: str = "127.0.0.1"


class _CallLogConfig(Protocol):
    """What is read of ``[calllog]`` (:class:`CallLogSettings` or the loader's own)."""

    @property
    def durable(self) -> bool: ...
    @property
    def flush_interval_ms(self) -> int: ...
    @property
    def max_batch(self) -> int: ...
    @property
    def retention_days(self) -> int: ...
    @property
    def retention_rows(self) -> int: ...
    @property
    def refusals(self) -> bool: ...


class _MetricsConfig(Protocol):
    """What is read of ``[metrics]``."""

    @property
    def port(self) -> int: ...
    @property
    def host(self) -> str: ...


@dataclass(slots=True)
class Observability:
    """What :func:`build_observability` started; ``stop`` ends it all (idempotent)."""

    call_log: CallLog | None
    metrics: GatewayMetrics | None = None
    metrics_port: int | None = None
    _stops: list[Callable[[], None]] = field(default_factory=list)

    def wrap_app(self, app: Any) -> Any:
        """The ASGI app to serve: ``app`` itself, told to count its responses into the
        metrics when it can (the gateway's HTTP app: ``observe_responses``), else behind
        :class:`MetricsMiddleware` (no metrics: ``app`` as it is)."""
        if self.metrics is None:
            return app
        observe = getattr(app, "observe_responses", None)
        if callable(observe):
            observe(self.metrics)
            return app
        return MetricsMiddleware(app, self.metrics)

    def stop(self) -> None:
        while self._stops:
            self._stops.pop()()


def build_observability(calllog: _CallLogConfig, metrics: _MetricsConfig, *,
                        registry: Registry, registry_url: str | None,
                        otel: bool = False, tracer_provider: Any = None,
                        probes: Callable[[str], tuple[int, bytes] | None] | None = None
                        ) -> Observability:
    """Start the call recorder (when calls are kept, counted or traced), the metrics listener
    (``metrics.port`` > 0, answering ``probes`` too: ``Health.answer``) and the span sink
    (``otel``); see the module docstring."""
    sinks: list[CallSink] = []
    obs = Observability(None)
    try:
        if metrics.port:
            gauges = GatewayMetrics()
            gauges.watch(registry)
            gauges.activate()
            obs._stops.append(gauges.deactivate)
            obs.metrics = gauges
            sinks.append(gauges)
        if otel:
            from toolkeeper.observability.tracing import SpanSink

            sinks.append(SpanSink(tracer_provider))
        rows: CallRows | None = (open_call_rows(registry_url) if calllog.durable else None)
        if rows is None and not sinks:
            return obs
        refusals: RefusalRows | None = None
        if rows is not None and calllog.refusals:
            try:
                refusals = open_refusal_rows(registry_url)
            except BaseException:
                rows.close()
                raise
        recorder = CallRecorder(rows, sinks, flush_interval_ms=calllog.flush_interval_ms,
                                max_batch=calllog.max_batch,
                                retention_days=calllog.retention_days,
                                retention_rows=calllog.retention_rows,
                                refusal_rows=refusals)
        recorder.start()
        obs._stops.append(recorder.stop)
        obs.call_log = recorder
        if obs.metrics is not None:
            server = _listen(obs.metrics, metrics, recorder.drain, probes)
            obs._stops.append(server.stop)
            obs.metrics_port = server.port
    except BaseException:
        obs.stop()
        raise
    return obs


def _listen(gauges: GatewayMetrics, settings: _MetricsConfig,
            before_scrape: Callable[[], None],
            probes: Callable[[str], tuple[int, bytes] | None] | None) -> MetricsServer:
    try:
        return MetricsServer(gauges, settings.host, settings.port, before_scrape,
                             probes=probes)
    except OSError as exc:
        raise ConfigError(f"cannot listen for metrics on {settings.host}:{settings.port}: "
                          f"{exc.strerror or exc}", code="config.metrics_port",
                          data={"key": "metrics.port"}) from None
