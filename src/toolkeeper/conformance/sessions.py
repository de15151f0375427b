"""The connections of one run: an :class:`~toolkeeper.conformance.replay.Estate` per era, or
why an era has none.

Each era gets its own session from :func:`~toolkeeper.client.connect` (on stdio its own server
process), so the era decision is the client's, made exactly as SPEC 5.1 says. With ``auto``
the fallback policy decides first (its decision is the report's), then every other era the
corpus needs is tried strictly. A harness must not stop where the client stops, though: when
the peer *answered* a probe and the answer did not validate, the era's cases still run, over
a transport of their own (modern: no session is needed) or fail with the probe's problem
(legacy: without a valid ``initialize`` there is no session), so the report names what is
wrong instead of skipping the era. An era whose probe got no answer, or a refusal, is not
served: its cases are skipped under ``auto`` and fail when the era was named.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from toolkeeper.client import ClientSession, ClientTimeouts, Target, connect
from toolkeeper.client.transport import REFUSED
from toolkeeper.conformance.replay import Estate
from toolkeeper.errors import ClientError, ConformanceError, EraSelectionError
from toolkeeper.protocol.versions import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION, Era

__all__ = ["ERA_CHOICES", "RunOptions", "RunSessions", "pick_tool"]

ERA_CHOICES: Final[Mapping[str, Era | None]] = MappingProxyType({
    LATEST_MODERN_VERSION: Era.MODERN, LATEST_HANDSHAKE_VERSION: Era.LEGACY, "auto": None})
_CONNECT: Final = {Era.MODERN: "modern", Era.LEGACY: "legacy"}
_UNREACHABLE: Final = frozenset({REFUSED})
_NOT_SERVED: Final = ("$.error: initialize refused", "$: no JSON-RPC response", "$: client.")
"""Legacy evidence problems that say the era is not served (a refusal, silence, a dropped
connection), as opposed to an answer that did not validate."""


@dataclass(frozen=True)
class RunOptions:
    """``era`` (a key of :data:`ERA_CHOICES`), the tool cases use (else a read-only one the
    target lists), the bearer token for HTTP, the client's bounds and each case's bound."""

    era: str = "auto"
    tool: str | None = None
    token: str | None = None
    timeouts: ClientTimeouts = field(default_factory=ClientTimeouts)
    case_timeout_s: float = 10.0


def pick_tool(tools: Sequence[dict[str, Any]], named: str | None) -> tuple[str | None, str]:
    """The tool the cases call (the named one if listed, else the first read-only one by
    name), or None and why."""
    names = {t.get("name") for t in tools}
    if named is not None:
        return (named, "") if named in names else (
            None, f"needs a tool: {named!r} is not in the target's tools/list")
    for tool in sorted(tools, key=lambda t: str(t.get("name"))):
        annotations = tool.get("annotations")
        if isinstance(annotations, dict) and annotations.get("readOnlyHint") is True:
            return str(tool["name"]), ""
    return None, "needs a tool: the target lists no read-only tool (name one with --tool)"


def _answered_invalidly(era: Era, decision: Mapping[str, Any]) -> str | None:
    """The problem when the era's probe was answered but the answer did not validate."""
    if era is Era.MODERN:
        seen = decision.get("observation") or {}
        return seen.get("detail") if seen.get("outcome") == "unrecognised" else None
    evidence = decision.get("legacyEvidence") or {}
    problems = [p for p in evidence.get("problems", ()) if not p.startswith(_NOT_SERVED)]
    return problems[0] if problems else None


class RunSessions:
    """Opens the run's connections (:meth:`open`) and closes them (:meth:`aclose`)."""

    def __init__(self, target: Target, options: RunOptions, stdio: bool) -> None:
        self.target, self.options, self.stdio = target, options, stdio
        self.estates: dict[Era, Estate] = {}
        self.refused: dict[Era, tuple[str, bool]] = {}
        """Era -> (why it has no estate, whether its cases fail rather than skip)."""
        self.decision: dict[str, Any] | None = None
        self.era: str | None = None
        self._closers: list[Any] = []

    async def _connect(self, choice: str, legacy_allowed: bool = False) -> ClientSession:
        try:
            return await connect(self.target, era=choice,  # type: ignore[arg-type]  # ERA_MODES key
                                 token=self.options.token, legacy_allowed=legacy_allowed,
                                 timeouts=self.options.timeouts)
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
            await self._keep(await self._connect("auto", legacy_allowed=True), primary=True)
        except EraSelectionError as exc:
            self.decision = exc.data.get("decision")
        for era in sorted(eras - set(self.estates), key=lambda e: e.value):
            await self._open_era(era, primary=False, fatal=False)

    async def _open_era(self, era: Era, *, primary: bool, fatal: bool) -> None:
        try:
            await self._keep(await self._connect(_CONNECT[era]), primary=primary)
            return
        except EraSelectionError as exc:
            decision: dict[str, Any] = exc.data.get("decision") or {}
            if primary:
                self.decision = decision
            problem = _answered_invalidly(era, decision)
            reason = f"the target does not serve the {era.value} era " \
                     f"({decision.get('verdict', exc.code)})"
        except ClientError as exc:
            problem, reason = None, f"the {era.value} era could not be opened ({exc.code})"
        if problem is not None and era is Era.MODERN:
            await self._sessionless(problem)
        elif problem is not None:
            self.refused[era] = (f"the {era.value} era's probe answer is invalid: {problem}",
                                 True)
        else:
            self.refused[era] = (reason, fatal)

    async def _sessionless(self, problem: str) -> None:
        """Modern cases over a transport of their own: the probe was answered invalidly."""
        transport = await self.target.open(self.options.timeouts)
        self._closers.append(transport)
        self.estates[Era.MODERN] = Estate(
            transport, self.stdio, Era.MODERN, LATEST_MODERN_VERSION, None, None,
            f"needs a tool: the modern probe's answer is invalid ({problem})",
            self.options.token, self.options.case_timeout_s,
            self.options.timeouts.max_response_bytes)

    async def _keep(self, session: ClientSession, *, primary: bool) -> None:
        self._closers.append(session)
        if primary:
            self.decision = session.decision.to_json()
            self.era = session.version
        try:
            tool, reason = pick_tool((await session.list_tools()).tools, self.options.tool)
        except ClientError as exc:
            tool, reason = None, f"needs a tool: tools/list failed ({exc.code})"
        self.estates[session.era] = Estate(
            session.transport, self.stdio, session.era, session.version, session.session_id,
            tool, reason, self.options.token, self.options.case_timeout_s,
            self.options.timeouts.max_response_bytes)

    async def aclose(self) -> None:
        for closer in reversed(self._closers):
            with contextlib.suppress(Exception):
                await closer.aclose()
