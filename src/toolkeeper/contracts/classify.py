"""The change classifier (SPEC 1.4): compare two contracts or two schemas, name every change.

Public API (stable): :func:`classify` for whole contracts, :func:`classify_schemas` for bare schemas.
The body here is a placeholder that is being replaced by the full classifier.
"""

from __future__ import annotations

from typing import Any

from toolkeeper.contracts.changes import Bump, Change, Verdict
from toolkeeper.contracts.spec import ToolSpec

__all__ = ["classify", "classify_schemas"]


def classify(before: ToolSpec, after: ToolSpec) -> Verdict:
    """Classify the change between two contracts (input contravariant, output covariant)."""
    if before.content_mapping() == after.content_mapping():
        return Verdict(Bump.PATCH, ())
    change = Change("$", "contract.unanalysable", Bump.MAJOR, "placeholder: fails closed")
    return Verdict(Bump.MAJOR, (change,))


def classify_schemas(before: dict[str, Any], after: dict[str, Any], *, output: bool = False,
                     assert_formats: bool = False) -> Verdict:
    """Classify the change between two bare schemas; ``output=True`` is the covariant direction."""
    if before == after:
        return Verdict(Bump.PATCH, ())
    prefix = "output" if output else "input"
    change = Change("$", f"{prefix}.unanalysable", Bump.MAJOR, "placeholder: fails closed")
    return Verdict(Bump.MAJOR, (change,))
