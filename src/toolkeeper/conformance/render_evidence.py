"""Rendering the evidence reports for people: the SDK diff and the proxy evidence as Markdown
pages and one summary line each. The reports are data (:mod:`.sdk_diff`, :mod:`.proxy_run`),
redacted when built; nothing here decides an outcome."""

from __future__ import annotations

from toolkeeper.conformance.proxy_run import ProxyReport
from toolkeeper.conformance.sdk_diff import SdkDiffReport, SdkRun

__all__ = ["proxy_markdown", "proxy_summary", "sdk_diff_markdown", "sdk_diff_summary"]


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def sdk_diff_summary(report: SdkDiffReport) -> str:
    data = report.to_json()
    return (f"{data['ran']} ran, {data['skipped']} skipped, {data['refused']} refused for role "
            f"{report.role}")


def _normalized(run: SdkRun) -> str:
    normalized = run.normalized or {}
    if normalized.get("outcome") == "value":
        return "value"
    exception = normalized.get("exception") or {}
    return f"{exception.get('type')} {exception.get('code')}"


def sdk_diff_markdown(report: SdkDiffReport) -> str:
    """A page: the summary, the policy digest, one row per fixture and SDK, disagreements."""
    lines = ["# SDK diff", "", f"- role: {report.role}", f"- {sdk_diff_summary(report)}",
             f"- policy: `sha256:{report.policy_digest}`", f"- digest: `{report.digest}`", "",
             "| fixture | sdk | status | SDK gave | accounted removals | semantic loss | "
             "other changes | refused |", "|---|---|---|---|---|---|---|---|"]
    for run in report.runs:
        data = run.to_json()
        others = [f"{c['kind']} {c['path']}" for c in data["changes"]
                  if c["kind"] not in ("accounted_removal", "semantic_loss")]
        status = f"skipped: {run.skipped}" if run.skipped else (
            "ran" if run.raw is None else f"HTTP {run.raw['status']}")
        lines.append("| " + " | ".join(_cell(v) for v in (
            run.fixture, run.label or run.sdk, status, "" if run.skipped else _normalized(run),
            ", ".join(data["accountedRemovals"]), ", ".join(data["semanticLoss"]),
            ", ".join(others), ", ".join(run.refused))) + " |")
    disagreements = report.disagreements()
    if disagreements:
        lines += ["", "## SDKs that normalize a fixture differently", ""]
        lines += [f"- {_cell(d['fixture'])}: " + " / ".join(", ".join(g) for g in d["groups"])
                  for d in disagreements]
    return "\n".join(lines) + "\n"


def proxy_summary(report: ProxyReport) -> str:
    return (f"{len(report.findings)} finding(s) over {len(report.exchanges)} exchange(s) "
            f"through the {report.config} proxy configuration")


def proxy_markdown(report: ProxyReport) -> str:
    """A page: the summary, the digest, the distinct issues, one row per exchange and one
    per finding."""
    lines = ["# Proxy evidence", "", f"- {proxy_summary(report)}",
             f"- digest: `sha256:{report.digest()}`", ""]
    if report.issues:
        lines += ["## Issues", "", *(f"- {_cell(issue)}" for issue in report.issues), ""]
    lines += ["| exchange | origin status | egress status | body changed |", "|---|---|---|---|"]
    for exchange in report.exchanges:
        origin = exchange.origin
        changed = origin is not None and origin.body.digest != exchange.egress.body.digest
        lines.append("| " + " | ".join(_cell(v) for v in (
            exchange.name, None if origin is None else origin.status, exchange.egress.status,
            "yes" if changed else "no")) + " |")
    if report.findings:
        lines += ["", "| finding | title | exchange | hop |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(_cell(v) for v in (f.id, f.title, f.exchange, f.hop)) + " |"
                  for f in report.findings]
    return "\n".join(lines) + "\n"
