"""The call log's values: a row as written (:data:`CallValues`), a row as read
(:class:`CallRow`) and a filter over rows (:class:`CallQuery`). The call log's table
(:mod:`toolkeeper.registry.call_rows`) and its SQL segments
(:mod:`toolkeeper.registry.call_segments`) both speak them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["CallQuery", "CallRow", "CallValues", "at_text", "row_dict"]

_COLUMNS = ("at", "tenant", "credential", "tool", "version", "era", "arguments_digest",
            "outcome", "latency_ms", "request_id", "rollout_step")


CallValues = tuple[int, str, str, str, str, str, str, str, float, str, int | None]
"""One row to store, in column order: ``at`` (microseconds since the epoch, UTC), tenant,
credential (``""``: none), tool, version, era, arguments digest, outcome, latency in
milliseconds, request id as JSON text (``""``: none), and the rollout step that served the call
(the step's share in percent; None: no rollout routed the tool)."""

_second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text


def at_text(at_us: int) -> str:
    """``at_us`` (microseconds since the epoch) as UTC ISO-8601 text with microseconds and
    ``Z`` (``2026-01-01T00:00:00.000001Z``). The text of the whole second is kept from one
    call to the next, so rows of one second format it once."""
    global _second
    seconds, micros = divmod(at_us, 1_000_000)
    known = _second
    if known[0] != seconds:
        known = _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    return f"{known[1]}.{micros:06d}Z"


def row_dict(row: Any, columns: tuple[str, ...]) -> dict[str, Any]:
    """A stored row as ``--json`` prints it: ``seq``, then ``columns`` (attributes of
    ``row``), the request id decoded from its stored JSON text (None when absent)."""
    out: dict[str, Any] = {"seq": row.seq}
    out.update((name, getattr(row, name)) for name in columns)
    out["request_id"] = (None if row.request_id is None
                         else msgspec.json.decode(row.request_id))
    return out


class CallRow(msgspec.Struct, frozen=True, gc=False):
    """One completed, dispatched call as read. ``at_us``: when it was dispatched, in
    microseconds since the epoch (``at``: the same as UTC text); ``request_id``: the
    JSON-RPC id as JSON text."""

    at_us: int
    tenant: str
    credential: str | None
    tool: str
    version: str
    era: str
    arguments_digest: str
    outcome: str
    latency_ms: float
    request_id: str | None
    rollout_step: int | None = None
    """The share (percent) of the rollout step that served the call; None: no rollout routed
    the tool (and every call logged before the call log kept it)."""
    seq: int = 0

    @property
    def at(self) -> str:
        return at_text(self.at_us)

    def to_dict(self) -> dict[str, Any]:
        return row_dict(self, _COLUMNS)

    def values(self) -> CallValues:
        return (self.at_us, self.tenant, self.credential or "", self.tool, self.version,
                self.era, self.arguments_digest, self.outcome, self.latency_ms,
                self.request_id or "", self.rollout_step)

    @classmethod
    def of(cls, values: CallValues, seq: int = 0) -> CallRow:
        (at_us, tenant, credential, tool, version, era, digest, outcome, latency, request_id,
         step) = values
        return cls(at_us, tenant, credential or None, tool, version, era, digest, outcome,
                   latency, request_id or None, step, seq=seq)


@dataclass(frozen=True, slots=True)
class CallQuery:
    """A filter over the call log (``None``: any); rows come newest first, at most ``limit``."""

    tool: str | None = None
    tenant: str | None = None
    outcome: str | None = None
    since: int | None = None  # an ``at`` lower bound in microseconds (inclusive)
    limit: int = 100

    def matches(self, row: CallRow) -> bool:
        return ((self.tool is None or row.tool == self.tool)
                and (self.tenant is None or row.tenant == self.tenant)
                and (self.outcome is None or row.outcome == self.outcome)
                and (self.since is None or row.at_us >= self.since))
