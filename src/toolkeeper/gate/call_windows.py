"""Health windows read from the durable call log (``toolkeeper calls``'s rows): every call of
one tool version dispatched in ``[start, end]``, its outcome and latency as the gateway logged
them. A call still running, or answered in the last ``flush_interval_ms`` before the read, is
not in the log yet: read a window once its end is a flush interval behind."""

from __future__ import annotations

from collections.abc import Sequence

from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.windows import Sample, Window
from toolkeeper.registry.call_rows import CallQuery, CallRows, open_call_rows

__all__ = ["MAX_CALLS", "windows_from_calls", "windows_from_log"]

MAX_CALLS = 1_000_000
"""The most calls one window reads (ToolkeeperError ``gate.window_too_large`` past it)."""


def windows_from_calls(rows: CallRows, tool: str, versions: Sequence[str], start_us: int,
                       end_us: int) -> dict[str, Window]:
    """The window of each of ``versions`` of ``tool`` over ``[start_us, end_us]``
    (microseconds since the epoch), from one read of ``rows``."""
    found = rows.query(CallQuery(tool=tool, since=start_us, limit=MAX_CALLS + 1))
    if len(found) > MAX_CALLS:
        raise ToolkeeperError(f"more than {MAX_CALLS} calls of {tool} since the window's start: "
                              "narrow it", code="gate.window_too_large",
                              data={"tool": tool, "max": MAX_CALLS})
    samples: dict[str, list[Sample]] = {version: [] for version in versions}
    for row in sorted(found, key=lambda r: (r.at_us, r.seq)):
        kept = samples.get(row.version)
        if kept is not None and row.at_us <= end_us:
            kept.append(Sample(row.outcome, row.latency_ms, row.at_us / 1e6))
    return {version: Window(start_us / 1e6, end_us / 1e6, tuple(kept))
            for version, kept in samples.items()}


def windows_from_log(registry_url: str | None, tool: str, versions: Sequence[str],
                     start_us: int, end_us: int) -> dict[str, Window]:
    """:func:`windows_from_calls` over the call log of the registry at ``registry_url``
    (None: the default location), opened read-only for the one read."""
    rows = open_call_rows(registry_url, read_only=True)
    try:
        return windows_from_calls(rows, tool, versions, start_us, end_us)
    finally:
        rows.close()
