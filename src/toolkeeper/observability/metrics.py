"""Prometheus metrics of the gateway, on a private registry, served on their own listener.

Every metric lives in a :class:`prometheus_client.CollectorRegistry` of its own (never the
process-global one), so two gateways in one process (tests) do not share counts. Call counts
and latencies are fed by the call recorder's flusher (a :class:`CallSink`), never from a
call's path, into :class:`_CallCounts`: plain per-(tool, version, outcome, rollout step)
bucket counts and latency sums, a few list increments per call instead of a prometheus-client Counter and
Histogram (a lock per increment and a Python loop over the buckets), exposed at scrape time
as the ``toolkeeper_calls`` counter and the ``toolkeeper_call_latency_seconds`` histogram,
each labelled ``rollout_step``: the share in percent of the step of the tool's rollout that
served the call (the call record's ``rollout_step``), ``none`` when no rollout routed the tool.
:meth:`GatewayMetrics.watch` adds the rollouts' own gauges, read at scrape time
(:class:`~toolkeeper.observability.rollout_metrics.RolloutCollector`).
HTTP responses by status and open streams are told by the gateway's HTTP app itself (its
``observe_responses``, from the send wrapper it has anyway: no ASGI layer per request);
:class:`MetricsMiddleware`, an ASGI wrapper, counts the same for any other app.
Authentication refusals are counted through :func:`observe_auth_refusal`, which the auth
code calls without holding a metrics object: it counts into the metrics of the running
gateway (none: nothing happens).

:class:`MetricsServer` serves the exposition format over HTTP (``GET`` any path) on
``metrics.host:metrics.port``, a listener apart from the MCP endpoint; each scrape first drains
the call recorder, so it counts every call answered before it.
"""

from __future__ import annotations

import logging
import selectors
import socket
import threading
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from contextlib import suppress
from http import HTTPStatus
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, ProcessCollector, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from toolkeeper.observability.rollout_metrics import RolloutCollector
from toolkeeper.observability.upstream_metrics import UpstreamCollector
from toolkeeper.registry import Registry
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollouts import Rollout
from toolkeeper.server.calllog import CallRecord

__all__ = ["GatewayMetrics", "MetricsMiddleware", "MetricsServer", "observe_auth_refusal"]

_log = logging.getLogger("toolkeeper.metrics")

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                    2.5, 5.0, 10.0, 30.0, 60.0)

_go_text: Callable[[float], str] = floatToGoString  # a bound as prometheus-client writes it
_LE = (*(_go_text(bound) for bound in _LATENCY_BUCKETS), "+Inf")
_SUM = len(_LE)  # a cell: the count in each bucket (not cumulative), then the latency sum

_active: GatewayMetrics | None = None

_Key = tuple[str, str, str, int | None]
"""A cell's (tool, version, outcome, rollout step: the share in percent, None for none)."""


def _step_label(step: int | None) -> str:
    return "none" if step is None else str(step)


def observe_auth_refusal(reason: str) -> None:
    """Count one refused credential (``missing``, ``expired``, ``bad_signature``, ...) in
    the running gateway's metrics; nothing when metrics are off."""
    metrics = _active
    if metrics is not None:
        metrics.auth_refused(reason)


class _CallCounts:
    """The calls counter and the latency histogram, one custom collector. Written by one
    thread at a time (the call recorder drains under its own lock): :meth:`cell` gives the
    counts of one (tool, version, outcome, rollout step), which the writer increments in place; a new cell
    is added under ``_lock``, and :meth:`collect` copies every cell under it (a copy of a
    list is one step for the interpreter, so it sees each increment whole)."""

    def __init__(self) -> None:
        self.cells: dict[_Key, list[float]] = {}
        self._created: dict[_Key, float] = {}
        self._lock = threading.Lock()

    def cell(self, key: _Key) -> list[float]:
        with self._lock:
            found = self.cells.get(key)
            if found is None:
                found = self.cells[key] = [0.0] * (_SUM + 1)
                self._created[key] = time.time()
            return found

    def describe(self) -> Iterator[Metric]:
        return self._families()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            cells = [(key, list(cell), self._created[key]) for key, cell in self.cells.items()]
        return self._families(cells)

    def _families(self, cells: Iterable[tuple[_Key, list[float], float]] = (),
                  ) -> Iterator[Metric]:
        calls = CounterMetricFamily("toolkeeper_calls", "Dispatched tools/call by tool, "
                                    "version, outcome and rollout step.",
                                    labels=("tool", "version", "outcome", "rollout_step"))
        latency = HistogramMetricFamily("toolkeeper_call_latency_seconds", "Handler latency "
                                        "of dispatched calls.",
                                        labels=("tool", "version", "rollout_step"))
        merged: dict[tuple[str, str, str], list[float]] = {}
        first: dict[tuple[str, str, str], float] = {}
        for (tool, version, outcome, step), cell, created in cells:
            label = _step_label(step)
            calls.add_metric((tool, version, outcome, label), sum(cell[:_SUM]), created=created)
            series = (tool, version, label)
            into = merged.setdefault(series, [0.0] * (_SUM + 1))
            into[:] = [a + b for a, b in zip(into, cell, strict=True)]
            first[series] = min(first.get(series, created), created)
        for series, cell in merged.items():
            running, buckets = 0.0, []
            for le, count in zip(_LE, cell, strict=False):  # the cell's last item: the sum
                running += count
                buckets.append((le, running))
            latency.add_metric(series, buckets, cell[_SUM])
            latency.samples.append(Sample(latency.name + "_created", dict(zip(
                ("tool", "version", "rollout_step"), series, strict=True)), first[series]))
        yield calls
        yield latency


