"""One panel of the gate's HTML report per evidence section: what a reader checks of each, read
from the section's content as bundle.md shapes it, and tolerant of any other shape (a field
missing or of another type shows as a dash or is left out; nothing raises)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from toolkeeper.gate.report_charts import error_rate_svg, latency_svg, number
from toolkeeper.gate.report_html import as_list, as_map, esc, flatten, maps, paragraph, table

__all__ = ["PANELS"]

Panel = Callable[[Mapping[str, Any], Mapping[str, Any]], str]
"""``(content, policy content) -> HTML`` of one section."""

_LIVE: Final = ("passed", "failed", "warned", "noted", "skipped")
_CASE_FIELDS: Final = ("name", "class", "requirements", "tool", "finding")


def _transcripts(content: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    """Each run's live cases passed of total (recorded cases are the harness's self-check, not
    the target's) and every failing live case."""
    runs = maps(content.get("runs"))
    counts = []
    failing = []
    for run in runs:
        live = as_map(run.get("live"))
        total = sum(int(v) for v in (number(live.get(k)) for k in _LIVE) if v is not None)
        counts.append([run.get("target"), run.get("era"), f"{_count(live, 'passed')}/"
                       f"{total}", live.get("failed"), live.get("warned"), live.get("skipped")])
        failing += [[run.get("target"), *(case.get(f) for f in _CASE_FIELDS)]
                    for case in maps(run.get("cases"))
                    if case.get("mode") == "live" and case.get("outcome") == "fail"]
    return (table(["target", "era", "live passed/total", "failed", "warned", "skipped"],
                  counts, empty="no runs")
            + "<h3>Failing live cases</h3>"
            + table(["target", *_CASE_FIELDS], failing, empty="no live case failed"))


def _count(counts: Mapping[str, Any], key: str) -> str:
    value = number(counts.get(key))
    return "0" if value is None else f"{value:g}"


def _sdk_diffs(content: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    """Each report's runs, and per SDK and fixture the semantic-loss paths and refusals."""
    reports = maps(content.get("reports"))
    summary = [[r.get("role"), r.get("sdks"), r.get("ran"), r.get("skipped"), r.get("refused"),
                len(as_list(r.get("disagreements")))] for r in reports]
    losses = [[r.get("role"), run.get("sdk"), run.get("fixture"), run.get("era"),
               run.get("semanticLoss"), run.get("refused")]
              for r in reports for run in maps(r.get("runs"))
              if as_list(run.get("semanticLoss")) or as_list(run.get("refused"))]
    return (table(["role", "SDKs", "ran", "skipped", "refused", "disagreements"], summary,
                  empty="no reports")
            + "<h3>Semantic loss and refusals</h3>"
            + table(["role", "SDK", "fixture", "era", "semantic-loss paths", "refused by"],
                    losses, empty="no SDK lost a field or was refused"))


def _proxy(content: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    """Each configuration's issues and its findings."""
    reports = maps(content.get("reports"))
    issues = [[r.get("config"), len(as_list(r.get("exchanges"))), r.get("issues")]
              for r in reports]
    findings = [[r.get("config"), f.get("id"), f.get("title"), f.get("exchange"), f.get("hop"),
                 f.get("detail")] for r in reports for f in maps(r.get("findings"))]
    return (table(["config", "exchanges", "issues"], issues, empty="no reports")
            + "<h3>Findings</h3>"
            + table(["config", "id", "title", "exchange", "hop", "detail"], findings,
                    empty="no findings"))


def _window_policy(policy: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map(policy.get("window"))


def _latency_limit(policy: Mapping[str, Any]) -> tuple[float, float] | None:
    latency = as_map(_window_policy(policy).get("latency"))
    percentile, max_ms = number(latency.get("percentile")), number(latency.get("maxMs"))
    return None if percentile is None or max_ms is None else (percentile, max_ms)


def _error_outcomes(policy: Mapping[str, Any]) -> frozenset[str] | None:
    outcomes = _window_policy(policy).get("errorOutcomes")
    if not isinstance(outcomes, list):
        return None
    return frozenset(o for o in outcomes if isinstance(o, str))


def _figure(svg: str | None, caption: str) -> str:
    if svg is None:
        return ""
    return f'<figure class="chart">{svg}<figcaption>{esc(caption)}</figcaption></figure>'


def _health(content: Mapping[str, Any], policy: Mapping[str, Any]) -> str:
    """The windows, their charts and the candidate's verdicts (the baseline's status beside)."""
    windows = {role: content.get(role) if isinstance(content.get(role), Mapping) else None
               for role in ("candidate", "baseline")}
    rows = []
    for role, window in windows.items():
        if window is None:
            rows.append([role, None, None, None, "absent", None, None])
            continue
        result = as_map(window.get("result"))
        rows.append([role, window.get("tool"), window.get("version"), window.get("source"),
                     result.get("status"), result.get("samples"), result.get("errors")])
    named = " against ".join(f"{role} {_pair(w)}" for role, w in windows.items()
                             if w is not None)
    charts = (_figure(latency_svg(windows, _latency_limit(policy)),
                      f"Latency distribution (empirical CDF): {named}")
              + _figure(error_rate_svg(windows, _error_outcomes(policy),
                                       number(_window_policy(policy).get("maxErrorRate"))),
                        f"Error rate over time: {named}"))
    verdicts = [[v.get("rule"), v.get("status"), v.get("measured"), v.get("threshold")]
                for v in maps(as_map(as_map(windows["candidate"]).get("result"))
                              .get("verdicts"))]
    return (table(["window", "tool", "version", "source", "status", "samples", "errors"], rows,
                  status_column=4)
            + f'<div class="charts">{charts}</div>'
            + (paragraph("no latencies or timed samples to draw", "empty") if not charts else "")
            + "<h3>The candidate's verdicts</h3>"
            + table(["rule", "status", "measured", "threshold"], verdicts, status_column=1,
                    empty="no verdicts"))


def _pair(window: Mapping[str, Any] | None) -> str:
    window = as_map(window)
    return f"{window.get('tool', '?')} {window.get('version', '?')}"


def _rollback(content: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    """The evidence's fields and who attested it, with which algorithm (never the signature)."""
    fields = [[key, value] for key, value in sorted(content.items())
              if key != "attestation"]
    attestation = as_map(content.get("attestation"))
    return (table(["field", "value"], fields, empty="no fields")
            + "<h3>Attestation</h3>"
            + table(["signer", "algorithm"],
                    [[attestation.get("signer"), attestation.get("algorithm")]]
                    if attestation else [], empty="not attested"))


def _policy(content: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    """Every threshold, by its dotted path."""
    return table(["threshold", "value"], flatten(content), empty="no thresholds")


PANELS: Final[tuple[tuple[str, str, Panel], ...]] = (
    ("transcripts", "Transcripts", _transcripts),
    ("sdkDiffs", "SDK diffs", _sdk_diffs),
    ("proxyEvidence", "Proxy evidence", _proxy),
    ("healthWindows", "Health windows", _health),
    ("rollbackEvidence", "Rollback evidence", _rollback),
    ("policy", "Policy", _policy),
)
"""Each section's name, heading and panel, in the report's order."""
