"""The judgment of one observed answer against its transcript (sans-IO).

The wire rules are :mod:`toolkeeper.protocol`'s (one set of wire judgments: the validator per
era, the status table, the notification and stream rules); this module only applies them to
what was observed and compares the rest with the transcript's expectation. Each check is a
row of :data:`_CHECKS` and yields :class:`Finding` values with a stable code; a case passes
when nothing is found (live, and recorded golden) or when the code a recorded negative case
names is found (the faulty answer it holds is caught by that check).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from toolkeeper.client.raw import RawAnswer
from toolkeeper.conformance.normalize import matches, normalized
from toolkeeper.conformance.transcript import ABSENT, LEVELS, Expectation, Transcript
from toolkeeper.protocol.responses import (
    check_error_status,
    check_notification_answer,
    check_stream,
    validate_response,
)

__all__ = ["Finding", "Observation", "Verdict", "graded", "judge", "problem_code"]


@dataclass(frozen=True)
class Finding:
    """One thing wrong: a stable ``code`` and the JSON-path problem."""

    code: str
    problem: str

    def __str__(self) -> str:
        return f"{self.code}: {self.problem}"


Observation: TypeAlias = RawAnswer
"""What came back (from the wire, or as recorded): the raw exchange's own answer record, so a
live answer is judged as it arrived and a recorded one is built in the same shape."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    observed_status: int | None
    observed_code: int | str | None
    findings: tuple[Finding, ...]

    @property
    def finding(self) -> str | None:
        return str(self.findings[0]) if self.findings else None


_PROBLEM_CODES: Final = (
    ("$.result.resultType", "response.result_type"),
    ("$.result.ttlMs", "response.cache_hints"),
    ("$.result.cacheScope", "response.cache_hints"),
    ("$.result", "response.payload"),
    ("$.error", "response.error_shape"),
    ("$.jsonrpc", "response.jsonrpc"),
    ("$.id", "response.id"),
    ("$", "response.result_error"),
)
"""A validator problem's JSON path prefix -> its finding code (first match wins)."""


def problem_code(problem: str) -> str:
    path = problem.split(":", 1)[0]
    for prefix, code in _PROBLEM_CODES:
        if path == prefix or path.startswith((prefix + ".", prefix + "[")):
            return code
    return "response.invalid"


