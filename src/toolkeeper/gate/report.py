"""The gate's report for people: one self-contained HTML page of a decision and the evidence
bundle it was made on (issue 23).

The page opens offline: its styles are inline, its charts inline SVG (:mod:`~toolkeeper.gate.
report_charts`), and it loads nothing (no script, font, image or stylesheet; its content security
policy allows none, so a browser refuses whatever the evidence might smuggle in). Every value
from the bundle, the decision or the matrix is escaped. The page holds, in order: the decision
(its outcome, its reasons with their status, rule, section, measured value and threshold, the
count per status, the evidence digest and each section's), one panel per section
(:mod:`~toolkeeper.gate.report_panels`) with the section's digest, and the compatibility matrix
when one is given. The same inputs give the same bytes: nothing depends on the time, the machine
or the order of a mapping's keys.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any, Final

from toolkeeper.gate.report_charts import require_matplotlib
from toolkeeper.gate.report_html import (
    STATUS_CLASSES,
    as_map,
    esc,
    maps,
    paragraph,
    shown,
    table,
)
from toolkeeper.gate.report_panels import PANELS

__all__ = ["page", "render"]

_STATUSES: Final = ("passed", "failed", "inconclusive", "ignored")
_CSP: Final = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
               "base-uri 'none'; form-action 'none'")
_STYLE: Final = """
body { font: 15px/1.45 system-ui, sans-serif; color: #1b1b1b; margin: 0 auto; max-width: 72rem;
       padding: 1rem 2rem 3rem; }