class _StatusCounts:
    """The ``toolkeeper_http_responses`` counter by status: a plain count per status, written
    by the serving event loop's thread only (one dictionary write per response, no lock) and
    copied whole at scrape time (one step for the interpreter)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self._created: dict[int, float] = {}

    def first(self, status: int) -> None:
        self._created[status] = time.time()  # before the count, which a scrape reads first
        self.counts[status] = 1

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily("toolkeeper_http_responses", "HTTP responses by status.",
                                  labels=("status",))

    def collect(self) -> Iterator[Metric]:
        counts = dict(self.counts)
        family = CounterMetricFamily("toolkeeper_http_responses", "HTTP responses by status.",
                                     labels=("status",))
        for status, count in sorted(counts.items()):
            family.add_metric((str(status),), count, created=self._created[status])
        yield family


class GatewayMetrics:
    """The gateway's metrics (a :class:`CallSink` for the call recorder)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        ProcessCollector(registry=r)  # process_resident_memory_bytes, process_open_fds, ...
        self._counts = _CallCounts()
        r.register(self._counts)
        self._cells = self._counts.cells
        self._refusals = Counter("toolkeeper_gate_refusals", "tools/call refused before "
                                 "dispatch, by reason.", ("reason",), registry=r)
        self._invalid = Counter("toolkeeper_validation_failures", "tools/call whose arguments "
                                "failed validation.", ("tool", "version"), registry=r)
        self._responses = _StatusCounts()
        self._status_counts = self._responses.counts
        r.register(self._responses)
        self.open_streams = Gauge("toolkeeper_open_streams", "SSE response streams open.",
                                  registry=r)
        self._auth = Counter("toolkeeper_auth_refusals", "Refused credentials by reason.",
                             ("reason",), registry=r)
        self._generation = Gauge("toolkeeper_registry_generation", "The registry's "
                                 "generation (moves on every change).", registry=r)
        self._changed = Gauge("toolkeeper_registry_last_change_timestamp_seconds", "When the "
                              "gateway last saw the registry change (its start at first).",
                              registry=r)
        self._unsubscribe: Callable[[], None] | None = None
        self._rollouts: RolloutCollector | None = None

    # --- feeds -----------------------------------------------------------------------------

    def completed(self, record: CallRecord, at_ns: int, outcome: str,
                  latency_ms: float) -> None:
        key = (record.tool, record.version, outcome, record.rollout_step)
        cell = self._cells.get(key)
        if cell is None:
            cell = self._counts.cell(key)
        seconds = latency_ms / 1000.0
        cell[bisect_left(_LATENCY_BUCKETS, seconds)] += 1  # le: the first bound >= seconds
        cell[_SUM] += seconds

    def refused(self, reason: str) -> None:
        self._refusals.labels(reason).inc()

    def invalid(self, tool: str, version: str) -> None:
        self._invalid.labels(tool, version).inc()

    def auth_refused(self, reason: str) -> None:
        self._auth.labels(reason).inc()

    def responded(self, status: int) -> None:
        try:
            self._status_counts[status] += 1
        except KeyError:  # (raised before anything is written) the status's first response
            self._responses.first(status)

    def stream_opened(self) -> None:
        self.open_streams.inc()

    def stream_closed(self) -> None:
        self.open_streams.dec()

    def watch(self, registry: Registry) -> None:
        """Report ``registry``'s generation (read at scrape time) and last change time, and
        the rollouts that route its tools (:class:`RolloutCollector`, read at scrape time)."""
        self._generation.set_function(lambda: float(registry.generation))
        if self._rollouts is None:
            book = rollout_book(registry)

            def routing() -> Mapping[str, Rollout]:
                registry.generation  # noqa: B018 (caught up with other processes' changes)
                return book.routing()

            self._rollouts = RolloutCollector(routing)
            self.registry.register(self._rollouts)
        self._changed.set(time.time())
        self._unsubscribe = registry.subscribe(lambda: self._changed.set(time.time()))

    def watch_upstreams(self, rows: Callable[[], Any]) -> None:
        """Report each upstream's health, breaker, tools, pending drifts and counts (``rows()``
        read at scrape time: :class:`~toolkeeper.observability.upstream_metrics.
        UpstreamCollector`)."""
        self.registry.register(UpstreamCollector(rows))

    # --- lifetime --------------------------------------------------------------------------

    def activate(self) -> None:
        """Make these the metrics :func:`observe_auth_refusal` counts into."""
        global _active
        _active = self

    def deactivate(self) -> None:
        global _active
        if _active is self:
            _active = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None


