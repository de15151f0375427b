"""The change classifier's walk: the one entry to the keyword handlers.

Each handler module lists its handlers with the keywords they own (``VALUE_HANDLERS``,
``MEMBER_HANDLERS``, ...); :data:`HANDLERS` is their table, read by :func:`compare_documents`
through the step it gives every context it makes. Handlers take a
:class:`~toolkeeper.contracts.classify.context.Ctx` and recurse through
:meth:`Ctx.compare <toolkeeper.contracts.classify.context.Ctx.compare>`, so none imports this
module. A keyword that no handler owns and that changed is reported as ``*.unanalysable``: the
classifier fails closed.
"""

from __future__ import annotations

from typing import Any

from toolkeeper.contracts.changes import Change
from toolkeeper.contracts.classify.combinators import COMBINATOR_HANDLERS
from toolkeeper.contracts.classify.context import Ctx, HandlerTable
from toolkeeper.contracts.classify.evaluation import EVALUATION_HANDLERS
from toolkeeper.contracts.classify.keywords import VALUE_HANDLERS, show
from toolkeeper.contracts.classify.members import MEMBER_HANDLERS
from toolkeeper.contracts.classify.refs import (
    DEFINITION_KEYWORDS,
    REF_KEYWORDS,
    SchemaDocument,
    child_path,
    value_key,
)
from toolkeeper.contracts.classify.structure import STRUCTURE_HANDLERS

__all__ = ["HANDLERS", "KNOWN_KEYWORDS", "compare_documents"]

#: Every keyword handler, in a fixed order (the order changes are found in, not reported in).
HANDLERS: HandlerTable = (
    VALUE_HANDLERS + MEMBER_HANDLERS + STRUCTURE_HANDLERS + EVALUATION_HANDLERS
    + COMBINATOR_HANDLERS)
#: Keywords the classifier understands; any other keyword that changed fails closed.
KNOWN_KEYWORDS: frozenset[str] = frozenset().union(
    *(keywords for keywords, _ in HANDLERS), DEFINITION_KEYWORDS, REF_KEYWORDS)

#: Keywords the classifier does not know that hold schemas in some JSON Schema draft: the
#: validator may apply them (jsonschema-rs applies ``dependencies`` under 2020-12), so a format
#: inside one may assert. Any other unknown keyword is ignored by the validator: its value is data.
_SCHEMA_HOLDING_UNKNOWN = frozenset({"dependencies", "additionalItems", "contentSchema",
                                     "extends", "disallow"})


def _compare_resolved(ctx: Ctx, b: Any, a: Any, path: str) -> None:
    b = {} if b is True else b
    a = {} if a is True else a
    if b is False or a is False:
        if a is False:
            ctx.emit(path, "schema.closed", "the schema became false: nothing is valid any more")
        else:
            ctx.emit(path, "schema.opened", "the schema was false (nothing valid) and now is not")
        return
    if not isinstance(b, dict) or not isinstance(a, dict):
        ctx.emit(path, "unanalysable",
                 f"not a schema ({show(b)} -> {show(a)}): cannot be analysed, fails closed")
        return
    for _, handler in HANDLERS:
        handler(ctx, b, a, path)
    _unknown(ctx, b, a, path)


def _unknown(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    for name in sorted((set(b) | set(a)) - KNOWN_KEYWORDS):
        # The validator ignores most unknown keywords: a format in their value never asserts.
        same = ctx.unchanged if name in _SCHEMA_HOLDING_UNKNOWN else ctx.same
        if name in b and name in a and same(b[name], a[name]):
            continue
        ctx.emit(child_path(path, name), "unanalysable",
                 f"{name} changed and the classifier cannot analyse it: fails closed")


def compare_documents(before: Any, after: Any, *, direction: str, path: str,
                      assert_formats: tuple[bool, bool]) -> list[Change]:
    """Every change between two schema documents, rooted at ``path``."""
    if assert_formats[0] == assert_formats[1] and value_key(before) == value_key(after):
        return []  # identical documents (also the only way an unanalysable one is "unchanged")
    ctx = Ctx(direction, SchemaDocument(before), SchemaDocument(after), assert_formats,
              _compare_resolved)
    ctx.compare(before, after, path)
    return ctx.changes
