"""Health windows (SPEC 6, seed 004): a policy declared before a rollout, a window of samples,
and the verdict of each of the policy's rules on it.

A :class:`Window` is what was observed of one tool version over a span of time: one
:class:`Sample` per call (its outcome, as the call log records it, and its latency) and the
highest resource readings seen. A :class:`WindowPolicy` names the rules: the minimum samples
and observation time, the maximum error rate, the maximum latency at a percentile, resource
limits, the streams' duration, first-event latency and event count (:mod:`.streams`), and,
given a baseline window of the version in force over the same time, the largest error-rate
delta and latency ratio allowed against it.

:func:`evaluate` gives one :class:`Verdict` per rule (its measured value, its threshold and
``passed``, ``failed`` or ``inconclusive``), sorted by rule id, and the window's status:

* ``inconclusive`` when the window (or the baseline a comparison needs) holds fewer samples
  than ``minSamples`` or was observed for less than ``minObservationS``: never healthy, never
  failed, whatever its samples say (so a zero-traffic window can only hold);
* else ``failed`` when any rule failed, else ``healthy``.

A latency percentile is the nearest rank of the sorted latencies (the smallest latency with at
least that share of the samples at or below it), so it is one of the measured values, the same
on every machine. Outcomes in ``errorOutcomes`` count as errors (default: every outcome but
``ok``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from toolkeeper.contracts.validate import validate
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.shift import require_scipy, shifted_above
from toolkeeper.gate.statuses import FAILED, HEALTHY, IGNORED, INCONCLUSIVE, PASSED
from toolkeeper.gate.streams import Stream, stream_verdicts
from toolkeeper.gate.window_schemas import POLICY_SCHEMA, SAMPLES_SCHEMA

__all__ = ["FAILED", "HEALTHY", "IGNORED", "INCONCLUSIVE", "HistogramWindow", "Observed", "Sample",
           "Verdict", "Window", "WindowPolicy", "WindowResult", "evaluate", "percentile"]

_PASSED: Final = PASSED

_RESOURCES: Final = (("maxRssBytes", "rssBytes", "window.resources.rss"),
                     ("maxOpenStreams", "openStreams", "window.resources.open_streams"),
                     ("maxOpenFds", "openFds", "window.resources.open_fds"))


def _invalid(what: str, issues: Sequence[Any]) -> ToolkeeperError:
    first = issues[0]
    return ToolkeeperError(f"{what} is not valid: {first.path}: {first.message}",
                           code=f"gate.{what.replace(' ', '_')}_invalid",
                           data={"errors": [issue.to_dict() for issue in issues]})


@dataclass(frozen=True, slots=True)
class WindowPolicy:
    """A health-window policy (its JSON form: :data:`~toolkeeper.gate.window_schemas.
    POLICY_SCHEMA`)."""

    min_samples: int
    min_observation_s: float = 0.0
    max_error_rate: float | None = None
    error_outcomes: frozenset[str] | None = None
    latency_percentile: float | None = None
    max_latency_ms: float | None = None
    resources: Mapping[str, int] = field(default_factory=dict)
    max_error_rate_delta: float | None = None
    max_latency_ratio: float | None = None
    shift_alpha: float | None = None
    shift_min_samples: int = 20
    streams: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> WindowPolicy:
        """The policy of a JSON value (ToolkeeperError ``gate.policy_invalid`` with every
        schema error, sorted by path)."""
        issues = validate(POLICY_SCHEMA, value)
        if issues:
            raise _invalid("policy", issues)
        latency = value.get("latency", {})
        baseline = value.get("baseline", {})
        outcomes = value.get("errorOutcomes")
        shift = baseline.get("mannWhitney")
        if shift is not None:
            require_scipy()
        return cls(min_samples=value["minSamples"],
                   min_observation_s=float(value.get("minObservationS", 0)),
                   max_error_rate=value.get("maxErrorRate"),
                   error_outcomes=None if outcomes is None else frozenset(outcomes),
                   latency_percentile=latency.get("percentile"),
                   max_latency_ms=latency.get("maxMs"),
                   resources=dict(value.get("resources", {})),
                   max_error_rate_delta=baseline.get("maxErrorRateDelta"),
                   max_latency_ratio=baseline.get("maxLatencyRatio"),
                   shift_alpha=None if shift is None else shift["alpha"],
                   shift_min_samples=20 if shift is None else shift.get("minSamples", 20),
                   streams=dict(value.get("streams", {})))

    def absolute(self) -> WindowPolicy:
        """This policy without the rules that compare with a baseline: how a baseline window
        (the version in force) is judged on its own."""
        return replace(self, max_error_rate_delta=None, max_latency_ratio=None,
                       shift_alpha=None)

    @property
    def compares(self) -> bool:
        """Whether a rule of the policy needs a baseline window."""
        return self.max_error_rate_delta is not None or self.shift_alpha is not None or (
            self.max_latency_ratio is not None and self.latency_percentile is not None)

    def is_error(self, outcome: str) -> bool:
        return outcome != "ok" if self.error_outcomes is None else outcome in self.error_outcomes


@dataclass(frozen=True, slots=True)
class Sample:
    outcome: str
    latency_ms: float
    at_s: float | None = None


@dataclass(frozen=True, slots=True)
class Window:
    """What was observed over ``[start_s, end_s]``."""

    start_s: float
    end_s: float
    samples: tuple[Sample, ...]
    resources: Mapping[str, int] = field(default_factory=dict)
    streams: tuple[Stream, ...] = ()

    @classmethod
    def from_json(cls, value: Any) -> Window:
        """The window of a samples file's JSON (ToolkeeperError ``gate.samples_invalid``)."""
        issues = validate(SAMPLES_SCHEMA, value)
        if issues:
            raise _invalid("samples", issues)
        if value["endS"] < value["startS"]:
            raise ToolkeeperError("samples is not valid: $.endS: ends before it starts",
                                  code="gate.samples_invalid",
                                  data={"errors": [{"path": "$.endS", "keyword": "minimum",
                                                    "message": "ends before it starts"}]})
        return cls(float(value["startS"]), float(value["endS"]),
                   tuple(Sample(s["outcome"], float(s["latencyMs"]),
                                None if "atS" not in s else float(s["atS"]))
                         for s in value["samples"]),
                   dict(value.get("resources", {})),
                   tuple(Stream.from_json(s) for s in value.get("streams", ())))

    @property
    def observed_s(self) -> float:
        return self.end_s - self.start_s

    def total(self) -> int:
        return len(self.samples)

    def errors(self, policy: WindowPolicy) -> int:
        return sum(1 for s in self.samples if policy.is_error(s.outcome))

    def latency(self, p: float) -> tuple[float | None, bool]:
        """The ``p``-th percentile latency and False (it is exact); None when empty."""
        return percentile(self.latencies(), p), False

    def latencies(self) -> list[float]:
        return [s.latency_ms for s in self.samples]