@dataclass(frozen=True)
class _Case:
    transcript: Transcript
    expect: Expectation
    seen: Observation
    body: Any

    @property
    def request_id(self) -> Any:
        return None if self.expect.null_id or not isinstance(self.body, dict) \
            else self.body.get("id")

    @property
    def method(self) -> str:
        method = self.body.get("method") if isinstance(self.body, dict) else None
        return method if isinstance(method, str) else ""

    @property
    def extensions(self) -> frozenset[str]:
        params = self.body.get("params") if isinstance(self.body, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        caps = meta.get("io.modelcontextprotocol/clientCapabilities") \
            if isinstance(meta, dict) else None
        declared = caps.get("extensions") if isinstance(caps, dict) else None
        return frozenset(declared) if isinstance(declared, dict) else frozenset()

    @property
    def response(self) -> Any:
        answers = [m for m in self.seen.messages if isinstance(m, dict) and "method" not in m]
        return answers[-1] if answers else None


def _wire(case: _Case) -> Iterator[Finding]:
    """The era's rules on whatever answered (protocol/)."""
    seen = case.seen
    if case.expect.answer == "status":
        return  # a transport refusal: its body may be anything (or a JSON-RPC error, no id)
    if seen.undecodable:
        # The status names what answered instead (a proxy's HTML 500 page, say).
        answer = "the answer" if seen.status is None else f"the HTTP {seen.status} answer"
        yield Finding("response.undecodable", f"$: {answer} is not JSON")
    if case.expect.answer == "none":
        for problem in check_notification_answer(seen.status, seen.body, seen.messages):
            yield Finding("notification.answered", problem)
        return
    if case.expect.stream == "open":
        for problem in check_stream(seen.messages, case.request_id):
            yield Finding("stream.foreign_id", problem)
        return
    response = case.response
    if response is None:
        yield Finding("response.missing", "$: no JSON-RPC response to the request")
        return
    if len(seen.messages) > 1:  # one message: the response's own id check says it all
        for problem in check_stream(seen.messages, case.request_id):
            yield Finding("stream.foreign_id" if problem.endswith(
                ".id: answers another request than the one sent") else "stream.order", problem)
    for problem in validate_response(response, case.request_id, case.transcript.era,
                                     case.method, case.extensions):
        yield Finding(problem_code(problem), problem)
    if seen.status is not None:
        for problem in check_error_status(response, seen.status, case.transcript.era,
                                          streamed=seen.streamed):
            yield Finding("response.status", problem)


def _stream(case: _Case) -> Iterator[Finding]:
    seen, want = case.seen, case.expect.stream
    if seen.status is None or want == "any":
        return
    if case.expect.outcome == "accepted" and _rejected(case.response):
        return  # what was observed is the rejection (:func:`_outcome` names it), not a format
    if want in ("sse", "open") and not seen.streamed:
        yield Finding("stream.not_sse", "$: the answer did not come as server-sent events")
    elif want == "json" and seen.streamed:
        yield Finding("stream.not_json", "$: the answer came as events, not one JSON body")
    elif want == "sse" and not seen.ended:
        yield Finding("stream.not_ended", "$: the stream stayed open after its response")
    if seen.streamed and len(seen.messages) > 1 and seen.reads \
            and len(set(seen.reads)) == 1 and want == "sse":
        yield Finding("stream.buffered", "$: every event arrived at once, with the response "
                      "(the stream was buffered before it was forwarded)")


def _rejected(response: Any) -> bool:
    return isinstance(response, dict) and "result" not in response \
        and isinstance(response.get("error"), dict)


def _outcome(case: _Case) -> Iterator[Finding]:
    expect, response = case.expect, case.response
    if expect.answer != "response" or not isinstance(response, dict):
        return
    error = response.get("error")
    if expect.outcome == "answered":
        return  # a result or an error: the wire rules (:func:`_wire`) judged its shape
    if expect.outcome == "accepted":
        if "result" not in response:
            code = error.get("code") if isinstance(error, dict) else None
            status = "" if case.seen.status is None else f" (HTTP {case.seen.status})"
            yield Finding("expect.outcome", f"$.error: rejected with {code}{status} where the "
                          "case expects acceptance")
        return
    if expect.boundary == "tool" and expect.code is None:
        result = response.get("result")
        if not (isinstance(result, dict) and result.get("isError") is True):
            yield Finding("expect.outcome", "$.result.isError: the tool boundary rejects with "
                          "an isError result")
        return
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(expect.code, int) and "result" in response and error is None:
        result = response["result"]
        flagged = isinstance(result, dict) and result.get("isError") is True
        yield Finding("expect.outcome", f"$.result: a result{' (isError)' if flagged else ''} "
                      f"where the case expects error {expect.code}")
    elif isinstance(expect.code, int) and code != expect.code:
        yield Finding("expect.code", f"$.error.code: {code} where the case expects "
                      f"{expect.code}")


def _status(case: _Case) -> Iterator[Finding]:
    want, got = case.expect.status, case.seen.status
    if want is ABSENT or got is None:
        return
    allowed = list(want) if isinstance(want, (list, tuple)) else [want]
    if got not in allowed:
        shown = " or ".join(str(s) for s in allowed)
        yield Finding("expect.status", f"$: HTTP {got} where the case expects {shown}")


def _headers(case: _Case) -> Iterator[Finding]:
    if case.seen.status is None:
        return
    for name, want in sorted(case.expect.headers.items()):
        got = case.seen.headers.get(name.lower())
        ok = got is not None and (got.startswith(want[:-1]) if want.endswith("*")
                                  else got == want)
        if not ok:
            yield Finding("expect.headers", f"$.headers.{name.lower()}: {got!r} where the case "
                          f"expects {want!r}")


def _body(case: _Case) -> Iterator[Finding]:
    rules = case.transcript.normalize
    if case.expect.body is not ABSENT and case.response is not None:
        problem = matches(case.expect.body, normalized(case.response, rules), "$")
        if problem is not None:
            yield Finding("expect.body", problem)
    events = case.expect.events
    if events is not None:
        seen = case.seen.messages[:len(events)] if case.expect.stream == "open" \
            else case.seen.messages
        problem = matches(list(events), [normalized(m, rules) for m in seen], "$.events")
        if problem is not None:
            yield Finding("expect.events", problem)


_CHECKS: Final[tuple[Callable[[_Case], Iterator[Finding]], ...]] = (
    _wire, _stream, _outcome, _status, _headers, _body)


def _observed_code(findings: tuple[Finding, ...], case: _Case) -> int | str | None:
    if case.transcript.mode == "recorded" and isinstance(case.expect.code, str):
        codes = [f.code for f in findings]
        return case.expect.code if case.expect.code in codes else (codes[0] if codes else None)
    response = case.response
    error = response.get("error") if isinstance(response, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if type(code) is int else None


_OUTCOME_OF_LEVEL: Final = {"MUST": "fail", "SHOULD": "warn", "reference": "note"}


def graded(transcript: Transcript, verdict: Verdict) -> tuple[str, Finding | None]:
    """The case's outcome and the finding that decides it. A recorded case (a self-check of
    the judgment) passes or fails; a live one passes without findings, and otherwise takes
    the strongest level among its findings (:meth:`Transcript.level_of`): a broken MUST is a
    ``fail``, a SHOULD a ``warn``, a reference behaviour a ``note``."""
    first = verdict.findings[0] if verdict.findings else None
    if transcript.mode == "recorded":
        return ("pass" if verdict.passed else "fail"), first
    if first is None:
        return "pass", None
    worst = min(verdict.findings, key=lambda f: LEVELS.index(transcript.level_of(f.code)))
    return _OUTCOME_OF_LEVEL[transcript.level_of(worst.code)], worst


def judge(transcript: Transcript, expect: Expectation, seen: Observation, body: Any
          ) -> Verdict:
    """The verdict on ``seen`` as the answer to ``body`` (the request as sent, placeholders
    filled; ABSENT for a malformed one) under ``expect``."""
    case = _Case(transcript, expect, seen, body)
    findings = tuple(f for check in _CHECKS for f in check(case))
    observed = _observed_code(findings, case)
    if transcript.mode == "recorded" and isinstance(expect.code, str):
        passed = observed == expect.code
        kept = findings if not passed else tuple(f for f in findings if f.code == expect.code)
        return Verdict(passed, seen.status, observed,
                       () if passed else (kept or (Finding(
                           "expect.finding", f"$: the judgment found nothing where the case "
                           f"expects {expect.code}"),)))
    return Verdict(not findings, seen.status, observed, findings)
