"""The stream rules of a health window (SPEC 6: duration, first-event latency, event count):
each judged at its percentile or minimum with its measured value and threshold, inconclusive on
a window that served no stream or is below its minimums, refused when malformed; and the
samples' optional ``atS`` kept through a bundle's healthWindows section."""

from __future__ import annotations

from typing import Any

import pytest

from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate import HistogramWindow, Window, WindowPolicy, evaluate
from toolkeeper.gate.observed import observed_from_json, observed_to_json

STREAMS: dict[str, Any] = {"minSamples": 2, "streams": {
    "percentile": 50, "maxDurationMs": 1000, "maxFirstEventMs": 100, "minEvents": 2}}


def _window(streams: list[dict[str, Any]], calls: int = 2) -> Window:
    return Window.from_json({"startS": 0, "endS": 10, "samples": [
        {"outcome": "ok", "latencyMs": 5, "atS": 1 + i} for i in range(calls)],
        "streams": streams})


def _verdicts(window: Any, policy: dict[str, Any] = STREAMS) -> dict[str, tuple[Any, ...]]:
    result = evaluate(WindowPolicy.from_json(policy), window)
    return {v.rule: (v.status, v.measured, v.threshold) for v in result.verdicts
            if v.rule.startswith("window.streams.")}


def test_each_stream_rule_names_its_measured_value_and_threshold() -> None:
    window = _window([{"durationMs": 400, "firstEventMs": 20, "events": 5},
                      {"durationMs": 1500, "firstEventMs": 150, "events": 1},
                      {"durationMs": 800, "firstEventMs": 60, "events": 3}])
    assert _verdicts(window) == {
        "window.streams.duration": ("passed", 800.0, 1000),
        "window.streams.first_event": ("passed", 60.0, 100),
        "window.streams.events": ("failed", 1, 2)}
    assert evaluate(WindowPolicy.from_json(STREAMS), window).status == "failed"


def test_the_percentile_defaults_to_99() -> None:
    policy = {"minSamples": 2, "streams": {"maxDurationMs": 1000}}
    window = _window([{"durationMs": 10, "firstEventMs": 1, "events": 1}] * 99
                     + [{"durationMs": 5000, "firstEventMs": 1, "events": 1}])
    assert _verdicts(window, policy) == {"window.streams.duration": ("passed", 10.0, 1000)}
    window = _window([{"durationMs": 10, "firstEventMs": 1, "events": 1}] * 98
                     + [{"durationMs": 5000, "firstEventMs": 1, "events": 1}] * 2)
    assert _verdicts(window, policy) == {"window.streams.duration": ("failed", 5000.0, 1000)}


def test_no_stream_or_too_few_samples_is_inconclusive() -> None:
    assert {s for s, _, _ in _verdicts(_window([])).values()} == {"inconclusive"}
    thin = _window([{"durationMs": 1, "firstEventMs": 1, "events": 9}], calls=1)
    assert {s for s, _, _ in _verdicts(thin).values()} == {"inconclusive"}
    histogram = HistogramWindow(0, 10, {"ok": 5}, ((10.0, 5),))
    assert {s for s, _, _ in _verdicts(histogram).values()} == {"inconclusive"}


@pytest.mark.parametrize("stream", [
    pytest.param({"durationMs": -1, "firstEventMs": 1, "events": 1}, id="negative"),
    pytest.param({"durationMs": 1, "firstEventMs": 1}, id="no-events"),
    pytest.param({"durationMs": 1, "firstEventMs": 1, "events": 1.5}, id="fractional-events"),
    pytest.param({"durationMs": 1, "firstEventMs": 1, "events": 1, "extra": 1}, id="unknown"),
])
def test_a_malformed_stream_is_refused_with_its_path(stream: dict[str, Any]) -> None:
    with pytest.raises(ToolkeeperError) as caught:
        _window([stream])
    assert caught.value.code == "gate.samples_invalid"
    assert {e["path"].split(".")[1].split("[")[0] for e in caught.value.data["errors"]} == {
        "streams"}


def test_a_windows_samples_times_and_streams_survive_its_json() -> None:
    window = _window([{"durationMs": 400, "firstEventMs": 20, "events": 5}])
    kept = observed_to_json(window)
    assert kept["samples"][0] == {"outcome": "ok", "latencyMs": 5.0, "atS": 1.0}
    assert observed_from_json("samples", kept) == window
    histogram = HistogramWindow(0, 10, {"ok": 5, "error": 1}, ((10.0, 4), (50.0, 6)))
    assert observed_from_json("metrics", observed_to_json(histogram)) == histogram