@dataclass(frozen=True, slots=True)
class HistogramWindow:
    """A window known by its counts (a scrape's deltas): the calls per outcome and the latency
    histogram, ``(upper bound in ms, calls at or below it)`` ascending, cumulative (the last
    finite bound's count may be below the total: those calls took longer)."""

    start_s: float
    end_s: float
    outcomes: Mapping[str, int]
    buckets: tuple[tuple[float, int], ...]
    resources: Mapping[str, int] = field(default_factory=dict)
    streams: tuple[Stream, ...] = ()
    """Always empty: a histogram does not know its streams."""

    @property
    def observed_s(self) -> float:
        return self.end_s - self.start_s

    def total(self) -> int:
        return sum(self.outcomes.values())

    def errors(self, policy: WindowPolicy) -> int:
        return sum(n for outcome, n in self.outcomes.items() if policy.is_error(outcome))

    def latency(self, p: float) -> tuple[float | None, bool]:
        """The upper bound of the bucket holding the ``p``-th percentile (so the true value is
        at most one bucket below it) and False; past the last finite bound, that bound and
        True (the true value is above it); None when empty."""
        total = self.total()
        if not total:
            return None, False
        rank = max(1, math.ceil(p / 100 * total))
        for bound, count in self.buckets:
            if count >= rank:
                return bound, False
        return (self.buckets[-1][0] if self.buckets else None), True

    def latencies(self) -> list[float]:
        """Each call at its bucket's upper bound (past the last finite bound: at that bound)."""
        out: list[float] = []
        below = 0
        for bound, count in self.buckets:
            out += [bound] * (count - below)
            below = count
        if self.buckets:
            out += [self.buckets[-1][0]] * (self.total() - below)
        return out


Observed = Window | HistogramWindow
"""A window of samples, or of counts."""


def percentile(latencies: Sequence[float], p: float) -> float | None:
    """The nearest-rank ``p``-th percentile (0 < p <= 100) of ``latencies``; None when empty."""
    if not latencies:
        return None
    ordered = sorted(latencies)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


@dataclass(frozen=True, slots=True)
class Verdict:
    """One rule on one window: what was measured, against what, and its status."""

    rule: str
    status: str
    measured: float | None
    threshold: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "status": self.status, "measured": self.measured,
                "threshold": self.threshold}


@dataclass(frozen=True, slots=True)
class WindowResult:
    status: str
    samples: int
    errors: int
    verdicts: tuple[Verdict, ...]

    def counts(self) -> dict[str, int]:
        out = {_PASSED: 0, FAILED: 0, INCONCLUSIVE: 0, IGNORED: 0}
        for verdict in self.verdicts:
            out[verdict.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "samples": self.samples, "errors": self.errors,
                "counts": self.counts(), "verdicts": [v.to_dict() for v in self.verdicts]}


