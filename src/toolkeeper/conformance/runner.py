"""The runner: every transcript against one target, through the one MCP client.

The target is a :class:`~toolkeeper.client.Target` (an ASGI app in process, a Streamable HTTP
URL, a stdio command). Each era the corpus needs gets its own session from
:func:`~toolkeeper.client.connect` (so on stdio, its own server process): the era named by
``era`` (``2026-07-28`` or ``2025-11-25``; the other era's cases are skipped), or with
``auto`` the era SPEC 5.1's fallback policy selects (reported with its recorded decision)
and then every other era the target also proves it serves. An era that cannot be selected
fails its cases when it was named, and skips them under ``auto``. Cases run in name order;
recorded cases are judged without the target. A target that cannot be reached at all is a
:class:`~toolkeeper.errors.ConformanceError` (``conformance.unreachable``), not a report.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from toolkeeper.client import ClientSession, ClientTimeouts, Target, TargetKind, connect
from toolkeeper.client.transport import REFUSED
from toolkeeper.conformance.judge import Finding
from toolkeeper.conformance.replay import Estate, failed, judge_recorded, replay, skipped
from toolkeeper.conformance.report import CaseResult, Report
from toolkeeper.conformance.transcript import Transcript
from toolkeeper.errors import ClientError, ConformanceError, EraSelectionError
from toolkeeper.protocol.versions import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION, Era

__all__ = ["ERA_CHOICES", "RunOptions", "run_transcripts"]

ERA_CHOICES: Final[Mapping[str, Era | None]] = MappingProxyType({
    LATEST_MODERN_VERSION: Era.MODERN, LATEST_HANDSHAKE_VERSION: Era.LEGACY, "auto": None})
_CONNECT: Final = {Era.MODERN: "modern", Era.LEGACY: "legacy"}
_UNREACHABLE: Final = frozenset({REFUSED, "client.timeout", "client.connection"})


@dataclass(frozen=True)
class RunOptions:
    """``era`` (a key of :data:`ERA_CHOICES`), the tool cases use (else a read-only one the
    target lists), the bearer token for HTTP, the client's bounds and each case's bound."""

    era: str = "auto"
    tool: str | None = None
    token: str | None = None
    timeouts: ClientTimeouts = field(default_factory=ClientTimeouts)
    case_timeout_s: float = 10.0


def _pick_tool(tools: Sequence[dict[str, Any]], named: str | None) -> tuple[str | None, str]:
    """The tool the cases call, or None and why."""
    names = sorted(t["name"] for t in tools)
    if named is not None:
        return (named, "") if named in names else (
            None, f"needs a tool: {named!r} is not in the target's tools/list")
    for tool in sorted(tools, key=lambda t: str(t["name"])):
        annotations = tool.get("annotations")
        if isinstance(annotations, dict) and annotations.get("readOnlyHint") is True:
            return tool["name"], ""
    return None, "needs a tool: the target lists no read-only tool (name one with --tool)"


async def _estate(session: ClientSession, stdio: bool, options: RunOptions) -> Estate:
    try:
        tool, reason = _pick_tool((await session.list_tools()).tools, options.tool)
    except ClientError as exc:
        tool, reason = None, f"needs a tool: tools/list failed ({exc.code})"
    return Estate(session.transport, stdio, session.era, session.version, session.session_id,
                  tool, reason, options.token, options.case_timeout_s,
                  options.timeouts.max_response_bytes)


class _Sessions:
    """The sessions of one run, one per era, and why an era has none."""

    def __init__(self, target: Target, options: RunOptions) -> None:
        self.target, self.options = target, options
        self.sessions: dict[Era, ClientSession] = {}
        self.refused: dict[Era, tuple[str, bool]] = {}
        self.decision: dict[str, Any] | None = None
        self.era: str | None = None

    async def _connect(self, choice: str, legacy_allowed: bool = False) -> ClientSession:
        try:
            return await connect(self.target, era=choice,  # type: ignore[arg-type]  # a key of ERA_MODES
                                 token=self.options.token, legacy_allowed=legacy_allowed,
                                 timeouts=self.options.timeouts)
        except EraSelectionError:
            raise
        except ClientError as exc:
            if exc.code in _UNREACHABLE:
                raise ConformanceError(f"the target cannot be reached ({exc.code})",
                                       code="conformance.unreachable",
                                       data={"cause": exc.code}) from None
            raise

    async def open(self, eras: set[Era]) -> None:
        named = ERA_CHOICES[self.options.era]
        if named is not None:
            await self._open_era(named, primary=True, fatal=True)
            for era in eras - {named}:
                self.refused[era] = (f"era not selected (--era {self.options.era})", False)
            return
        try:
            session = await self._connect("auto", legacy_allowed=True)
        except EraSelectionError as exc:
            self.decision = exc.data.get("decision")
            for era in eras:
                self.refused[era] = (f"no era selected: {exc.message}", True)
            return
        self._keep(session, primary=True)
        for era in eras - {session.era}:
            await self._open_era(era, primary=False, fatal=False)

    async def _open_era(self, era: Era, *, primary: bool, fatal: bool) -> None:
        try:
            session = await self._connect(_CONNECT[era])
        except (EraSelectionError, ClientError) as exc:
            if primary and isinstance(exc, EraSelectionError):
                self.decision = exc.data.get("decision")
            self.refused[era] = (f"the target does not serve the {era.value} era "
                                 f"({exc.code})", fatal)
            return
        self._keep(session, primary=primary)

    def _keep(self, session: ClientSession, *, primary: bool) -> None:
        self.sessions[session.era] = session
        if primary:
            self.decision = session.decision.to_json()
            self.era = session.version

    async def aclose(self) -> None:
        for session in self.sessions.values():
            with contextlib.suppress(Exception):
                await session.aclose()


async def run_transcripts(target: Target, transcripts: Sequence[Transcript],
                          options: RunOptions | None = None, *, label: str | None = None,
                          on_case: Callable[[CaseResult], None] | None = None) -> Report:
    """Run every transcript against ``target``; the report names the target ``label``."""
    options = options or RunOptions()
    if options.era not in ERA_CHOICES:
        raise ConformanceError(f"unknown era {options.era!r}", code="conformance.bad_era",
                               data={"choices": sorted(ERA_CHOICES)})
    ordered = sorted(transcripts, key=lambda t: t.name)
    sessions = _Sessions(target, options)
    stdio = target.kind is TargetKind.STDIO
    results: list[CaseResult] = []
    try:
        await sessions.open({t.era for t in ordered if t.mode == "live"})
        estates = {era: await _estate(s, stdio, options)
                   for era, s in sessions.sessions.items()}
        fresh = (lambda: target.open(options.timeouts)) if stdio else None
        for transcript in ordered:
            result = await _run_one(transcript, estates, sessions.refused, stdio, fresh)
            results.append(result)
            if on_case is not None:
                on_case(result)
    finally:
        await sessions.aclose()
    return Report(label or target.origin, sessions.era, sessions.decision, tuple(results))


async def _run_one(transcript: Transcript, estates: Mapping[Era, Estate],
                   refused: Mapping[Era, tuple[str, bool]], stdio: bool,
                   fresh: Callable[[], Awaitable[Any]] | None) -> CaseResult:
    if transcript.mode == "recorded":
        return judge_recorded(transcript)
    if ("stdio" if stdio else "http") not in transcript.transports:
        return skipped(transcript, "not defined on this transport")
    estate = estates.get(transcript.era)
    if estate is None:
        reason, fatal = refused.get(transcript.era, ("era not selected", False))
        return failed(transcript, Finding("era.unselected", reason)) if fatal \
            else skipped(transcript, reason)
    return await replay(transcript, estate, fresh)