_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_App = Callable[[_Scope, Callable[[], Awaitable[_Message]],
                 Callable[[_Message], Awaitable[None]]], Awaitable[None]]


class MetricsMiddleware:
    """ASGI: counts HTTP responses by status and keeps the open-streams gauge (a response
    whose ``content-type`` is ``text/event-stream``, from its start until its last body
    message or the end of the request, whichever comes first)."""

    def __init__(self, app: _App, metrics: GatewayMetrics) -> None:
        self.app = app
        self._metrics = metrics

    async def __call__(self, scope: _Scope, receive: Callable[[], Awaitable[_Message]],
                       send: Callable[[_Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        metrics = self._metrics
        streaming = False

        async def counted(message: _Message) -> None:
            nonlocal streaming
            kind = message["type"]
            if kind == "http.response.start":
                metrics.responded(message["status"])
                if any(name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                       for name, value in message.get("headers", ())):
                    streaming = True
                    metrics.open_streams.inc()
            elif streaming and kind == "http.response.body" and not message.get("more_body"):
                streaming = False
                metrics.open_streams.dec()
            await send(message)

        try:
            await self.app(scope, receive, counted)
        finally:
            if streaming:
                metrics.open_streams.dec()


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged."""


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def _probe_answer(environ: dict[str, Any], start_response: Any, status: int,
                  body: bytes) -> Iterable[bytes]:
    method = environ.get("REQUEST_METHOD")
    if method not in ("GET", "HEAD"):
        start_response("405 Method Not Allowed", [("Allow", "GET, HEAD"),
                                                  ("Content-Length", "0")])
        return [b""]
    start_response(f"{status} {HTTPStatus(status).phrase}",
                   [("Content-Type", "application/json"), ("Cache-Control", "no-store"),
                    ("Content-Length", str(len(body)))])
    return [b"" if method == "HEAD" else body]


class MetricsServer:
    """The exposition listener: ``before_scrape`` runs first on every scrape; ``probes``
    (``Health.answer``) answers ``/healthz`` and ``/readyz`` on it too."""

    def __init__(self, metrics: GatewayMetrics, host: str, port: int,
                 before_scrape: Callable[[], None] | None = None, *,
                 probes: Callable[[str], tuple[int, bytes] | None] | None = None) -> None:
        exposition = make_wsgi_app(metrics.registry)
        hook = before_scrape

        def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            answer = None if probes is None else probes(environ.get("PATH_INFO", ""))
            if answer is not None:  # /healthz, /readyz: no scrape, no hook
                return _probe_answer(environ, start_response, *answer)
            if hook is not None:
                hook()
            result: Iterable[bytes] = exposition(environ, start_response)
            return result

        self._server = make_server(host, port, app, _ThreadingServer, handler_class=_QuietHandler)
        self.port: int = self._server.server_port
        self._server.timeout = 0  # handle_request never waits: it runs when a scrape is ready
        # The listener sleeps until a scrape or stop() (its wake socket), never on a timer: an
        # idle gateway's metrics thread does no work between scrapes.
        self._stopping = False
        self._wake, self._woken = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, name="toolkeeper-metrics",
                                        daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        server = self._server
        with selectors.DefaultSelector() as selector:
            selector.register(server.fileno(), selectors.EVENT_READ)
            selector.register(self._woken, selectors.EVENT_READ)
            while not self._stopping:
                for key, _ in selector.select():
                    if key.fileobj is not self._woken and not self._stopping:
                        server.handle_request()

    def stop(self) -> None:
        self._stopping = True
        with suppress(OSError):
            self._wake.send(b"\0")
        self._thread.join(5.0)
        self._server.server_close()
        self._wake.close()
        self._woken.close()
