"""The built-in corpus through a real nginx (issue 16: "any of those through a proxy. Same case
names and results on every target"): the demo gateway over HTTP on 127.0.0.1, run directly and
through nginx (its URL is just another Streamable HTTP URL). The correct configuration changes
no case's outcome; the faulty one fails exactly the live cases the origin answers with a 400 or
404 JSON-RPC error, each with a finding that names the 500 it got instead, at the level its
case judges that finding (a MUST case fails, a SHOULD case warns, a reference case notes)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from conformance_kit import demo_app, outcomes, run, served_url

from toolkeeper.client import Target
from toolkeeper.conformance import NginxProxy, Report, Transcript, builtin_corpus
from toolkeeper.conformance.nginx import load_template

_PROTOCOL_ERROR_STATUSES = (400, 404)
_OUTCOME = {"MUST": "fail", "SHOULD": "warn", "reference": "note"}
"""A finding's outcome by the level its case judges it at."""


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with served_url(demo_app()) as url:
        yield url


@pytest.fixture(scope="module")
def direct(origin: str) -> Report:
    return run(Target.from_url(origin))


def _through(config: str, origin: str) -> Report:
    parts = urlsplit(origin)
    with NginxProxy(load_template(config), parts.netloc) as proxy:
        return run(Target.from_url(proxy.url + parts.path))


def test_through_the_correct_nginx_every_case_has_its_direct_outcome(
        nginx: str, origin: str, direct: Report) -> None:
    proxied = _through("correct", origin)
    assert [c.name for c in proxied.cases] == [c.name for c in direct.cases]
    assert outcomes(proxied) == outcomes(direct)
    assert (proxied.failed, proxied.passed, proxied.skipped) == (
        direct.failed, direct.passed, direct.skipped)
    assert direct.failed == 0
    assert [(c.name, c.observed_status, c.observed_code) for c in proxied.cases] == [
        (c.name, c.observed_status, c.observed_code) for c in direct.cases]


def _with_why(transcript: Transcript, finding: str) -> str:
    """``finding`` as reported: with the case's reason for its level, when it has one."""
    why = transcript.why_of(finding.split(":", 1)[0])
    return finding if why is None else f"{finding} ({why})"


def test_through_the_faulty_nginx_exactly_the_protocol_error_cases_fail_naming_the_500(
        nginx: str, origin: str, direct: Report) -> None:
    live = {t.name for t in builtin_corpus() if t.mode == "live"}
    status_only = {t.name for t in builtin_corpus() if t.expect.answer == "status"}
    collapsible = {c.name for c in direct.cases if c.name in live
                   and c.observed_status in _PROTOCOL_ERROR_STATUSES
                   and (isinstance(c.observed_code, int) or c.name in status_only)}
    assert {"negative-header-body-mismatch", "negative-unknown-method",
            "negative-malformed-json"} <= collapsible
    proxied = _through("faulty", origin)
    assert [c.name for c in proxied.cases] == [c.name for c in direct.cases]
    by_name = {t.name: t for t in builtin_corpus()}
    found = {c.name: (c.outcome, c.observed_status, c.observed_code, c.finding)
             for c in proxied.cases if c.outcome in ("fail", "warn", "note")}
    undecodable = "response.undecodable: $: the HTTP 500 answer is not JSON"

    def expected(name: str) -> tuple[str, int, None, str]:
        transcript = by_name[name].on_transport("http")
        if transcript.expect.answer == "status":  # a transport refusal: only its status counts
            status = transcript.expect.status
            want = " or ".join(map(str, status)) if isinstance(status, list) else status
            return (_OUTCOME[transcript.level_of("expect.status")], 500, None, _with_why(
                transcript, f"expect.status: $: HTTP 500 where the case expects {want}"))
        return (_OUTCOME[transcript.level_of("response.undecodable")], 500, None,
                _with_why(transcript, undecodable))

    assert found == {name: expected(name) for name in collapsible}
    assert {n: o for n, o in outcomes(proxied).items() if n not in collapsible} == {
        n: o for n, o in outcomes(direct).items() if n not in collapsible}
