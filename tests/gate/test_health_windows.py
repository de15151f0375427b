"""Health windows under a policy (issue 23): a window below its minimum samples or observation
time is inconclusive whatever its samples say (a zero-traffic window only holds); each rule's
verdict names its measured value and threshold; a comparison without a baseline, or with one
too thin, is inconclusive; bad policies and samples are refused with their paths; and
``toolkeeper gate window`` exits 0 healthy, 1 failed, 4 inconclusive, 2 bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from toolkeeper.cli.main import cli
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate import Sample, Window, WindowPolicy, evaluate, percentile

POLICY: dict[str, Any] = {"minSamples": 10, "minObservationS": 60, "maxErrorRate": 0.1,
                          "latency": {"percentile": 90, "maxMs": 50}}


def window(latencies: list[float], errors: int = 0, *, observed_s: float = 120,
           resources: dict[str, int] | None = None) -> Window:
    samples = [Sample("exception" if i < errors else "ok", ms) for i, ms in enumerate(latencies)]
    return Window(0.0, observed_s, tuple(samples), resources or {})


def verdicts(result: Any) -> dict[str, tuple[str, Any, Any]]:
    return {v.rule: (v.status, v.measured, v.threshold) for v in result.verdicts}


def test_a_healthy_window_names_each_rules_measure_and_threshold() -> None:
    result = evaluate(WindowPolicy.from_json(POLICY), window([float(i) for i in range(1, 21)], 2))
    assert result.status == "healthy" and (result.samples, result.errors) == (20, 2)
    assert verdicts(result) == {
        "window.error_rate": ("passed", 0.1, 0.1),        # at the threshold: passes
        "window.latency": ("passed", 18.0, 50),           # nearest rank: the 18th of 20
        "window.min_observation": ("passed", 120.0, 60.0),
        "window.min_samples": ("passed", 20, 10)}
    assert [v.rule for v in result.verdicts] == sorted(v.rule for v in result.verdicts)
    assert result.counts() == {"passed": 4, "failed": 0, "inconclusive": 0, "ignored": 0}


def test_an_error_rate_or_latency_over_its_threshold_fails() -> None:
    policy = WindowPolicy.from_json(POLICY)
    high_errors = evaluate(policy, window([1.0] * 20, 3))
    assert high_errors.status == "failed"
    assert verdicts(high_errors)["window.error_rate"] == ("failed", 0.15, 0.1)
    slow = evaluate(policy, window([1.0] * 17 + [51.0] * 3))
    assert slow.status == "failed" and verdicts(slow)["window.latency"] == ("failed", 51.0, 50)


@pytest.mark.parametrize("shape", ["zero traffic", "too few samples", "too short"])
def test_a_thin_window_is_inconclusive_never_healthy_nor_failed(shape: str) -> None:
    policy = WindowPolicy.from_json(POLICY)
    thin = {"zero traffic": window([]),
            "too few samples": window([999.0] * 9, 9),  # every call failed, and slow
            "too short": window([999.0] * 20, 20, observed_s=59.9)}[shape]
    result = evaluate(policy, thin)
    assert result.status == "inconclusive"
    assert "failed" not in {v.status for v in result.verdicts}


def test_resources_over_their_limits_fail_and_a_reading_missing_is_inconclusive() -> None:
    policy = WindowPolicy.from_json({"minSamples": 1, "resources": {
        "maxRssBytes": 1000, "maxOpenFds": 10, "maxOpenStreams": 4}})
    over = evaluate(policy, window([1.0], resources={"rssBytes": 1001, "openFds": 10,
                                                      "openStreams": 0}))
    assert over.status == "failed" and verdicts(over)["window.resources.rss"] == (
        "failed", 1001, 1000)
    assert verdicts(over)["window.resources.open_fds"][0] == "passed"
    unread = evaluate(policy, window([1.0], resources={"rssBytes": 10, "openFds": 1}))
    assert unread.status == "inconclusive"
    assert verdicts(unread)["window.resources.open_streams"] == ("inconclusive", None, 4)


BASELINE_POLICY = {**POLICY, "baseline": {"maxErrorRateDelta": 0.05, "maxLatencyRatio": 1.5}}


def test_the_comparisons_with_a_baseline_pass_fail_or_wait_for_one() -> None:
    policy = WindowPolicy.from_json(BASELINE_POLICY)
    candidate = window([10.0] * 20, 2)
    assert evaluate(policy, candidate).status == "inconclusive"  # no baseline: cannot compare
    assert evaluate(policy, candidate, window([10.0] * 5)).status == "inconclusive"  # too thin
    same = evaluate(policy, candidate, window([10.0] * 40, 4))
    assert same.status == "healthy"
    assert verdicts(same)["window.baseline.error_rate_delta"] == ("passed", 0.0, 0.05)
    assert verdicts(same)["window.baseline.latency_ratio"] == ("passed", 1.0, 1.5)
    worse = evaluate(policy, candidate, window([6.0] * 40))
    assert worse.status == "failed"
    assert verdicts(worse)["window.baseline.error_rate_delta"] == ("failed", 0.1, 0.05)
    assert verdicts(worse)["window.baseline.latency_ratio"][0] == "failed"


def test_error_outcomes_name_what_counts_as_an_error() -> None:
    policy = WindowPolicy.from_json({"minSamples": 1, "maxErrorRate": 0,
                                     "errorOutcomes": ["exception", "timeout"]})
    tool_said_no = Window(0, 1, (Sample("ok", 1), Sample("error", 1)))
    assert evaluate(policy, tool_said_no).status == "healthy"
    timed_out = Window(0, 1, (Sample("ok", 1), Sample("timeout", 1)))
    assert verdicts(evaluate(policy, timed_out))["window.error_rate"] == ("failed", 0.5, 0)


@pytest.mark.parametrize(("value", "path"), [
    ({}, "$.minSamples"),                               # missing: named by its path
    ({"minSamples": 0}, "$.minSamples"),
    ({"minSamples": "10"}, "$.minSamples"),
    ({"minSamples": 1, "maxErrorRate": 1.5}, "$.maxErrorRate"),
    ({"minSamples": 1, "latency": {"percentile": 0, "maxMs": 1}}, "$.latency.percentile"),
    ({"minSamples": 1, "healthy": "yes"}, "$.healthy"),  # unknown keys are refused
])
def test_a_bad_policy_is_refused_with_its_path(value: Any, path: str) -> None:
    with pytest.raises(ToolkeeperError) as caught:
        WindowPolicy.from_json(value)
    assert caught.value.code == "gate.policy_invalid"
    assert path in [e["path"] for e in caught.value.data["errors"]]


@pytest.mark.parametrize(("value", "path"), [
    ({"startS": 0, "endS": 1}, "$.samples"),
    ({"startS": 0, "endS": 1, "samples": [{"outcome": "ok", "latencyMs": -1}]},
     "$.samples[0].latencyMs"),
    ({"startS": 5, "endS": 1, "samples": []}, "$.endS"),
])
def test_bad_samples_are_refused_with_their_path(value: Any, path: str) -> None:
    with pytest.raises(ToolkeeperError) as caught:
        Window.from_json(value)
    assert caught.value.code == "gate.samples_invalid"
    assert path in [e["path"] for e in caught.value.data["errors"]]


@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=50),
       st.floats(min_value=0.01, max_value=100))
def test_the_percentile_is_a_measured_value_with_its_share_at_or_below(
        latencies: list[float], p: float) -> None:
    found = percentile(latencies, p)
    assert found in latencies
    assert sum(1 for x in latencies if x <= found) >= p / 100 * len(latencies) - 1e-9


@given(st.integers(min_value=0, max_value=9), st.integers(min_value=0, max_value=9))
def test_below_the_minimum_samples_a_window_is_never_healthy(count: int, errors: int) -> None:
    result = evaluate(WindowPolicy.from_json(POLICY), window([1.0] * count, min(errors, count)))
    assert result.status == "inconclusive"


def _write(path: Path, value: Any) -> str:
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def _samples(latencies: list[float], errors: int = 0) -> dict[str, Any]:
    return {"startS": 0, "endS": 120, "samples": [
        {"outcome": "exception" if i < errors else "ok", "latencyMs": ms}
        for i, ms in enumerate(latencies)]}


@pytest.mark.parametrize(("samples", "code", "status"), [
    (_samples([1.0] * 20), 0, "healthy"),
    (_samples([1.0] * 20, 5), 1, "failed"),
    (_samples([1.0] * 3), 4, "inconclusive"),
])
def test_gate_window_exits_by_the_windows_status(tmp_path: Path, samples: dict[str, Any],
                                                  code: int, status: str) -> None:
    args = ["gate", "window", "--policy", _write(tmp_path / "policy.json", POLICY),
            "--samples", _write(tmp_path / "samples.json", samples)]
    as_json = CliRunner().invoke(cli, [*args, "--json"])
    assert as_json.exit_code == code, as_json.output
    body = json.loads(as_json.stdout)
    assert body["status"] == status and body["samples"] == len(samples["samples"])
    again = CliRunner().invoke(cli, [*args, "--json"])
    assert again.stdout == as_json.stdout  # canonical: the same bytes each run
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == code and text.stdout.startswith(f"window {status}:")


def test_gate_window_refuses_bad_input_with_exit_2(tmp_path: Path) -> None:
    samples = _write(tmp_path / "samples.json", _samples([1.0]))
    bad_policy = _write(tmp_path / "policy.json", {"minSamples": 1, "healthy": "yes"})
    done = CliRunner().invoke(cli, ["gate", "window", "--policy", bad_policy,
                                    "--samples", samples, "--json"])
    assert done.exit_code == 2
    assert json.loads(done.stdout)["error"]["code"] == "gate.policy_invalid"
    missing = CliRunner().invoke(cli, ["gate", "window", "--policy", str(tmp_path / "none.json"),
                                       "--samples", samples, "--json"])
    assert missing.exit_code == 2 and "error" in json.loads(missing.stdout)


@pytest.mark.parametrize(("extra", "code", "option"), [
    ((), "cli.option_missing", "--samples"),
    (("--calls", "--version", "1.0.0", "--since", "1h"), "cli.option_missing", "--tool"),
    (("--calls", "--tool", "t", "--since", "1h"), "cli.option_missing", "--version"),
    (("--calls", "--tool", "t", "--version", "1.0.0"), "cli.option_missing", "--since"),
    (("--calls", "--tool", "t", "--version", "1.0.0", "--since", "1h", "--samples", "x.json"),
     "cli.option_conflict", "--calls"),
])
def test_gate_window_names_the_option_it_is_missing(tmp_path: Path, extra: tuple[str, ...],
                                                     code: str, option: str) -> None:
    policy = _write(tmp_path / "policy.json", POLICY)
    done = CliRunner().invoke(cli, ["gate", "window", "--policy", policy, *extra, "--json"])
    assert done.exit_code == 2
    error = json.loads(done.stdout)["error"]
    assert (error["code"], error["data"]["option"]) == (code, option)
