"""Rendering a conformance report for people: Markdown, a summary, one progress line per case.
The report itself is data (:mod:`.report`); nothing here decides an outcome."""

from __future__ import annotations

from toolkeeper.conformance.report import CaseResult, Report

__all__ = ["progress_line", "render_markdown", "summary_line"]

_MARKS = {"pass": "ok", "fail": "FAIL", "skip": "skip"}


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def progress_line(case: CaseResult) -> str:
    tail = f"  {case.finding}" if case.finding and case.outcome != "pass" else ""
    return f"{_MARKS[case.outcome]:>4}  {case.name}{tail}"


def summary_line(report: Report) -> str:
    return (f"{report.passed} passed, {report.failed} failed, {report.skipped} skipped "
            f"of {len(report.cases)} against {report.target} (era {report.era or 'none'})")


def render_markdown(report: Report) -> str:
    """A Markdown page: the summary, the era decision's verdict, and one row per case."""
    verdict = (report.era_decision or {}).get("verdict", "none")
    lines = [
        "# Conformance report", "",
        f"- target: `{_cell(report.target)}`",
        f"- era: {_cell(report.era or 'none')} (decision: {_cell(verdict)})",
        f"- {report.passed} passed, {report.failed} failed, {report.skipped} skipped of "
        f"{len(report.cases)}",
        f"- digest: `{report.digest}`", "",
        "| case | class | outcome | boundary | expected | status | observed | finding |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in report.cases:
        lines.append("| " + " | ".join(_cell(v) for v in (
            case.name, case.case_class, case.outcome, case.boundary, case.expected_code,
            case.observed_status, case.observed_code, case.finding)) + " |")
    return "\n".join(lines) + "\n"
