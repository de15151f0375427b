"""The built-in corpus against toolkeeper's gateway on every target kind (issue 16, acceptance
1): in process (ASGI twin, no socket), over HTTP on 127.0.0.1 and over stdio, every case
passes, with the same case names and outcomes on all three."""

from __future__ import annotations

from conformance_kit import CAPABILITY_TOOL, STDIO_COMMAND, demo_app, outcomes, run, served_url

from toolkeeper.client import Target
from toolkeeper.conformance import RunOptions, builtin_corpus
from toolkeeper.conformance.replay import CAPABILITY_TOOL_REASON


def test_every_case_passes_in_process_over_http_and_over_stdio_with_identical_outcomes(
        ) -> None:
    in_process = run(Target.from_asgi(demo_app()))
    with served_url(demo_app()) as url:
        over_http = run(Target.from_url(url))
    over_stdio = run(Target.from_stdio(STDIO_COMMAND))
    names = sorted(t.name for t in builtin_corpus())
    for report in (in_process, over_http, over_stdio):
        assert [case.name for case in report.cases] == names
        assert report.failed == 0, [(c.name, c.finding) for c in report.cases
                                    if c.outcome == "fail"]
        assert {c.name: c.finding for c in report.cases if c.outcome == "skip"} == {
            "negative-missing-required-capability": CAPABILITY_TOOL_REASON}
        assert report.era == "2026-07-28"
        assert report.era_decision is not None
        assert report.era_decision["verdict"] == "modern.discovered"
    assert outcomes(in_process) == outcomes(over_http) == outcomes(over_stdio)


def test_cases_of_an_era_not_named_are_skipped_with_the_reason() -> None:
    report = run(Target.from_asgi(demo_app()), options=RunOptions(era="2025-11-25"))
    legacy = {t.name for t in builtin_corpus() if t.era == "2025-11-25"}
    for case in report.cases:
        live_modern = case.name not in legacy and case.finding is not None
        if live_modern:
            assert case.outcome == "skip"
            assert case.finding == "era not selected (--era 2025-11-25)"
    assert report.era == "2025-11-25" and report.failed == 0
    assert {c.name for c in report.cases if c.outcome == "pass"} >= legacy


def test_cases_that_need_a_tool_are_skipped_when_the_named_tool_is_not_listed() -> None:
    report = run(Target.from_asgi(demo_app()), options=RunOptions(tool="no.such.tool"))
    needing = {t.name for t in builtin_corpus() if "tool" in t.needs}
    assert needing
    for case in report.cases:
        if case.name in needing:
            assert case.outcome == "skip", case.name
            assert case.finding == "needs a tool: 'no.such.tool' is not in the target's tools/list"
    assert report.failed == 0


def test_a_tool_that_needs_a_capability_is_refused_with_32021_when_named() -> None:
    report = run(Target.from_asgi(demo_app(with_capability_tool=True)),
                 options=RunOptions(capability_tool=CAPABILITY_TOOL))
    case = next(c for c in report.cases if c.name == "negative-missing-required-capability")
    assert (case.outcome, case.observed_status, case.observed_code) == ("pass", 400, -32021)
    assert report.failed == 0 and report.skipped == 0


def test_a_named_capability_tool_that_needs_nothing_fails_the_case() -> None:
    report = run(Target.from_asgi(demo_app()), options=RunOptions(capability_tool="db.query"))
    case = next(c for c in report.cases if c.name == "negative-missing-required-capability")
    assert case.outcome == "fail"
    assert case.finding is not None and case.finding.startswith("expect.outcome: $.result:")
