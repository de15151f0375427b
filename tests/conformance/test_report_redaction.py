"""Nothing the harness writes carries a secret of the redaction corpus (issue 16, acceptance 6,
for the report): a finding that quotes what a server sent is redacted before it is shortened,
a value under a denied key is never quoted, and the JSON and Markdown forms carry neither."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from conformance_kit import demo_app, run

from redaction_kit import CORPUS, Case, leaks
from toolkeeper.client import Target
from toolkeeper.conformance import Report, canonical_text, parse_transcript
from toolkeeper.conformance.render import render_markdown
from toolkeeper.conformance.report import CaseResult

REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "lookup", "arguments": {}, "_meta": {
               "io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}}}


def _transcript(case: Case, index: int) -> Any:
    """A recorded golden case whose answer carries the secret where the pattern differs."""
    carried = case.arguments()
    name = f"golden-redaction-{index}"
    value = {
        "name": name, "class": "golden", "era": "2026-07-28", "mode": "recorded",
        "requirements": ["SPEC-5.6"], "description": "a secret in a mismatching field",
        "request": {"body": REQUEST},
        "expect": {"outcome": "accepted", "body": {"result": {"structuredContent": {
            k: "something else" for k in carried}}}},
        "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": {
            "jsonrpc": "2.0", "id": 1, "result": {
                "resultType": "complete", "content": [], "structuredContent": carried}}},
    }
    return parse_transcript(canonical_text(value).encode(), name)


def test_findings_quoting_a_servers_secret_are_redacted_in_every_rendering() -> None:
    transcripts = [_transcript(case, i) for i, case in enumerate(CORPUS)]
    report = run(Target.from_asgi(demo_app()), transcripts)
    assert report.failed == len(CORPUS)
    written = report.canonical().decode() + render_markdown(report)
    for case in CORPUS:
        assert leaks(written, case) == [], case.name


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_a_target_with_a_secret_in_its_query_is_redacted_when_the_report_is_built(
        case: Case) -> None:
    report = Report(f"http://127.0.0.1/mcp?token={quote(case.secrets[0], safe='')}", None,
                    None, ())
    assert leaks(report.canonical().decode() + render_markdown(report), case) == []


@pytest.mark.parametrize("case", [c for c in CORPUS if c.kind == "value"],
                         ids=lambda c: c.name)
def test_a_finding_with_a_secret_shaped_value_is_redacted_when_the_report_is_built(
        case: Case) -> None:
    assert case.text is not None
    finding = "expect.body: $.result.note: " + case.text.replace("{secret}", case.secrets[0])
    report = Report("app", None, None, (CaseResult(
        "golden-x", "golden", ("SPEC-5.6",), "fail", None, None, None, None, finding),))
    assert leaks(report.canonical().decode() + render_markdown(report), case) == []


@pytest.mark.parametrize("case", [c for c in CORPUS if c.kind == "value"],
                         ids=lambda c: c.name)
def test_a_secret_in_the_era_decision_a_target_answered_is_redacted_when_the_report_is_built(
        case: Case) -> None:
    assert case.text is not None
    carried = case.text.replace("{secret}", case.secrets[0])
    decision = {"verdict": "modern.recognised_error", "observation": {
        "outcome": "modern_error", "detail": carried, "versions": ["2099-01-01", carried]}}
    report = Report("app", "2026-07-28", decision, ())
    assert leaks(report.canonical().decode() + render_markdown(report), case) == []
    assert report.era_decision is not None
    assert report.era_decision["verdict"] == "modern.recognised_error"
