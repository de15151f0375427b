"""The stream rules of a health window (SPEC 6: "for streams: duration, first-event latency,
event count"): each stream a window served is known by its duration, the latency of its first
event and its event count, and the policy's ``streams`` object bounds them.

* ``window.streams.duration``: the ``percentile``-th (default 99) stream duration, at most
  ``maxDurationMs``;
* ``window.streams.first_event``: the same percentile of first-event latencies, at most
  ``maxFirstEventMs``;
* ``window.streams.events``: the fewest events any stream carried, at least ``minEvents``.

A rule the policy asks for is ``inconclusive`` on a window that served no stream (a histogram
window never knows its streams), or that is below its minimum samples or observation time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.gate.statuses import FAILED, INCONCLUSIVE, PASSED

__all__ = ["DEFAULT_PERCENTILE", "Stream", "stream_verdicts"]

DEFAULT_PERCENTILE: Final = 99


@dataclass(frozen=True, slots=True)
class Stream:
    """One stream served in the window."""

    duration_ms: float
    first_event_ms: float
    events: int

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Stream:
        return cls(float(value["durationMs"]), float(value["firstEventMs"]), int(value["events"]))


def stream_verdicts(policy: Mapping[str, Any], streams: Sequence[Stream], enough: bool,
                    percentile: Any, verdict: Any) -> list[Any]:
    """The verdicts of ``policy`` (the policy's ``streams`` object) on ``streams``;
    ``percentile`` and ``verdict`` are the window module's (nearest rank; a Verdict from rule,
    status, measured and threshold), so the rules read as every other window rule does."""
    p = policy.get("percentile", DEFAULT_PERCENTILE)
    judged = enough and bool(streams)
    out = []
    for key, rule, values in (
            ("maxDurationMs", "window.streams.duration", [s.duration_ms for s in streams]),
            ("maxFirstEventMs", "window.streams.first_event", [s.first_event_ms for s in streams])):
        if key in policy:
            measured = percentile(values, p)
            status = (INCONCLUSIVE if not judged or measured is None
                      else PASSED if measured <= policy[key] else FAILED)
            out.append(verdict(rule, status, measured, policy[key]))
    if "minEvents" in policy:
        fewest = min((s.events for s in streams), default=None)
        status = (INCONCLUSIVE if not judged or fewest is None
                  else PASSED if fewest >= policy["minEvents"] else FAILED)
        out.append(verdict("window.streams.events", status, fewest, policy["minEvents"]))
    return out