h1 { font-size: 2.4rem; margin: .6rem 0; }
h1.failed { color: #b03a2e; } h1.passed { color: #1e8449; } h1.held { color: #9a6b00; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2.2rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
table { border-collapse: collapse; margin: .4rem 0; font-size: .9rem; }
.table { overflow-x: auto; }
th, td { border: 1px solid #d5d5d5; padding: .25rem .55rem; text-align: left;
         vertical-align: top; overflow-wrap: break-word; }
th { background: #f3f3f3; white-space: nowrap; }
td.status { font-weight: 600; white-space: nowrap; }
td.passed { color: #1e8449; } td.failed { color: #b03a2e; } td.held { color: #9a6b00; }
td.ignored, td.other { color: #666; }
.digest, code { font-family: ui-monospace, monospace; font-size: .85rem; color: #444;
                overflow-wrap: anywhere; }
.empty { color: #666; font-style: italic; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; }
figure.chart { margin: .5rem 0; }
figure.chart svg { max-width: 100%; height: auto; }
figcaption { font-size: .85rem; color: #444; }
"""


def render(bundle: Mapping[str, Any], decision: Mapping[str, Any],
           matrix: Mapping[str, Any] | None = None) -> str:
    """The HTML page of ``decision`` on ``bundle`` (a bundle as
    :func:`~toolkeeper.gate.evidence.bundle` makes it), with ``matrix`` when given.
    ToolkeeperError ``gate.needs_matplotlib`` without matplotlib."""
    require_matplotlib()
    sections = as_map(bundle.get("sections"))
    policy = as_map(as_map(sections.get("policy")).get("content"))
    outcome = decision.get("outcome")
    title = f"Decision: {shown(outcome)}"
    subject = _named(decision.get("candidate")) or _subject(sections)
    if subject:
        title += f" \u2014 {subject}"
    body = [_decision(bundle, decision, subject)]
    body += [_section(name, heading, panel(as_map(as_map(sections.get(name)).get("content")),
                                           policy), as_map(sections.get(name)).get("digest"))
             for name, heading, panel in PANELS]
    if matrix is not None:
        body.append(_matrix(matrix))
    return page(title, body)


def page(title: str, body: list[str]) -> str:
    """The self-contained page of ``body`` (HTML already escaped) titled ``title`` (text):
    the report's styles inline and its content security policy, which loads nothing."""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
        ""])


def _subject(sections: Mapping[str, Any]) -> str:
    """The candidate's tool and version, as its health window names them."""
    return _named(as_map(as_map(sections.get("healthWindows")).get("content")).get("candidate"))


def _named(party: Any) -> str:
    """A tool and version as the decision names them ('' when it does not)."""
    named = [as_map(party).get(k) for k in ("tool", "version")]
    return " ".join(v for v in named if isinstance(v, str))


def _decision(bundle: Mapping[str, Any], decision: Mapping[str, Any], subject: str) -> str:
    outcome = decision.get("outcome")
    css = STATUS_CLASSES.get(outcome, "other") if isinstance(outcome, str) else "other"
    counts = as_map(decision.get("counts"))
    reasons = [[r.get("status"), r.get("rule"), r.get("section"), r.get("measured"),
                r.get("threshold"), r.get("detail")] for r in maps(decision.get("reasons"))]
    gate = as_map(decision.get("gate"))
    digest = decision.get("evidenceDigest")
    same = digest == bundle.get("digest")
    digests = as_map(decision.get("sections"))
    return "\n".join([
        '<header id="decision">',
        f'<h1 class="{css}">Decision: {esc(outcome)}</h1>',
        paragraph(f"Candidate: {subject}") if subject else "",
        paragraph(f"Rollback target: {_named(decision.get('rollbackTarget'))}")
        if _named(decision.get("rollbackTarget")) else "",
        paragraph(f"Decided by {shown(gate.get('name'))} {shown(gate.get('version'))}")
        if gate else "",
        "<h2>Reasons</h2>",
        table(["status", "rule", "section", "measured", "threshold", "detail"], reasons,
              status_column=0, empty="no reasons given"),
        "<h3>Counts</h3>",
        table(list(_STATUSES), [[counts.get(s, 0) for s in _STATUSES]]),
        "<h3>Evidence</h3>",
        f'<p>Evidence digest: <code>{esc(digest)}</code>'
        + ("" if same else f' \u2014 <strong>not the bundle\'s</strong> '
           f'(<code>{esc(bundle.get("digest"))}</code>)') + "</p>",
        table(["section", "digest"], sorted(digests.items()), empty="no section digests"),
        "</header>"])


def _section(name: str, heading: str, panel: str, digest: Any) -> str:
    return "\n".join([f'<section id="{name}">', f"<h2>{html.escape(heading)}</h2>",
                      f'<p class="digest">{esc(digest)}</p>', panel, "</section>"])


_CELL_COLUMNS: Final = (("spec revision", "specRevision"), ("client", "client"),
                        ("server", "server"), ("transport", "transport"),
                        ("negotiated", "negotiatedRevision"), ("required passed", "required"),
                        ("tier", "tier"), ("live", "live"),
                        ("expected failures", "expectedFailures"),
                        ("transcript digest", "transcriptDigest"))
"""The matrix's cell columns (gate/matrix.py's cells); any other key a cell has follows."""


def _cell_value(value: Any) -> Any:
    """A party as its name and version, a required count as passed/total, live counts as
    "outcome n" pairs; anything else as it is."""
    if isinstance(value, Mapping) and set(value) == {"name", "version"}:
        return " ".join(v for v in (value["name"], value["version"]) if isinstance(v, str))
    if isinstance(value, Mapping) and set(value) == {"passed", "total"}:
        return f"{shown(value['passed'])}/{shown(value['total'])}"
    if isinstance(value, Mapping) and value:
        return ", ".join(f"{key} {shown(value[key])}" for key in sorted(value, key=str))
    return value


def _matrix(matrix: Mapping[str, Any]) -> str:
    """The matrix's cells, one row each, with its summary, digest and release decision."""
    cells = maps(matrix.get("cells"))
    known = {key for _, key in _CELL_COLUMNS}
    present = {str(key) for cell in cells for key in cell}
    columns = [(h, k) for h, k in _CELL_COLUMNS if k in present] + [
        (key, key) for key in sorted(present - known)]
    rows = [[_cell_value(cell.get(key)) for _, key in columns] for cell in cells]
    summary = as_map(matrix.get("summary"))
    decision = matrix.get("decision")
    return "\n".join([
        '<section id="matrix">', "<h2>Compatibility matrix</h2>",
        f'<p class="digest">{esc(matrix.get("digest"))}</p>',
        table(list(summary), [list(summary.values())]) if summary else "",
        paragraph(f"Release decision beside it: {shown(as_map(decision).get('outcome'))}")
        if decision is not None else "",
        table([h for h, _ in columns], rows, empty="no cells"), "</section>"])
