"""A window as evidence: the JSON a bundle's ``healthWindows`` section keeps of what was
observed (docs/gate.md, "The evidence bundle"), and the window read back from it, so the gate
judges the observation itself rather than a verdict someone wrote down.

A window of samples (from a samples file or the call log) is kept as its samples file
(:data:`~toolkeeper.gate.window_schemas.SAMPLES_SCHEMA`); a histogram window (from the metrics)
as its calls per outcome and its cumulative latency buckets.
"""

from __future__ import annotations

from typing import Any, Final

from toolkeeper.contracts.validate import validate
from toolkeeper.gate.windows import (
    HistogramWindow,
    Observed,
    Window,
    WindowPolicy,
    _invalid,
    evaluate,
)
from toolkeeper.registry import Registry
from toolkeeper.registry.records import as_version, not_found

__all__ = ["HISTOGRAM_SCHEMA", "SOURCES", "health_section", "observed_from_json",
           "observed_to_json"]

SOURCES: Final = ("calls", "metrics", "samples")
"""Where a window came from: the durable call log, the Prometheus endpoint, a samples file."""

_COUNT: Final = {"type": "integer", "minimum": 0}
HISTOGRAM_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "toolkeeper histogram window",
    "type": "object",
    "required": ["startS", "endS", "outcomes", "buckets"],
    "additionalProperties": False,
    "properties": {
        "startS": {"type": "number"},
        "endS": {"type": "number"},
        "outcomes": {"type": "object", "additionalProperties": _COUNT},
        "buckets": {"type": "array", "items": {
            "type": "object", "required": ["le", "count"], "additionalProperties": False,
            "properties": {"le": {"type": "number", "minimum": 0}, "count": _COUNT}}},
        "resources": {"type": "object", "additionalProperties": _COUNT},
    },
}
"""A histogram window: calls per outcome, and ``count`` calls at or below ``le`` ms."""


def observed_to_json(window: Observed) -> dict[str, Any]:
    """The JSON of what ``window`` observed."""
    out: dict[str, Any] = {"startS": window.start_s, "endS": window.end_s}
    if isinstance(window, HistogramWindow):
        out["outcomes"] = dict(sorted(window.outcomes.items()))
        out["buckets"] = [{"le": le, "count": count} for le, count in window.buckets]
    else:
        out["samples"] = [{"outcome": s.outcome, "latencyMs": s.latency_ms}
                          | ({} if s.at_s is None else {"atS": s.at_s}) for s in window.samples]
        if window.streams:
            out["streams"] = [{"durationMs": s.duration_ms, "firstEventMs": s.first_event_ms,
                               "events": s.events} for s in window.streams]
    if window.resources:
        out["resources"] = dict(sorted(window.resources.items()))
    return out


def observed_from_json(source: str, value: Any) -> Observed:
    """The window ``value`` keeps (ToolkeeperError ``gate.samples_invalid`` with its errors)."""
    if source != "metrics":
        return Window.from_json(value)
    issues = validate(HISTOGRAM_SCHEMA, value)
    if issues:
        raise _invalid("samples", issues)
    return HistogramWindow(float(value["startS"]), float(value["endS"]), dict(value["outcomes"]),
                           tuple((float(b["le"]), int(b["count"])) for b in value["buckets"]),
                           dict(value.get("resources", {})))


def health_section(policy: WindowPolicy, source: str,
                   candidate: tuple[str, str, Observed],
                   baseline: tuple[str, str, Observed] | None,
                   registry: Registry | None = None) -> dict[str, Any]:
    """A bundle's ``healthWindows`` section: each window (tool, version, what was observed) and
    its result under ``policy``, the candidate's against the baseline, the baseline's on its
    own under the policy's absolute rules (as the gate rejudges them); with ``registry``, each
    version's descriptor SHA-256 (the contract's digest; an unknown version is the registry's
    NotFoundError)."""

    def entry(party: tuple[str, str, Observed], judged: WindowPolicy,
              base: Observed | None) -> dict[str, Any]:
        tool, version, observed = party
        out = {"tool": tool, "version": version, "source": source,
               "observed": observed_to_json(observed),
               "result": evaluate(judged, observed, base).to_dict()}
        if registry is not None:
            wanted = as_version(version)
            spec = registry.get(tool, wanted)
            if spec is None:
                raise not_found(tool, wanted)
            out["descriptorSha256"] = spec.content_digest
        return out

    return {"candidate": entry(candidate, policy, None if baseline is None else baseline[2]),
            "baseline": None if baseline is None else entry(baseline, policy.absolute(), None)}
