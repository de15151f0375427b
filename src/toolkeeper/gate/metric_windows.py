"""Health windows read from a gateway's Prometheus endpoint: scraped at the window's start, every
``every_s`` while it lasts, and at its end. The calls of one tool version are the deltas of
``toolkeeper_calls_total{tool,version,outcome}`` and of the
``toolkeeper_call_latency_seconds`` histogram between the first and the last scrape (a scrape
counts every call answered before it, so the counts are exact), summed over every other label
(``rollout_step``: a version's calls at every step of a rollout and outside one); the
resources are the highest readings of any scrape: ``process_resident_memory_bytes``, ``process_open_fds`` and
``toolkeeper_open_streams``. A counter that went down between the scrapes (the gateway
restarted) refuses the window (``gate.metrics_reset``) rather than miscount it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.windows import HistogramWindow

__all__ = ["Scrape", "histogram_window", "observe", "parse_scrape", "scrape"]

_RESOURCES = {"process_resident_memory_bytes": "rssBytes", "process_open_fds": "openFds",
              "toolkeeper_open_streams": "openStreams"}
_SCRAPE_TIMEOUT_S = 10.0


@dataclass
class Scrape:
    """What one scrape said: calls by (tool, version, outcome), the cumulative latency buckets
    by (tool, version) as ``{upper bound in seconds: count}``, and the resource readings."""

    calls: dict[tuple[str, str, str], float] = field(default_factory=dict)
    buckets: dict[tuple[str, str], dict[float, float]] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=dict)


def parse_scrape(text: str) -> Scrape:
    """A scrape's text exposition as a :class:`Scrape` (ToolkeeperError
    ``gate.metrics_unreadable`` when it is not the Prometheus text format)."""
    out = Scrape()
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = sample.labels
                if sample.name == "toolkeeper_calls_total":
                    key = (labels["tool"], labels["version"], labels["outcome"])
                    out.calls[key] = out.calls.get(key, 0.0) + sample.value
                elif sample.name == "toolkeeper_call_latency_seconds_bucket":
                    bounds = out.buckets.setdefault((labels["tool"], labels["version"]), {})
                    le = float(labels["le"])
                    bounds[le] = bounds.get(le, 0.0) + sample.value
                elif sample.name in _RESOURCES:
                    out.resources[_RESOURCES[sample.name]] = sample.value
    except (ValueError, KeyError, TypeError) as exc:
        raise ToolkeeperError(f"the metrics are not Prometheus text: {exc}",
                              code="gate.metrics_unreadable") from None
    return out


def scrape(url: str) -> Scrape:
    """One scrape of ``url`` (ToolkeeperError ``gate.metrics_unreachable``)."""
    try:
        response = httpx.get(url, timeout=_SCRAPE_TIMEOUT_S)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise ToolkeeperError(f"cannot scrape {url}: {type(exc).__name__}",
                              code="gate.metrics_unreachable", data={"url": url}) from None
    return parse_scrape(response.text)


def _delta(now: float, before: float, what: str) -> int:
    if now < before:
        raise ToolkeeperError(f"{what} went down between the scrapes: the gateway restarted",
                              code="gate.metrics_reset", data={"metric": what})
    return round(now - before)


def histogram_window(first: Scrape, last: Scrape, tool: str, version: str, start_s: float,
                     end_s: float, resources: dict[str, float]) -> HistogramWindow:
    """The window of ``tool`` ``version`` between two scrapes."""
    outcomes = {}
    for (t, v, outcome), count in sorted(last.calls.items()):
        if (t, v) == (tool, version):
            n = _delta(count, first.calls.get((t, v, outcome), 0.0), "toolkeeper_calls_total")
            if n:
                outcomes[outcome] = n
    before = first.buckets.get((tool, version), {})
    buckets = tuple((bound * 1000, _delta(count, before.get(bound, 0.0),
                                          "toolkeeper_call_latency_seconds"))
                    for bound, count in sorted(last.buckets.get((tool, version), {}).items())
                    if not math.isinf(bound))
    return HistogramWindow(start_s, end_s, outcomes, buckets,
                           {key: int(value) for key, value in sorted(resources.items())})


def observe(url: str, duration_s: float, every_s: float, *,
            stop: threading.Event | None = None,
            on_start: Callable[[], None] | None = None,
            clock: Callable[[], float] = time.time) -> tuple[Scrape, Scrape, float, float,
                                                             dict[str, float]]:
    """Scrape ``url`` now, every ``every_s`` for ``duration_s`` (or until ``stop`` is set), and
    at the end: the first and last scrapes, the window's start and end (``clock`` seconds) and
    the highest resource readings of all of them. ``on_start`` runs after the first scrape."""
    stop = stop if stop is not None else threading.Event()
    peaks: dict[str, float] = {}

    def take() -> Scrape:
        taken = scrape(url)
        for key, value in taken.resources.items():
            peaks[key] = max(peaks.get(key, value), value)
        return taken

    first, start = take(), clock()
    if on_start is not None:
        on_start()
    deadline = time.monotonic() + duration_s
    while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
        if stop.wait(min(every_s, left)):
            break
        take()
    last, end = take(), clock()
    return first, last, start, end, peaks
