"""The HTML pieces of the gate's report: every value shown escaped (evidence is untrusted: a
finding or tool name holding ``<script>`` is text on the page), tables of rows, and readers of
JSON that tolerate any shape (a section's content is whatever its producer wrote)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json

__all__ = ["STATUS_CLASSES", "as_list", "as_map", "esc", "flatten", "maps", "paragraph", "shown",
           "status_cell", "table"]

STATUS_CLASSES: Final = {"passed": "passed", "healthy": "passed", "promote": "passed",
                         "failed": "failed", "rollback": "failed", "halt": "failed",
                         "fail": "failed", "inconclusive": "held", "hold": "held",
                         "warn": "held", "ignored": "ignored", "skipped": "ignored"}
"""The CSS class of a status word (a fixed set: never a class name taken from the evidence)."""


def esc(value: Any) -> str:
    """``value`` shown (:func:`shown`), escaped for HTML text and attribute values."""
    return html.escape(shown(value), quote=True)


def shown(value: Any) -> str:
    """A JSON value as text: a string as itself, None as an em dash, a list of strings as
    they are, comma-separated, anything else as its canonical JSON (the same on every
    machine)."""
    if value is None:
        return "\u2014"
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return ", ".join(value)
    try:
        return canonical_json(value).decode("utf-8")
    except Exception:  # a value canonical JSON refuses (NaN): its repr, still escaped after
        return repr(value)


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def maps(value: Any) -> list[Mapping[str, Any]]:
    """The objects of a JSON list (anything else in it left out)."""
    return [item for item in as_list(value) if isinstance(item, Mapping)]


def status_cell(status: Any) -> str:
    css = STATUS_CLASSES.get(status, "other") if isinstance(status, str) else "other"
    return f'<td class="status {css}">{esc(status)}</td>'


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, status_column: int = -1,
          empty: str = "none") -> str:
    """A table of ``rows`` (each value escaped; column ``status_column`` coloured by status),
    or a line saying ``empty`` when there are none."""
    body = []
    for row in rows:
        cells = [status_cell(value) if i == status_column else f"<td>{esc(value)}</td>"
                 for i, value in enumerate(row)]
        body.append(f"<tr>{''.join(cells)}</tr>")
    if not body:
        return paragraph(empty, "empty")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    return (f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>\n'
            + "\n".join(body) + "\n</tbody></table></div>")


def paragraph(text: str, css: str = "") -> str:
    attribute = f' class="{css}"' if css else ""
    return f"<p{attribute}>{html.escape(text)}</p>"


def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every leaf of ``value`` with its dotted path (lists are leaves), in key order."""
    if isinstance(value, Mapping) and value:
        out: list[tuple[str, Any]] = []
        for key in sorted(value, key=str):
            out += flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
        return out
    return [(prefix or "(value)", value)]
