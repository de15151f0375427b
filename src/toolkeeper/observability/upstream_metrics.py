"""Per-upstream metrics of a serving gateway, read at scrape time from what it supervises
(docs/upstreams.md): :class:`UpstreamCollector` turns rows (one per upstream: ``name``,
``state``, ``breaker``, ``restarts``, ``calls``, ``failures``, ``tools``, ``pending``) into

* ``toolkeeper_upstream_info{upstream, transport, era}``: 1, naming its transport and the era
  it speaks (the configured one until a session is open);
* ``toolkeeper_upstream_state{upstream, state}``: 1 for the upstream's health state, 0 for the
  others (``failed``, ``open-breaker``, ``half-open``, ``backoff``, ``connected``, ``idle``);
* ``toolkeeper_upstream_breaker{upstream, breaker}``: the same for ``open``, ``half-open``,
  ``closed``;
* ``toolkeeper_upstream_tools{upstream}`` and ``toolkeeper_upstream_pending_drifts{upstream}``;
* ``toolkeeper_upstream_restarts_total``, ``toolkeeper_upstream_calls_total`` and
  ``toolkeeper_upstream_failures_total`` ``{upstream}``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

__all__ = ["BREAKERS", "STATES", "UpstreamCollector"]

STATES: Final = ("failed", "open-breaker", "half-open", "backoff", "connected", "idle")
BREAKERS: Final = ("open", "half-open", "closed")

Rows = Callable[[], Sequence[Mapping[str, Any]]]


class UpstreamCollector:
    """A prometheus-client collector over ``rows()``, called at each scrape."""

    def __init__(self, rows: Rows) -> None:
        self._rows = rows

    def describe(self) -> Iterator[Metric]:
        return self._families([])

    def collect(self) -> Iterator[Metric]:
        return self._families(self._rows())

    def _families(self, rows: Sequence[Mapping[str, Any]]) -> Iterator[Metric]:
        info = GaugeMetricFamily("toolkeeper_upstream_info", "Each upstream's transport and "
                                 "era.", labels=("upstream", "transport", "era"))
        state = GaugeMetricFamily("toolkeeper_upstream_state", "Each upstream's health state "
                                  "(1: the state it is in).", labels=("upstream", "state"))
        breaker = GaugeMetricFamily("toolkeeper_upstream_breaker", "Each upstream's circuit "
                                    "breaker (1: the state it is in).",
                                    labels=("upstream", "breaker"))
        gauges = {key: GaugeMetricFamily(f"toolkeeper_upstream_{metric}", text,
                                         labels=("upstream",))
                  for key, metric, text in (
                      ("tools", "tools", "Tools the upstream serves under contract."),
                      ("pending", "pending_drifts", "Drifts waiting for an operator."))}
        counters = {key: CounterMetricFamily(f"toolkeeper_upstream_{key}", text,
                                             labels=("upstream",))
                    for key, text in (
                        ("restarts", "Restarts of the upstream's process (stdio)."),
                        ("calls", "Calls forwarded to the upstream."),
                        ("failures", "Forwarded calls that got no answer."))}
        for row in sorted(rows, key=lambda r: str(r["name"])):
            name = str(row["name"])
            info.add_metric((name, str(row.get("transport")), str(row.get("era"))), 1.0)
            for value in STATES:
                state.add_metric((name, value), 1.0 if row.get("state") == value else 0.0)
            for value in BREAKERS:
                breaker.add_metric((name, value), 1.0 if row.get("breaker") == value else 0.0)
            for key, family in gauges.items():
                family.add_metric((name,), float(row.get(key) or 0))
            for key, counter in counters.items():
                counter.add_metric((name,), float(row.get(key) or 0))
        yield info
        yield state
        yield breaker
        yield from gauges.values()
        yield from counters.values()
