"""The JSON Schemas of a health-window policy and of a samples file (docs/gate.md)."""

from __future__ import annotations

from typing import Any, Final

__all__ = ["POLICY_SCHEMA", "SAMPLES_SCHEMA"]

_COUNT: Final = {"type": "integer", "minimum": 0}
_RATE: Final = {"type": "number", "minimum": 0, "maximum": 1}
_NON_NEGATIVE: Final = {"type": "number", "minimum": 0}

POLICY_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "toolkeeper health-window policy",
    "type": "object",
    "required": ["minSamples"],
    "additionalProperties": False,
    "properties": {
        "minSamples": {"type": "integer", "minimum": 1},
        "minObservationS": _NON_NEGATIVE,
        "maxErrorRate": _RATE,
        "errorOutcomes": {"type": "array", "items": {"type": "string", "minLength": 1},
                          "uniqueItems": True},
        "latency": {
            "type": "object", "required": ["percentile", "maxMs"], "additionalProperties": False,
            "properties": {"percentile": {"type": "number", "exclusiveMinimum": 0,
                                          "maximum": 100},
                           "maxMs": _NON_NEGATIVE}},
        "resources": {
            "type": "object", "additionalProperties": False,
            "properties": {"maxRssBytes": _COUNT, "maxOpenStreams": _COUNT,
                           "maxOpenFds": _COUNT}},
        "streams": {
            "type": "object", "additionalProperties": False,
            "properties": {"percentile": {"type": "number", "exclusiveMinimum": 0,
                                          "maximum": 100},
                           "maxDurationMs": _NON_NEGATIVE, "maxFirstEventMs": _NON_NEGATIVE,
                           "minEvents": _COUNT}},
        "baseline": {
            "type": "object", "additionalProperties": False,
            "properties": {"maxErrorRateDelta": _RATE,
                           "maxLatencyRatio": {"type": "number", "exclusiveMinimum": 0},
                           "mannWhitney": {
                               "type": "object", "required": ["alpha"],
                               "additionalProperties": False,
                               "properties": {"alpha": {"type": "number", "exclusiveMinimum": 0,
                                                        "exclusiveMaximum": 1},
                                              "minSamples": {"type": "integer",
                                                             "minimum": 1}}}}},
    },
}
"""A policy: the minimum samples (below it a window is inconclusive), the minimum observation
time, the absolute thresholds and the deltas against a baseline window."""

SAMPLES_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "toolkeeper health-window samples",
    "type": "object",
    "required": ["startS", "endS", "samples"],
    "additionalProperties": False,
    "properties": {
        "startS": {"type": "number"},
        "endS": {"type": "number"},
        "samples": {"type": "array", "items": {
            "type": "object", "required": ["outcome", "latencyMs"],
            "additionalProperties": False,
            "properties": {"outcome": {"type": "string", "minLength": 1},
                           "latencyMs": _NON_NEGATIVE, "atS": {"type": "number"}}}},
        "streams": {"type": "array", "items": {
            "type": "object", "required": ["durationMs", "firstEventMs", "events"],
            "additionalProperties": False,
            "properties": {"durationMs": _NON_NEGATIVE, "firstEventMs": _NON_NEGATIVE,
                           "events": _COUNT}}},
        "resources": {
            "type": "object", "additionalProperties": False,
            "properties": {"rssBytes": _COUNT, "openStreams": _COUNT, "openFds": _COUNT}},
    },
}
"""A window's samples: when it was observed (seconds, any epoch), one object per call
(its outcome as the call log records it, its latency and, optionally, when it ended: ``atS``,
on the same clock), the highest resource readings seen over it and, optionally, one object per
stream served (its duration, the latency of its first event and its event count)."""
