"""Replaying one transcript over one session's transport, and judging what came back.

Placeholders (``{{tool}}``, ``{{toolBase64}}`` its base64-sentinel header form,
``{{capabilityTool}}``, ``{{protocolVersion}}``, ``{{sessionId}}``) are filled from the target's
own estate and session (:class:`Estate`): a string that is exactly a placeholder is replaced by
its value (a header whose value is unknown, such as the session id of a sessionless server, is
left out); inside longer strings and ``raw`` text they are replaced as text. A case whose
estate part is missing is skipped with the reason. Over stdio the
expectation's ``stdio`` form applies (no status, no headers: the case judges the messages),
and a barrier request settles the exchange (:mod:`toolkeeper.client.raw`).
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.client.raw import RawRequest, as_raw
from toolkeeper.conformance.judge import Finding, Observation, Verdict, graded, judge
from toolkeeper.conformance.report import CaseResult
from toolkeeper.conformance.transcript import ABSENT, Recorded, Transcript
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import ClientError
from toolkeeper.protocol.client_requests import legacy_request, modern_request
from toolkeeper.protocol.versions import Era

__all__ = ["CAPABILITY_TOOL_REASON", "SESSION_REASON", "Estate", "failed", "judge_recorded",
           "replay", "skipped"]

_PLACEHOLDER: Final = ("{{", "}}")
CAPABILITY_TOOL_REASON: Final = ("needs a tool that requires a client capability (name one "
                                 "with --capability-tool)")
SESSION_REASON: Final = "needs a legacy session id (the target issued none: it is sessionless)"
_barrier_ids = itertools.count(1)


@dataclass(frozen=True)
class Estate:
    """What one era's session offers the transcripts: its transport, whether it is stdio, its
    version and legacy session id, the tool cases use (None: those cases are skipped with
    ``tool_reason``), and the token sent over HTTP."""

    transport: Any
    stdio: bool
    era: Era
    version: str
    session_id: str | None
    tool: str | None
    tool_reason: str
    token: str | None
    timeout_s: float
    max_bytes: int
    capability_tool: str | None = None
    capabilities: Mapping[str, Any] | None = None
    """The capabilities the target advertised in this era (None: unknown, nothing skipped)."""

    def values(self) -> dict[str, str | None]:
        encoded = None if self.tool is None else "=?base64?" + base64.b64encode(
            self.tool.encode("utf-8")).decode("ascii") + "?="
        return {"tool": self.tool, "toolBase64": encoded, "protocolVersion": self.version,
                "sessionId": self.session_id, "capabilityTool": self.capability_tool}

    def missing(self, needs: frozenset[str]) -> str | None:
        """Why a case needing ``needs`` cannot run here (None: it can)."""
        if "tool" in needs and self.tool is None:
            return self.tool_reason
        if "capabilityTool" in needs and self.capability_tool is None:
            return CAPABILITY_TOOL_REASON
        if "session" in needs and self.session_id is None:
            return SESSION_REASON
        return None

    def unadvertised(self, requires: tuple[str, ...]) -> str | None:
        """Why a case that needs one of the capabilities ``requires`` cannot run here (None:
        one is advertised, or nothing is required)."""
        if not requires or self.capabilities is None \
                or any(_advertised(self.capabilities, path) for path in requires):
            return None
        return (f"needs a capability the target did not advertise "
                f"(one of {', '.join(requires)})")


def _advertised(capabilities: Mapping[str, Any], path: str) -> bool:
    value: Any = capabilities
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    return value is not None and value is not False


def _fill(value: Any, values: Mapping[str, str | None]) -> Any:
    if isinstance(value, str):
        if value.startswith(_PLACEHOLDER[0]) and value.endswith(_PLACEHOLDER[1]) \
                and value[2:-2] in values:
            return values[value[2:-2]]
        return _fill_text(value, values)
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


def _fill_text(text: str, values: Mapping[str, str | None]) -> str:
    for key, value in values.items():
        if value is not None:
            text = text.replace("{{" + key + "}}", value)
    return text


def _barrier(estate: Estate) -> dict[str, Any]:
    rid = f"toolkeeper-barrier-{next(_barrier_ids)}"
    if estate.era is Era.MODERN:
        return modern_request(rid, "server/discover", {}, version=estate.version)[0]
    return legacy_request(rid, "ping")[0]


def _raw_request(transcript: Transcript, estate: Estate) -> tuple[RawRequest, Any]:
    values = estate.values()
    shape = transcript.request
    body = _fill(shape.body, values) if shape.body is not ABSENT else ABSENT
    data = _fill_text(shape.raw, values).encode("utf-8") if shape.raw is not None \
        else b"" if body is ABSENT else canonical_json(body)
    headers = [(name, filled) for name, value in shape.headers
               if isinstance(filled := _fill(value, values), str)]
    if estate.token and not estate.stdio:
        headers.append(("Authorization", f"Bearer {estate.token}"))
    expect = transcript.expectation_for(estate.stdio)
    stop_after = len(expect.events) if expect.stream == "open" and expect.events else None
    # Over stdio, an answer to a line the server could not read (id null) comes before the
    # barrier's or not at all: the barrier settles it.
    awaits = expect.answer == "response" and not (estate.stdio and expect.null_id)
    return RawRequest(data, tuple(headers), shape.http_method,
                      awaits_answer=awaits, stop_after=stop_after,
                      barrier=_barrier(estate) if estate.stdio else None), body


def _citation(transcript: Transcript) -> dict[str, str] | None:
    return None if transcript.citation is None else transcript.citation.to_json()


def _called(body: Any) -> tuple[str | None, Any]:
    """The tool a ``tools/call`` body names and its arguments (None, None for other bodies)."""
    if not isinstance(body, dict) or body.get("method") != "tools/call":
        return None, None
    params = body.get("params")
    if not isinstance(params, dict):
        return None, None
    name = params.get("name")
    return (name if isinstance(name, str) else None), params.get("arguments")


def _shown(transcript: Transcript, finding: Finding | None) -> str | None:
    """The finding as reported, with the case's reason for its level when it has one (not
    with an era's refusal: that is the run's, not the exchange's)."""
    if finding is None:
        return None
    why = transcript.why_of(finding.code) \
        if transcript.mode == "live" and not finding.code.startswith("era.") else None
    return str(finding) if why is None else f"{finding} ({why})"


