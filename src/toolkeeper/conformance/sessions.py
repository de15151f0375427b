"""The connections of one run: an :class:`~toolkeeper.conformance.replay.Estate` per era, or
why an era has none.

Each era gets its own session from :func:`~toolkeeper.client.connect` (on stdio its own server
process), so the era decision is the client's, made exactly as SPEC 5.1 says. With ``auto``
the fallback policy decides first (its decision is the report's), then every other era the
corpus needs is tried strictly. A harness must not stop where the client stops, though: when
the client refuses an era the peer does answer, the era's cases still run or fail, so the
report names what is wrong instead of skipping the era. Modern: a raw ``server/discover``
that gets a result (valid or not) means the era answers, and its cases run over a transport
of their own (no session is needed). Legacy: an ``initialize`` answer that did not validate
fails the era's cases with its first problem (without it there is no session). An era whose
probe got no answer, or a refusal, is not served: its cases are skipped under ``auto`` (unless
no era is served at all) and fail when the era was named.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from toolkeeper.client import ClientSession, ClientTimeouts, Target, connect
from toolkeeper.client.raw import RawAnswer, RawRequest, as_raw
from toolkeeper.client.transport import REFUSED, SPAWN_FAILED
from toolkeeper.conformance.replay import Estate
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import ClientError, ClientTimeoutError, ConformanceError, EraSelectionError
from toolkeeper.protocol.client_requests import modern_request
from toolkeeper.protocol.versions import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION, Era

__all__ = ["ERA_CHOICES", "ERA_VERSION", "RunOptions", "RunSessions", "pick_tool"]

ERA_CHOICES: Final[Mapping[str, Era | None]] = MappingProxyType({
    LATEST_MODERN_VERSION: Era.MODERN, LATEST_HANDSHAKE_VERSION: Era.LEGACY, "auto": None})
_CONNECT: Final = {Era.MODERN: "modern", Era.LEGACY: "legacy"}
ERA_VERSION: Final = {Era.MODERN: LATEST_MODERN_VERSION, Era.LEGACY: LATEST_HANDSHAKE_VERSION}
"""The version an era is named by in reports (``--era``'s choices)."""
_UNREACHABLE: Final = frozenset({REFUSED, SPAWN_FAILED})
_PROBE_ID: Final = "toolkeeper-conformance-probe"
_ACCEPT: Final = (("Accept", "application/json, text/event-stream"),
                  ("Content-Type", "application/json"))
_CLOSED: Final = "$: client.connection"
_NOT_SERVED: Final = ("$.error: initialize refused", "$: no JSON-RPC response", "$: client.")
"""Legacy evidence problems that say the era is not served (a refusal, silence, a dropped
connection), as opposed to an answer that did not validate."""


@dataclass(frozen=True)
class RunOptions:
    """``era`` (a key of :data:`ERA_CHOICES`), the tool cases use (else a read-only one the
    target lists), the bearer token for HTTP, a tool that requires a client capability (for
    the -32021 case; no standard annotation says which does), the client's bounds and each
    case's bound."""

    era: str = "auto"
    tool: str | None = None
    token: str | None = None
    capability_tool: str | None = None
    timeouts: ClientTimeouts = field(default_factory=ClientTimeouts)
    case_timeout_s: float = 10.0


def pick_tool(tools: Sequence[dict[str, Any]], named: str | None, avoid: str | None = None
              ) -> tuple[str | None, str]:
    """The tool the cases call (the named one if listed, else the first read-only one by
    name other than ``avoid``, the tool named as needing a capability), or None and why."""
    names = {t.get("name") for t in tools}
    if named is not None:
        return (named, "") if named in names else (
            None, f"needs a tool: {named!r} is not in the target's tools/list")
    for tool in sorted(tools, key=lambda t: str(t.get("name"))):
        if tool.get("name") == avoid:
            continue
        annotations = tool.get("annotations")
        if isinstance(annotations, dict) and annotations.get("readOnlyHint") is True:
            return str(tool["name"]), ""
    return None, "needs a tool: the target lists no read-only tool (name one with --tool)"


def _raise_if_gone(decision: Mapping[str, Any]) -> None:
    """A target whose every probe ended in a closed connection (a stdio command that exits,
    a peer that drops the connection) cannot be reached: that is no report."""
    seen = decision.get("observation")
    evidence = decision.get("legacyEvidence")
    if seen is None and evidence is None:
        return
    problems = [] if evidence is None else list(evidence.get("problems", ()))
    closed = seen is None or seen.get("outcome") == "closed"
    dropped = evidence is None or (bool(problems)
                                   and all(p.startswith(_CLOSED) for p in problems))
    if closed and dropped:
        raise ConformanceError("the target cannot be reached (the connection closed)",
                               code="conformance.unreachable",
                               data={"cause": "client.connection"})


def _legacy_answered_invalidly(decision: Mapping[str, Any]) -> str | None:
    """The problem when ``initialize`` was answered but the answer did not validate."""
    evidence = decision.get("legacyEvidence") or {}
    problems = [p for p in evidence.get("problems", ()) if not p.startswith(_NOT_SERVED)]
    return problems[0] if problems else None


def _modern_answered(answer: RawAnswer) -> bool:
    """Whether a raw ``server/discover`` got a *result*: the modern era answering, whatever
    the client's selection made of it (an error that is not a modern one, no JSON-RPC answer
    or silence: the era is not served)."""
    return any(isinstance(m, dict) and "result" in m and "method" not in m
               for m in answer.messages)


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _capabilities(messages: Sequence[Any]) -> dict[str, Any]:
    """The capabilities a raw ``server/discover`` result advertised."""
    for message in messages:
        result = message.get("result") if isinstance(message, dict) else None
        if isinstance(result, dict):
            return _mapping(result.get("capabilities"))
    return {}


class RunSessions:
    """Opens the run's connections (:meth:`open`) and closes them (:meth:`aclose`)."""

    def __init__(self, target: Target, options: RunOptions, stdio: bool) -> None:
        self.target, self.options, self.stdio = target, options, stdio
        self.estates: dict[Era, Estate] = {}
        self.refused: dict[Era, tuple[str, bool]] = {}
        """Era -> (why it has no estate, whether its cases fail rather than skip)."""
        self.unserved: dict[Era, str] = {}
        """Era -> why the target does not serve it (one ``era.unserved`` verdict each)."""
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
            await self._open_era(named, primary=True, fatal=False)
            if named in self.refused and not self.refused[named][1]:
                self.unserved[named] = self.refused[named][0]
            for era in eras - {named}:
                self.refused[era] = (f"era not selected (--era {self.options.era})", False)
            return
        try:
            await self._keep(await self._connect("auto", legacy_allowed=True), primary=True)
        except EraSelectionError as exc:
            self.decision = exc.data.get("decision")
            _raise_if_gone(self.decision or {})
        except ClientTimeoutError as exc:  # silent to every probe: nothing to report on
            raise ConformanceError(f"the target cannot be reached ({exc.code})",
                                   code="conformance.unreachable",
                                   data={"cause": exc.code,
                                         "decision": exc.data.get("decision")}) from None
        for era in sorted(eras - set(self.estates), key=lambda e: e.value):
            await self._open_era(era, primary=False, fatal=False)
        self.unserved = {era: reason for era, (reason, fatal) in self.refused.items()
                         if not fatal}
        if not self.estates and self.unserved and len(self.unserved) == len(self.refused):
            # A target that serves no era at all has nothing to judge: no report (a green run
            # of skips, or dozens of failures), one refusal naming each era's reason.
            raise ConformanceError(
                "the target serves neither protocol era: " + "; ".join(
                    f"{ERA_VERSION[era]}: {reason}" for era, reason in sorted(
                        self.unserved.items(), key=lambda item: ERA_VERSION[item[0]])),
                code="conformance.unserved",
                data={"decision": self.decision,
                      "eras": {ERA_VERSION[era]: reason
                               for era, reason in self.unserved.items()}})

    async def _open_era(self, era: Era, *, primary: bool, fatal: bool) -> None:
        try:
            await self._keep(await self._connect(_CONNECT[era]), primary=primary)
            return
        except EraSelectionError as exc:
            decision: dict[str, Any] = exc.data.get("decision") or {}
            if primary:
                self.decision = decision
                _raise_if_gone(decision)
            reason = f"the target does not serve the {era.value} era " \
                     f"({decision.get('verdict', exc.code)})"
        except ClientError as exc:
            decision, reason = {}, f"the {era.value} era could not be opened ({exc.code})"
        if era is Era.MODERN and await self._sessionless(reason):
            return
        problem = _legacy_answered_invalidly(decision) if era is Era.LEGACY else None
        if problem is not None:
            self.refused[era] = (f"the {era.value} era's probe answer is invalid: {problem}",
                                 True)
        else:
            self.refused[era] = (reason, fatal)

    async def _sessionless(self, reason: str) -> bool:
        """When a raw ``server/discover`` gets a result although the client's selection
        refused the era, the modern cases run over a transport of their own (the modern era
        needs no session), so the report names what is wrong with each answer."""
        transport = await self.target.open(self.options.timeouts)
        self._closers.append(transport)
        request, headers = modern_request(_PROBE_ID, "server/discover", {})
        auth = (("Authorization", f"Bearer {self.options.token}"),) \
            if self.options.token and not self.stdio else ()
        raw = as_raw(transport)
        if raw is None:
            return False
        try:
            answer = await raw.send_raw(
                RawRequest(canonical_json(request), (*headers.items(), *_ACCEPT, *auth)),
                timeout=self.options.timeouts.probe_s,
                max_bytes=self.options.timeouts.probe_max_bytes)
        except ClientError:
            return False
        if not _modern_answered(answer):
            return False
        self.estates[Era.MODERN] = Estate(
            transport, self.stdio, Era.MODERN, LATEST_MODERN_VERSION, None, None,
            f"needs a tool: {reason}",
            self.options.token, self.options.case_timeout_s,
            self.options.timeouts.max_response_bytes, self.options.capability_tool,
            _capabilities(answer.messages))
        return True

    async def _keep(self, session: ClientSession, *, primary: bool) -> None:
        self._closers.append(session)
        if primary:
            self.decision = session.decision.to_json()
            self.era = session.version
        try:
            listed = (await session.list_tools()).tools
        except ClientError as exc:
            tool, reason = None, f"needs a tool: tools/list failed ({exc.code})"
        else:
            tool, reason = pick_tool(listed, self.options.tool, self.options.capability_tool)
            if self.options.tool is not None and tool is None:
                raise ConformanceError(
                    f"--tool {self.options.tool!r}: the target does not list it in the "
                    f"{session.era.value} era", code="conformance.tool_not_listed",
                    data={"tool": self.options.tool, "era": session.era.value,
                          "listed": sorted(str(t.get("name")) for t in listed)[:50]})
        self.estates[session.era] = Estate(
            session.transport, self.stdio, session.era, session.version, session.session_id,
            tool, reason, self.options.token, self.options.case_timeout_s,
            self.options.timeouts.max_response_bytes, self.options.capability_tool,
            _mapping(session.server.get("capabilities")))

    async def aclose(self) -> None:
        for closer in reversed(self._closers):
            with contextlib.suppress(Exception):
                await closer.aclose()
