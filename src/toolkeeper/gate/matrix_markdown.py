"""The compatibility matrix as Markdown: a pure function of the matrix JSON
(:func:`~toolkeeper.gate.matrix.build_matrix`), so the same runs give the same bytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json

__all__ = ["matrix_markdown", "pass_percent", "tier_label"]

_HEAD: Final = ("spec revision", "client", "server", "transport", "negotiated", "passed",
                "failed", "warned", "noted", "skipped", "required", "tier",
                "expected failures", "transcript")
_NONE: Final = "—"


def pass_percent(passed: int, total: int) -> str:
    """``passed`` of ``total`` as a percentage cut (not rounded) to one decimal, so a share
    under 80% never shows as 80.0%: 79.96% is ``79.9%``."""
    tenths = passed * 1000 // total
    return f"{tenths // 10}.{tenths % 10}%"


def tier_label(tier: int | None) -> str:
    return "unrated" if tier is None else f"tier {tier}"


def _party(party: Mapping[str, Any]) -> str:
    return party["name"] if party["version"] is None else f"{party['name']} {party['version']}"


def _cell_text(text: str) -> str:
    """One table cell: one line, no column separator."""
    return " ".join(text.replace("|", "\\|").split())


def _row(cell: Mapping[str, Any]) -> list[str]:
    live, required = cell["live"], cell["required"]
    share = (f"{required['passed']}/{required['total']} "
             f"({pass_percent(required['passed'], required['total'])})"
             if required["total"] else "0/0")
    return [cell["specRevision"], _party(cell["client"]), _party(cell["server"]),
            cell["transport"], cell["negotiatedRevision"] or _NONE,
            *(str(live[key]) for key in ("passed", "failed", "warned", "noted", "skipped")),
            share, tier_label(cell["tier"]), str(len(cell["expectedFailures"])),
            f"`{cell['transcriptDigest'][:19]}…`"]


def _expected(cells: list[Mapping[str, Any]]) -> list[str]:
    lines = []
    for cell in cells:
        where = (f"{cell['specRevision']}, {_party(cell['client'])}, {_party(cell['server'])}, "
                 f"{cell['transport']}")
        lines += [f"- {_cell_text(where)}: `{_cell_text(entry['case'])}`: "
                  f"{_cell_text(entry['reason'])}" for entry in cell["expectedFailures"]]
    return ["", "## Expected failures", "", *lines] if lines else []


def matrix_markdown(matrix: Mapping[str, Any]) -> str:
    """The matrix, its tier reading, its expected failures and the release decision beside it."""
    tiering, summary, cells = matrix["tiering"], matrix["summary"], list(matrix["cells"])
    thresholds = ", ".join(
        f"tier {t['tier']} " + ("no minimum" if t["minPassPercent"] is None
                                else f"{t['minPassPercent']}%" if t["minPassPercent"] == 100
                                else f"at least {t['minPassPercent']}%")
        for t in tiering["thresholds"])
    lines = [
        "# Compatibility matrix", "",
        f"Tier reading ({tiering['source']}; {tiering['specPath']}): the share passed of "
        f"{tiering['counted']}: {thresholds}; {tiering['unrated']}.", "",
        f"Cells: {summary['cells']}; tier 1: {summary['tier1']}, tier 2: {summary['tier2']}, "
        f"tier 3: {summary['tier3']}, unrated: {summary['unrated']}.", "",
        "| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD),
        *("| " + " | ".join(_cell_text(text) for text in _row(cell)) + " |" for cell in cells),
        *_expected(cells),
        "", "## Release decision", "",
    ]
    decision = matrix["decision"]
    if decision is None:
        lines.append("No release decision was given.")
    else:
        lines += [f"Outcome: **{_cell_text(decision['outcome'])}**.", "", "```json",
                  canonical_json(decision).decode("utf-8"), "```"]
    lines += ["", f"Matrix digest: `{matrix['digest']}` (format version {matrix['version']})."]
    return "\n".join(lines) + "\n"