def _result(transcript: Transcript, verdict: Verdict, body: Any = ABSENT) -> CaseResult:
    expect = transcript.expect
    outcome, finding = graded(transcript, verdict)
    tool, arguments = _called(body) if transcript.mode == "live" else (None, None)
    return CaseResult(transcript.name, transcript.case_class, transcript.requirements,
                      outcome, expect.boundary, expect.code,
                      verdict.observed_status, verdict.observed_code,
                      _shown(transcript, finding), transcript.mode,
                      transcript.level, _citation(transcript), tool, arguments)


def skipped(transcript: Transcript, reason: str) -> CaseResult:
    expect = transcript.expect
    return CaseResult(transcript.name, transcript.case_class, transcript.requirements, "skip",
                      expect.boundary, expect.code, finding=reason, mode=transcript.mode,
                      level=transcript.level, citation=_citation(transcript))


def failed(transcript: Transcript, finding: Finding) -> CaseResult:
    """A case that could not be judged normally (the exchange itself failed), at its level."""
    expect = transcript.expect
    outcome, _ = graded(transcript, Verdict(False, None, None, (finding,)))
    return CaseResult(transcript.name, transcript.case_class, transcript.requirements, outcome,
                      expect.boundary, expect.code, finding=_shown(transcript, finding),
                      mode=transcript.mode, level=transcript.level,
                      citation=_citation(transcript))


def _recorded_observation(recorded: Recorded) -> Observation:
    if recorded.events is not None:
        return Observation(recorded.status, recorded.headers, recorded.events, b"", True,
                           recorded.ended, reads=recorded.reads)
    if recorded.raw is not None:
        return Observation(recorded.status, recorded.headers, (), recorded.raw.encode("utf-8"),
                           undecodable=bool(recorded.raw.strip()))
    if recorded.body is ABSENT:
        return Observation(recorded.status, recorded.headers, ())
    return Observation(recorded.status, recorded.headers, (recorded.body,),
                       canonical_json(recorded.body))


def judge_recorded(transcript: Transcript) -> CaseResult:
    """A recorded case: the answer it holds, judged as received (the same on every target)."""
    assert transcript.response is not None
    body = transcript.request.body
    return _result(transcript, judge(transcript, transcript.expect,
                                     _recorded_observation(transcript.response), body))


async def replay(transcript: Transcript, estate: Estate,
                 fresh: Callable[[], Awaitable[Any]] | None = None) -> CaseResult:
    """Send a live case over ``estate``'s transport and judge the answer; a case that must
    be a connection's first message goes over a transport from ``fresh`` (stdio), closed
    after it."""
    reason = estate.missing(transcript.needs) or estate.unadvertised(transcript.requires)
    if reason is not None:
        return skipped(transcript, reason)
    if transcript.fresh and fresh is not None:
        try:
            transport = await fresh()
        except ClientError as exc:
            return failed(transcript, Finding("target." + exc.code.split(".")[-1],
                                              f"$: {exc.message}"))
        try:
            return await replay(transcript, dataclasses.replace(estate, transport=transport))
        finally:
            await transport.aclose()
    request, body = _raw_request(transcript, estate)
    raw = as_raw(estate.transport)
    if raw is None:
        return failed(transcript, Finding("target.no_raw", "$: the transport cannot replay "
                                          "raw requests"))
    try:
        answer = await raw.send_raw(request, timeout=estate.timeout_s,
                                    max_bytes=estate.max_bytes)
    except ClientError as exc:
        return failed(transcript, Finding("target." + exc.code.split(".")[-1],
                                          f"$: {exc.message}"))
    expect = transcript.expectation_for(estate.stdio)
    return _result(transcript, judge(transcript, expect, answer, body), body)
