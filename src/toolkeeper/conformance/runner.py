"""The runner: every transcript against one target, through the one MCP client.

The target is a :class:`~toolkeeper.client.Target` (an ASGI app in process, a Streamable HTTP
URL, a stdio command). The connections, one per era, are :mod:`.sessions`'s: the era named by
``era`` (``2026-07-28`` or ``2025-11-25``; the other era's cases are skipped), or with
``auto`` the era SPEC 5.1's fallback policy selects (reported with its recorded decision)
and then every other era the target serves. An era the target does not serve is one
``era.unserved`` verdict in the report and its cases are skipped. Cases run in name order;
recorded cases (self-checks of the judgment) are judged without the target; a case a transport
does not define, or that needs a capability the target did not advertise, is skipped. A target
that cannot be reached at all is a :class:`~toolkeeper.errors.ConformanceError`
(``conformance.unreachable``), and so is one that serves neither era
(``conformance.unserved``, with the era decision and each era's reason): neither is a
report, and a silent target is unreachable with ``client.timeout`` as its cause.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from toolkeeper.client import Target, TargetKind
from toolkeeper.conformance.judge import Finding
from toolkeeper.conformance.replay import Estate, failed, judge_recorded, replay, skipped
from toolkeeper.conformance.report import CaseResult, EraVerdict, Report
from toolkeeper.conformance.sessions import ERA_CHOICES, ERA_VERSION, RunOptions, RunSessions
from toolkeeper.conformance.transcript import Transcript
from toolkeeper.errors import ConformanceError
from toolkeeper.protocol.versions import Era

__all__ = ["ERA_CHOICES", "RunOptions", "run_transcripts"]


async def run_transcripts(target: Target, transcripts: Sequence[Transcript],
                          options: RunOptions | None = None, *, label: str | None = None,
                          on_case: Callable[[CaseResult], None] | None = None) -> Report:
    """Run every transcript against ``target``; the report names the target ``label``."""
    options = options or RunOptions()
    if options.era not in ERA_CHOICES:
        raise ConformanceError(f"unknown era {options.era!r}", code="conformance.bad_era",
                               data={"choices": sorted(ERA_CHOICES)})
    ordered = sorted(transcripts, key=lambda t: t.name)
    stdio = target.kind is TargetKind.STDIO
    sessions = RunSessions(target, options, stdio)
    results: list[CaseResult] = []
    try:
        live = {t.era for t in ordered if t.mode == "live"}
        await sessions.open(live)
        estates = sessions.estates
        fresh = (lambda: target.open(options.timeouts)) if stdio else None
        for transcript in ordered:
            result = await _run_one(transcript, estates, sessions.refused, stdio, fresh)
            results.append(result)
            if on_case is not None:
                on_case(result)
    finally:
        await sessions.aclose()
    verdicts = tuple(sorted((EraVerdict(ERA_VERSION[era], "era.unserved", reason)
                             for era, reason in sessions.unserved.items()),
                            key=lambda verdict: verdict.era))
    return Report(label or target.origin, sessions.era, sessions.decision, tuple(results),
                  verdicts)


async def _run_one(transcript: Transcript, estates: Mapping[Era, Estate],
                   refused: Mapping[Era, tuple[str, bool]], stdio: bool,
                   fresh: Callable[[], Awaitable[Any]] | None) -> CaseResult:
    if transcript.mode == "recorded":
        return judge_recorded(transcript)
    transport = "stdio" if stdio else "http"
    if transport not in transcript.transports:
        return skipped(transcript, "not defined on this transport")
    transcript = transcript.on_transport(transport)  # its level, citation there
    estate = estates.get(transcript.era)
    if estate is None:
        reason, fatal = refused.get(transcript.era, ("era not selected", False))
        return failed(transcript, Finding("era.unselected", reason)) if fatal \
            else skipped(transcript, reason)
    return await replay(transcript, estate, fresh)
