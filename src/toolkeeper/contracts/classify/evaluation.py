"""Keyword handlers of the change classifier for ``unevaluatedProperties`` and
``unevaluatedItems`` (SPEC 1.4; JSON Schema 2020-12 section 11).

These keywords constrain the members (items) that nothing else in the same schema object
*evaluated*: ``properties`` names, ``patternProperties`` regexes, ``additionalProperties``
(``prefixItems``, ``items``, ``contains``), also inside the in-place subschemas that succeed
(``allOf``, ``anyOf``, ``oneOf``, ``if``/``then``/``else``, ``dependentSchemas``, ``$ref``;
not ``not``). Which members that is does not move monotonically with the other keywords:
declaring a property on an object with ``unevaluatedProperties: false`` *admits* it. So the
classifier compares the *evaluation shape* of both sides (every name, regex and keyword
presence that decides what is evaluated, through in-place subschemas and references): when it
is the same, the unevaluated schema governs the same members and is compared like any subschema
(a subschema that narrows makes fewer branches succeed, which only narrows further); when it
differs, the change cannot be analysed and fails closed. A keyword on one side only is a
conjunct added (narrower) or dropped (wider) and is compared with ``true`` whatever the shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolkeeper.contracts.classify.context import Ctx, Handler
from toolkeeper.contracts.classify.refs import SchemaDocument, Unresolvable, child_path

__all__ = ["EVALUATION_HANDLERS", "evaluation_shape"]

# In-place applicators whose successful subschemas' annotations the keyword sees.
_LISTS = ("allOf", "anyOf", "oneOf")
_SINGLES = ("if", "then", "else")
# A shape walk visits at most this many nodes; a bigger one is unknown (fails closed).
_BUDGET = 2000

Own = Callable[[dict[str, Any], bool], tuple[Any, ...]]


def _own_properties(node: dict[str, Any], top: bool) -> tuple[Any, ...]:
    props, patterns = node.get("properties"), node.get("patternProperties")
    return (tuple(sorted(props)) if isinstance(props, dict) else None,
            tuple(sorted(patterns)) if isinstance(patterns, dict) else None,
            "additionalProperties" in node, not top and "unevaluatedProperties" in node)


def _own_items(node: dict[str, Any], top: bool) -> tuple[Any, ...]:
    prefix = node.get("prefixItems")
    return (len(prefix) if isinstance(prefix, list) else None, "items" in node,
            "contains" in node, not top and "unevaluatedItems" in node)


class _Unknown(Exception):
    """The shape cannot be computed (an unresolvable reference, a non-schema, too big)."""


def evaluation_shape(document: SchemaDocument, node: Any, keyword: str) -> Any:
    """What decides which members (``unevaluatedProperties``) or items (``unevaluatedItems``)
    the schema ``node`` evaluates, as a comparable value; None when it cannot be computed."""
    own = _own_properties if keyword == "unevaluatedProperties" else _own_items
    budget = [_BUDGET]
    try:
        return _shape(document, node, own, frozenset(), budget, top=True)
    except _Unknown:
        return None


def _shape(document: SchemaDocument, node: Any, own: Own, ancestors: frozenset[int],
           budget: list[int], *, top: bool = False) -> Any:
    budget[0] -= 1
    node = document.resolve(node)
    if budget[0] < 0 or isinstance(node, Unresolvable):
        raise _Unknown
    if isinstance(node, bool):
        return ()
    if not isinstance(node, dict):
        raise _Unknown
    if id(node) in ancestors:
        return ("cycle",)
    inner = ancestors | {id(node)}
    parts: list[Any] = [own(node, top)]
    for keyword in _LISTS:
        branches = node.get(keyword)
        if isinstance(branches, list):
            parts.append((keyword, tuple(_shape(document, x, own, inner, budget)
                                         for x in branches)))
    for keyword in _SINGLES:
        if keyword in node:
            parts.append((keyword, _shape(document, node[keyword], own, inner, budget)))
    dependent = node.get("dependentSchemas")
    if isinstance(dependent, dict):
        parts.append(("dependentSchemas", tuple(
            (name, _shape(document, sub, own, inner, budget))
            for name, sub in sorted(dependent.items()))))
    return tuple(parts)


def _same_shape(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], keyword: str) -> bool:
    shape = evaluation_shape(ctx.before, b, keyword)
    return shape is not None and shape == evaluation_shape(ctx.after, a, keyword)


def _unevaluated(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    # On one side only, the keyword is a conjunct added or dropped: what it would see on the
    # other side does not matter (adding narrows, dropping widens, by its own comparison).
    for keyword in ("unevaluatedProperties", "unevaluatedItems"):
        if keyword not in b and keyword not in a:
            continue
        where = child_path(path, keyword)
        if keyword in b and keyword in a and not _same_shape(ctx, b, a, keyword):
            ctx.emit(where, "unanalysable",
                     f"what {keyword} applies to changed (declared names, patterns, items or "
                     "in-place subschemas): cannot be analysed, fails closed")
            continue
        ctx.compare(b.get(keyword, True), a.get(keyword, True), where)


EVALUATION_HANDLERS: tuple[tuple[frozenset[str], Handler], ...] = (
    (frozenset({"unevaluatedProperties", "unevaluatedItems"}), _unevaluated),
)
