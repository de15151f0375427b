"""Validation errors as values, and the instance locations they name (SPEC 1.2).

An :class:`Issue` carries a JSON path (``$.a[0].b``), a message and a keyword;
:func:`format_path` renders a location (a sequence of keys and indexes) as that path, and
:func:`value_at` finds the value a location names. :class:`BoundedIssues` is what
:meth:`~toolkeeper.contracts.validate.CompiledSchema.bounded_errors` returns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json

__all__ = ["ISSUE_ORDER", "BoundedIssues", "Issue", "format_path", "value_at"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True, slots=True, order=True)
class Issue:
    """One validation error: JSON path (``$.a[0].b``), message, keyword. Sorts by (path, message)."""

    path: str
    message: str
    keyword: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "keyword": self.keyword, "message": self.message}


@dataclass(frozen=True, slots=True)
class BoundedIssues:
    """The errors :meth:`CompiledSchema.bounded_errors` lists: ``issues`` sorted, as
    :meth:`CompiledSchema.errors` sorts them; ``truncated`` when the instance held more values
    than the bound and those past it were not checked (more errors may exist)."""

    issues: list[Issue]
    truncated: bool


# Issue's own order as a key: tuples compare in C, the dataclass's __lt__ in Python (many
# times slower for an instance with thousands of errors).
ISSUE_ORDER: Final = attrgetter("path", "message", "keyword")


def format_path(parts: Iterable[str | int]) -> str:
    """Render an instance location as a JSON path: ``$.a[0]['odd key']``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.fullmatch(part):
            out.append(f".{part}")
        else:
            out.append("[" + canonical_json(part).decode("utf-8") + "]")
    return "".join(out)


def value_at(node: Any, parts: Iterable[str | int]) -> Any:
    """The value at a location of ``node``; None when the location names none."""
    for part in parts:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
            continue
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            continue
        return None
    return node
