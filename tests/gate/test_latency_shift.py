"""The baseline's Mann-Whitney U rule (``baseline.mannWhitney``): a candidate whose latencies
are shifted above the baseline's fails at ``alpha`` with the p-value as its measure; the same
distribution passes; fewer samples than the test's ``minSamples`` in either window leave it
``ignored`` (the window's status is the other rules'); no baseline leaves it inconclusive; a
histogram window takes part at its buckets' bounds; without SciPy the policy is refused."""

from __future__ import annotations

import sys

import pytest

from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate import HistogramWindow, Sample, Window, WindowPolicy, WindowResult, evaluate

POLICY = WindowPolicy.from_json({"minSamples": 10, "baseline": {
    "mannWhitney": {"alpha": 0.01, "minSamples": 20}}})


def _window(latencies: list[float]) -> Window:
    return Window(0, 60, tuple(Sample("ok", ms) for ms in latencies))


def _shift(result: WindowResult) -> tuple[str, float | None]:
    [verdict] = [v for v in result.verdicts if v.rule == "window.baseline.latency_shift"]
    return verdict.status, verdict.measured


BASE = [10.0 + (i % 7) for i in range(40)]


def test_a_candidate_shifted_above_the_baseline_fails_with_its_p_value() -> None:
    result = evaluate(POLICY, _window([x + 5 for x in BASE]), _window(BASE))
    status, p_value = _shift(result)
    assert result.status == "failed" and status == "failed"
    assert p_value is not None and p_value < 0.01


def test_the_same_distribution_passes_and_a_faster_one_too() -> None:
    for candidate in (list(BASE), [x - 5 for x in BASE]):
        result = evaluate(POLICY, _window(candidate), _window(BASE))
        status, p_value = _shift(result)
        assert (result.status, status) == ("healthy", "passed") and p_value is not None


def test_too_few_samples_for_the_test_leave_it_ignored() -> None:
    result = evaluate(POLICY, _window([100.0] * 15), _window(BASE))
    assert _shift(result) == ("ignored", None)
    assert result.status == "healthy" and result.counts()["ignored"] == 1


def test_without_a_baseline_the_rule_is_inconclusive() -> None:
    result = evaluate(POLICY, _window(BASE))
    assert _shift(result) == ("inconclusive", None) and result.status == "inconclusive"


def test_a_histogram_window_takes_part_at_its_bucket_bounds() -> None:
    slow = HistogramWindow(0, 60, {"ok": 40}, ((10.0, 0), (100.0, 30)))
    assert slow.latencies() == [100.0] * 40  # the 10 past the last bound: at that bound
    fast = HistogramWindow(0, 60, {"ok": 40}, ((10.0, 40), (100.0, 40)))
    assert _shift(evaluate(POLICY, slow, fast))[0] == "failed"
    assert _shift(evaluate(POLICY, fast, slow))[0] == "passed"


def test_without_scipy_a_policy_that_asks_for_the_test_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    with pytest.raises(ToolkeeperError) as caught:
        WindowPolicy.from_json({"minSamples": 1, "baseline": {"mannWhitney": {"alpha": 0.05}}})
    assert caught.value.code == "gate.needs_scipy"
    assert WindowPolicy.from_json({"minSamples": 1}).shift_alpha is None  # others need nothing
