"""Windows known by counts (a scrape's deltas): the latency percentile is the upper bound of the
bucket that holds it, one past the last finite bound fails a threshold at or below that bound
and is inconclusive above it; a counter that went down between scrapes refuses the window;
text that is not the Prometheus format is refused."""

from __future__ import annotations

import pytest

from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate import HistogramWindow, WindowPolicy, evaluate
from toolkeeper.gate.metric_windows import Scrape, histogram_window, parse_scrape

TEXT = """# TYPE toolkeeper_calls counter
toolkeeper_calls_total{tool="t",version="1.0.0",outcome="ok"} 12.0
toolkeeper_calls_total{tool="t",version="1.0.0",outcome="exception"} 3.0
# TYPE toolkeeper_call_latency_seconds histogram
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",le="0.01"} 10.0
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",le="0.1"} 14.0
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",le="+Inf"} 15.0
toolkeeper_call_latency_seconds_count{tool="t",version="1.0.0"} 15.0
toolkeeper_call_latency_seconds_sum{tool="t",version="1.0.0"} 1.0
# TYPE process_open_fds gauge
process_open_fds 12.0
"""


def test_a_scrapes_deltas_make_the_window() -> None:
    first = Scrape(calls={("t", "1.0.0", "ok"): 2.0},
                   buckets={("t", "1.0.0"): {0.01: 2.0, 0.1: 2.0, float("inf"): 2.0}})
    window = histogram_window(first, parse_scrape(TEXT), "t", "1.0.0", 0, 60, {"openFds": 12})
    assert window.outcomes == {"exception": 3, "ok": 10} and window.total() == 13
    assert window.buckets == ((10.0, 8), (100.0, 12))
    assert window.latency(50) == (10.0, False) and window.latency(95) == (100.0, True)
    result = evaluate(WindowPolicy.from_json({"minSamples": 1,
                                              "latency": {"percentile": 50, "maxMs": 10}}),
                      window)
    assert result.status == "healthy" and result.errors == 3


@pytest.mark.parametrize(("max_ms", "status"), [(100, "failed"), (50, "failed"),
                                                (500, "inconclusive")])
def test_a_percentile_past_the_last_bound_fails_only_a_threshold_below_it(
        max_ms: float, status: str) -> None:
    window = HistogramWindow(0, 60, {"ok": 10}, ((10.0, 1), (100.0, 5)))
    policy = WindowPolicy.from_json({"minSamples": 1,
                                     "latency": {"percentile": 99, "maxMs": max_ms}})
    [latency] = [v for v in evaluate(policy, window).verdicts if v.rule == "window.latency"]
    assert (latency.status, latency.measured) == (status, 100.0)


def test_a_counter_that_went_down_refuses_the_window() -> None:
    later = Scrape(calls={("t", "1.0.0", "ok"): 1.0})
    with pytest.raises(ToolkeeperError) as caught:
        histogram_window(parse_scrape(TEXT), later, "t", "1.0.0", 0, 60, {})
    assert caught.value.code == "gate.metrics_reset"


def test_text_that_is_not_prometheus_is_refused() -> None:
    with pytest.raises(ToolkeeperError) as caught:
        parse_scrape('toolkeeper_calls_total{tool="t"} twelve\n')
    assert caught.value.code == "gate.metrics_unreadable"


STEPPED = """# TYPE toolkeeper_calls counter
toolkeeper_calls_total{tool="t",version="1.0.0",outcome="ok",rollout_step="none"} 4.0
toolkeeper_calls_total{tool="t",version="1.0.0",outcome="ok",rollout_step="5"} 6.0
toolkeeper_calls_total{tool="t",version="1.0.0",outcome="exception",rollout_step="25"} 1.0
toolkeeper_calls_total{tool="t",version="1.1.0",outcome="ok",rollout_step="25"} 2.0
# TYPE toolkeeper_call_latency_seconds histogram
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",rollout_step="none",le="0.01"} 4.0
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",rollout_step="none",le="+Inf"} 4.0
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",rollout_step="5",le="0.01"} 5.0
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",rollout_step="5",le="+Inf"} 6.0
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",rollout_step="25",le="0.01"} 0.0
toolkeeper_call_latency_seconds_bucket{tool="t",version="1.0.0",rollout_step="25",le="+Inf"} 1.0
"""


def test_a_versions_series_at_every_rollout_step_are_summed() -> None:
    scraped = parse_scrape(STEPPED)
    assert scraped.calls == {("t", "1.0.0", "ok"): 10.0, ("t", "1.0.0", "exception"): 1.0,
                             ("t", "1.1.0", "ok"): 2.0}
    assert scraped.buckets[("t", "1.0.0")] == {0.01: 9.0, float("inf"): 11.0}
    window = histogram_window(Scrape(), scraped, "t", "1.0.0", 0, 60, {})
    assert window.outcomes == {"exception": 1, "ok": 10} and window.buckets == ((10.0, 9),)
