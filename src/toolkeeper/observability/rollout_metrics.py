"""Per-rollout gauges of a serving gateway, read at scrape time from the registry's rollouts
(docs/rollouts.md): :class:`RolloutCollector` turns the rollouts the call path honours
(:meth:`~toolkeeper.registry.rollout_book.RolloutBook.routing`: running, paused or halted;
cached per registry generation, so a scrape reads the store only when the generation moved)
into, labelled ``tool``, ``candidate`` and ``target``:

* ``toolkeeper_rollout_share_percent``: the candidate's share of principals at this step;
* ``toolkeeper_rollout_state{..., state}``: 1 for the state the rollout is in, 0 for the other
  states a routing rollout can be in (``running``, ``paused``, ``halted``);
* ``toolkeeper_rollout_holds`` and ``toolkeeper_rollout_max_holds``: the consecutive ``hold``
  decisions at this step, and the limit past which the rollout halts;
* ``toolkeeper_rollout_step_started_timestamp_seconds``: when this step began.

A rollout that ended (promoted, rolled back, aborted) routes nothing and has no series. When
the store cannot be read at a scrape, the rollout gauges are left out of that scrape (logged)
and every other metric is still served.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from prometheus_client.core import GaugeMetricFamily, Metric

from toolkeeper.errors import ToolkeeperError
from toolkeeper.registry.rollouts import HALTED, PAUSED, RUNNING, Rollout

__all__ = ["ROUTING_STATES", "RolloutCollector"]

ROUTING_STATES: Final = (RUNNING, PAUSED, HALTED)
"""The states a rollout the call path honours is in: one series each."""
_LABELS: Final = ("tool", "candidate", "target")

_log = logging.getLogger("toolkeeper.metrics")


class RolloutCollector:
    """A prometheus-client collector over ``routing()``, called at each scrape."""

    def __init__(self, routing: Callable[[], Mapping[str, Rollout]]) -> None:
        self._routing = routing

    def describe(self) -> Iterator[Metric]:
        return self._families({})

    def collect(self) -> Iterator[Metric]:
        try:
            rollouts = self._routing()
        except ToolkeeperError as exc:
            _log.warning("metrics: the rollouts could not be read (%s)", exc.code)
            rollouts = {}
        return self._families(rollouts)

    def _families(self, rollouts: Mapping[str, Rollout]) -> Iterator[Metric]:
        share = GaugeMetricFamily("toolkeeper_rollout_share_percent", "The candidate's share "
                                  "of principals at the rollout's step.", labels=_LABELS)
        state = GaugeMetricFamily("toolkeeper_rollout_state", "The rollout's state (1: the "
                                  "state it is in).", labels=(*_LABELS, "state"))
        holds = GaugeMetricFamily("toolkeeper_rollout_holds", "Consecutive hold decisions at "
                                  "the rollout's step.", labels=_LABELS)
        limit = GaugeMetricFamily("toolkeeper_rollout_max_holds", "The hold decisions at one "
                                  "step after which the rollout halts.", labels=_LABELS)
        started = GaugeMetricFamily("toolkeeper_rollout_step_started_timestamp_seconds",
                                    "When the rollout's step began.", labels=_LABELS)
        for tool in sorted(rollouts):
            rollout = rollouts[tool]
            labels = (tool, str(rollout.candidate), str(rollout.target))
            share.add_metric(labels, float(rollout.share))
            for value in ROUTING_STATES:
                state.add_metric((*labels, value), 1.0 if rollout.state == value else 0.0)
            holds.add_metric(labels, float(rollout.holds))
            limit.add_metric(labels, float(rollout.max_holds))
            started.add_metric(labels, rollout.step_started_us / 1e6)
        yield share
        yield state
        yield holds
        yield limit
        yield started