def _judge(rule: str, measured: float | None, threshold: float, enough: bool) -> Verdict:
    if not enough or measured is None:
        return Verdict(rule, INCONCLUSIVE, measured, threshold)
    return Verdict(rule, _PASSED if measured <= threshold else FAILED, measured, threshold)


def _error_rate(policy: WindowPolicy, window: Observed) -> tuple[int, float | None]:
    errors, total = window.errors(policy), window.total()
    return errors, (errors / total if total else None)


def _enough(policy: WindowPolicy, window: Observed) -> bool:
    return (window.total() >= policy.min_samples
            and window.observed_s >= policy.min_observation_s)


def _judge_latency(rule: str, measured: tuple[float | None, bool], threshold: float,
                   enough: bool) -> Verdict:
    value, above = measured
    if above and value is not None and enough:  # the true value is above ``value``
        return Verdict(rule, FAILED if value >= threshold else INCONCLUSIVE, value, threshold)
    return _judge(rule, value, threshold, enough)


def evaluate(policy: WindowPolicy, window: Observed, baseline: Observed | None = None
             ) -> WindowResult:
    """Every rule of ``policy`` on ``window`` (against ``baseline`` where a rule compares):
    see the module docstring."""
    enough = _enough(policy, window)
    total = window.total()
    verdicts = [
        Verdict("window.min_samples", _PASSED if total >= policy.min_samples
                else INCONCLUSIVE, total, policy.min_samples),
        Verdict("window.min_observation", _PASSED
                if window.observed_s >= policy.min_observation_s else INCONCLUSIVE,
                window.observed_s, policy.min_observation_s),
    ]
    errors, rate = _error_rate(policy, window)
    if policy.max_error_rate is not None:
        verdicts.append(_judge("window.error_rate", rate, policy.max_error_rate, enough))
    p = policy.latency_percentile
    latency = window.latency(p) if p is not None else (None, False)
    if p is not None and policy.max_latency_ms is not None:
        verdicts.append(_judge_latency("window.latency", latency, policy.max_latency_ms,
                                       enough))
    for key, reading, rule in _RESOURCES:
        limit = policy.resources.get(key)
        if limit is not None:
            verdicts.append(_judge(rule, window.resources.get(reading), limit, enough))
    if policy.streams:
        verdicts += stream_verdicts(policy.streams, window.streams, enough, percentile, Verdict)
    if policy.compares:
        verdicts += _compared(policy, window, baseline, enough, rate, latency)
    verdicts.sort(key=lambda v: v.rule)
    statuses = {v.status for v in verdicts}
    status = (INCONCLUSIVE if INCONCLUSIVE in statuses else FAILED if FAILED in statuses
              else HEALTHY)
    return WindowResult(status, total, errors, tuple(verdicts))


def _compared(policy: WindowPolicy, window: Observed, baseline: Observed | None, enough: bool,
              rate: float | None, latency: tuple[float | None, bool]) -> list[Verdict]:
    """The rules against the baseline: inconclusive without one, or with one too thin."""
    both = enough and baseline is not None and _enough(policy, baseline)
    out = []
    if policy.max_error_rate_delta is not None:
        base_rate = _error_rate(policy, baseline)[1] if baseline is not None else None
        delta = None if rate is None or base_rate is None else rate - base_rate
        out.append(_judge("window.baseline.error_rate_delta", delta,
                          policy.max_error_rate_delta, both))
    p, ratio = policy.latency_percentile, policy.max_latency_ratio
    if p is not None and ratio is not None:
        base, base_above = baseline.latency(p) if baseline is not None else (None, False)
        value, above = latency
        exact = not above and not base_above  # a bound past the histogram compares nothing
        measured = None if value is None or not base or not exact else value / base
        out.append(_judge("window.baseline.latency_ratio", measured, ratio, both))
    if policy.shift_alpha is not None:
        out.append(_shift(policy, window, baseline, both))
    return out


def _shift(policy: WindowPolicy, window: Observed, baseline: Observed | None,
           both: bool) -> Verdict:
    """The Mann-Whitney rule: ``ignored`` unless both windows hold its ``minSamples`` (the
    test says nothing on fewer), else failed when the candidate's latencies are shifted above
    the baseline's at ``alpha`` (its measured value: the p-value)."""
    alpha, rule = policy.shift_alpha, "window.baseline.latency_shift"
    assert alpha is not None
    if baseline is None or not both:
        return Verdict(rule, INCONCLUSIVE, None, alpha)
    if min(window.total(), baseline.total()) < policy.shift_min_samples:
        return Verdict(rule, IGNORED, None, alpha)
    p_value = shifted_above(window.latencies(), baseline.latencies())
    return Verdict(rule, FAILED if p_value < alpha else _PASSED, p_value, alpha)
