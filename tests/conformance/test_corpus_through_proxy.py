"""The built-in corpus through a real nginx (issue 16: "any of those through a proxy. Same case
names and results on every target"): the demo gateway over HTTP on 127.0.0.1, run directly and
through nginx (its URL is just another Streamable HTTP URL). The correct configuration changes
no case's outcome; the faulty one fails exactly the live cases the origin answers with a 400 or
404 JSON-RPC error, each with a finding that names the 500 it got instead."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from conformance_kit import demo_app, outcomes, run, served_url

from toolkeeper.client import Target
from toolkeeper.conformance import NginxProxy, Report, builtin_corpus
from toolkeeper.conformance.nginx import load_template

_PROTOCOL_ERROR_STATUSES = (400, 404)


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


def test_through_the_faulty_nginx_exactly_the_protocol_error_cases_fail_naming_the_500(
        nginx: str, origin: str, direct: Report) -> None:
    live = {t.name for t in builtin_corpus() if t.mode == "live"}
    collapsible = {c.name for c in direct.cases if c.name in live
                   and c.observed_status in _PROTOCOL_ERROR_STATUSES
                   and isinstance(c.observed_code, int)}
    assert {"negative-header-body-mismatch", "negative-unknown-method",
            "negative-malformed-json"} <= collapsible
    proxied = _through("faulty", origin)
    assert [c.name for c in proxied.cases] == [c.name for c in direct.cases]
    failed = {c.name: (c.observed_status, c.observed_code, c.finding)
              for c in proxied.cases if c.outcome == "fail"}
    assert failed == {name: (500, None, "response.undecodable: $: the HTTP 500 answer is not "
                             "JSON") for name in collapsible}
    assert proxied.failed == len(collapsible)
    assert {n: o for n, o in outcomes(proxied).items() if n not in collapsible} == {
        n: o for n, o in outcomes(direct).items() if n not in collapsible}
