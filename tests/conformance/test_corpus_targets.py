"""The built-in corpus against toolkeeper's gateway on every target kind (issue 16, acceptance
1): in process (ASGI twin, no socket), over HTTP on 127.0.0.1 and over stdio, every case
passes, with the same case names and outcomes on all three."""

from __future__ import annotations

import pytest
from conformance_kit import (
    CAPABILITY_TOOL,
    STDIO_COMMAND,
    demo_app,
    expected_skips,
    outcomes,
    run,
    served_url,
)

from toolkeeper.client import Target
from toolkeeper.conformance import RunOptions, builtin_corpus
from toolkeeper.conformance.replay import Estate
from toolkeeper.errors import ConformanceError
from toolkeeper.protocol.versions import Era


def test_every_live_case_passes_in_process_over_http_and_over_stdio_in_both_eras() -> None:
    in_process = run(Target.from_asgi(demo_app()))
    with served_url(demo_app()) as url:
        over_http = run(Target.from_url(url))
    over_stdio = run(Target.from_stdio(STDIO_COMMAND))
    names = sorted(t.name for t in builtin_corpus())
    for report, stdio in ((in_process, False), (over_http, False), (over_stdio, True)):
        assert [case.name for case in report.cases] == names
        assert (report.failed, report.warned, report.noted) == (0, 0, 0), [
            (c.name, c.finding) for c in report.cases if c.outcome in ("fail", "warn", "note")]
        assert {c.name: c.finding for c in report.cases if c.outcome == "skip"} == \
            expected_skips(stdio)
        assert report.eras == ()
        assert report.era == "2026-07-28"
        assert report.era_decision is not None
        assert report.era_decision["verdict"] == "modern.discovered"
    assert outcomes(in_process) == outcomes(over_http)
    on_both = {t.name for t in builtin_corpus() if t.transports == {"http", "stdio"}}
    assert {n: o for n, o in outcomes(over_stdio).items() if n in on_both} == \
        {n: o for n, o in outcomes(over_http).items() if n in on_both}


def test_the_corpus_covers_both_eras_live_with_a_citation_and_a_level_on_every_case() -> None:
    live = [t for t in builtin_corpus() if t.mode == "live"]
    assert sum(t.version == "2026-07-28" for t in live) >= 40
    assert sum(t.version == "2025-11-25" for t in live) >= 25
    for transcript in live:
        assert transcript.citation is not None, transcript.name
        assert transcript.citation.file.startswith(transcript.version + "/"), transcript.name
        assert transcript.level in ("MUST", "SHOULD", "reference")


def test_cases_of_an_era_not_named_are_skipped_with_the_reason() -> None:
    report = run(Target.from_asgi(demo_app()), options=RunOptions(era="2025-11-25"))
    by_name = {t.name: t for t in builtin_corpus()}
    skips = expected_skips(stdio=False)
    for case in report.cases:
        transcript = by_name[case.name]
        if transcript.mode == "live" and transcript.version == "2026-07-28":
            assert (case.outcome, case.finding) == ("skip", "era not selected (--era 2025-11-25)")
        elif transcript.mode == "live":
            assert case.outcome == ("skip" if case.name in skips else "pass"), case.name
    assert report.era == "2025-11-25" and report.failed == 0 and report.eras == ()


def test_a_named_tool_the_target_does_not_list_is_a_usage_error() -> None:
    with pytest.raises(ConformanceError) as caught:
        run(Target.from_asgi(demo_app()), options=RunOptions(tool="no.such.tool"))
    assert caught.value.code == "conformance.tool_not_listed"
    assert caught.value.data["tool"] == "no.such.tool"


def test_live_and_recorded_cases_are_counted_apart_and_each_names_its_requirement() -> None:
    report = run(Target.from_asgi(demo_app()))
    corpus = builtin_corpus()
    live = sum(1 for t in corpus if t.mode == "live")
    recorded = len(corpus) - live
    skipped = len(expected_skips(stdio=False))
    assert report.live == {"passed": live - skipped, "failed": 0, "warned": 0, "noted": 0,
                           "skipped": skipped}
    assert report.selfcheck == {"passed": recorded, "failed": 0}
    assert report.passed == live - skipped
    for case in report.cases:
        assert case.mode in ("live", "recorded")
        assert case.level in ("MUST", "SHOULD", "reference"), case.name
        assert case.citation is not None and case.citation["file"].endswith(".mdx")
    called = next(c for c in report.cases if c.name == "golden-modern-tools-call")
    assert (called.tool, called.arguments) == ("db.query", {})
    assert next(c for c in report.cases if c.name == "negative-legacy-unknown-tool").tool \
        == "toolkeeper-conformance-no-such-tool"


def test_a_case_needing_a_capability_the_target_did_not_advertise_is_skipped() -> None:
    listen = next(t for t in builtin_corpus()
                  if t.name == "golden-modern-subscriptions-listen-sse")
    estate_reason = "needs a capability the target did not advertise (one of " \
        + ", ".join(listen.requires) + ")"
    bare = Estate(None, False, Era.MODERN, "2026-07-28", None, None, "", None, 1.0, 1,
                  capabilities={"tools": {}})
    assert bare.unadvertised(listen.requires) == estate_reason
    advertised = Estate(None, False, Era.MODERN, "2026-07-28", None, None, "", None, 1.0, 1,
                        capabilities={"tools": {"listChanged": True}})
    assert advertised.unadvertised(listen.requires) is None


def test_a_tool_that_needs_a_capability_is_refused_with_32021_when_named() -> None:
    report = run(Target.from_asgi(demo_app(with_capability_tool=True)),
                 options=RunOptions(capability_tool=CAPABILITY_TOOL))
    case = next(c for c in report.cases if c.name == "negative-missing-required-capability")
    assert (case.outcome, case.observed_status, case.observed_code) == ("pass", 400, -32021)
    assert report.failed == 0 and report.skipped == len(expected_skips(stdio=False)) - 1


def test_a_named_capability_tool_that_needs_nothing_fails_the_case() -> None:
    report = run(Target.from_asgi(demo_app()), options=RunOptions(capability_tool="db.query"))
    case = next(c for c in report.cases if c.name == "negative-missing-required-capability")
    assert case.outcome == "fail"
    assert case.finding is not None and case.finding.startswith("expect.outcome: $.result:")
