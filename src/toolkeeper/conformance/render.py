"""Rendering a conformance report for people: Markdown, a summary, one progress line per case.
The report itself is data (:mod:`.report`); nothing here decides an outcome."""

from __future__ import annotations

from toolkeeper.conformance.report import CaseResult, Report
from toolkeeper.contracts.canonical import canonical_json

__all__ = ["counts_text", "progress_line", "render_markdown", "summary_line"]

_MARKS = {"pass": "ok", "fail": "FAIL", "warn": "WARN", "note": "note", "skip": "skip"}


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _citation(case: CaseResult) -> str:
    cited = case.citation
    return "" if cited is None else f"{cited['file']} \u00a7 {cited['section']}"


def progress_line(case: CaseResult) -> str:
    tail = f"  {case.finding}" if case.finding and case.outcome != "pass" else ""
    level = f" [{case.level}]" if case.level and case.outcome in ("fail", "warn", "note") \
        else ""
    return f"{_MARKS[case.outcome]:>4}  {case.name}{level}{tail}"


def counts_text(report: Report) -> str:
    """``live: 3 passed, 1 failed, ...; selfcheck: 29 passed, 0 failed``."""
    live, selfcheck = report.live, report.selfcheck
    return (f"live: {live['passed']} passed, {live['failed']} failed, {live['warned']} warned, "
            f"{live['noted']} noted, {live['skipped']} skipped; selfcheck: "
            f"{selfcheck['passed']} passed, {selfcheck['failed']} failed")


def summary_line(report: Report) -> str:
    unserved = "".join(f"; {v.verdict} {v.era}" for v in report.eras)
    return (f"{counts_text(report)} against {report.target} "
            f"(era {report.era or 'none'}{unserved})")


def render_markdown(report: Report) -> str:
    """A Markdown page: the summary, the era decision's verdict, the eras not served, and one
    row per case (live cases first, then the self-checks)."""
    verdict = (report.era_decision or {}).get("verdict", "none")
    lines = [
        "# Conformance report", "",
        f"- target: `{_cell(report.target)}`",
        f"- era: {_cell(report.era or 'none')} (decision: {_cell(verdict)})",
        *(f"- {_cell(v.verdict)} {_cell(v.era)}: {_cell(v.reason)}" for v in report.eras),
        f"- {counts_text(report)} (of {len(report.cases)} cases)",
        f"- digest: `{report.digest}`", "",
        "| case | mode | level | citation | outcome | tool | arguments | expected | status "
        "| observed | finding |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ordered = sorted(report.cases, key=lambda c: (c.mode != "live", c.name))
    for case in ordered:
        arguments = None if case.arguments is None else _json(case.arguments)
        lines.append("| " + " | ".join(_cell(v) for v in (
            case.name, case.mode, case.level, _citation(case), case.outcome, case.tool,
            arguments, case.expected_code, case.observed_status, case.observed_code,
            case.finding)) + " |")
    return "\n".join(lines) + "\n"


def _json(value: object) -> str:
    return canonical_json(value).decode("utf-8")
