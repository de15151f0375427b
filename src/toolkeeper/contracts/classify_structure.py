"""Keyword handlers of the change classifier for objects and arrays (SPEC 1.4): properties,
required, additionalProperties, patternProperties, propertyNames, dependentRequired,
dependentSchemas, prefixItems, items and contains. Subschemas are compared by recursion through
``ctx.compare`` (these keywords are monotone: a narrower subschema is a narrower schema).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from toolkeeper.contracts.classify_keywords import DOC_KEYWORDS, Handler, show
from toolkeeper.contracts.classify_refs import Unresolvable, child_path

if TYPE_CHECKING:
    from toolkeeper.contracts.classify_walk import Ctx

__all__ = ["STRUCTURE_HANDLERS"]

_ABSENT: Any = object()
_ANNOTATION_ONLY = frozenset(DOC_KEYWORDS) | {"default", "$defs", "definitions", "$anchor"}


def _mapping(node: dict[str, Any], key: str) -> dict[str, Any]:
    value = node.get(key)
    return value if isinstance(value, dict) else {}


def _openness(ctx: Ctx, node: dict[str, Any]) -> str:
    """How a before object treats undeclared keys: ``open`` (anything), ``closed`` (nothing),
    or ``schema`` (its additionalProperties schema constrains them)."""
    resolved = ctx.resolve_before(node.get("additionalProperties", True))
    if resolved is False:
        return "closed"
    if resolved is True or (isinstance(resolved, dict) and not set(resolved) - _ANNOTATION_ONLY):
        return "open"
    return "schema"


def _governing(ctx: Ctx, node: dict[str, Any], key: str) -> tuple[str, Any]:
    """What governed a key in the before object that did not declare it: a single matching
    patternProperties schema, the additionalProperties schema, or nothing (open/closed)."""
    hits: list[Any] = []
    for pattern, sub in sorted(_mapping(node, "patternProperties").items()):
        try:
            if re.search(pattern, key):
                hits.append(sub)
        except re.error:
            return ("unknown", None)
    if len(hits) > 1:
        return ("unknown", None)
    if hits:
        return ("schema", hits[0])
    kind = _openness(ctx, node)
    return (kind, node.get("additionalProperties") if kind == "schema" else None)


def _properties(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bp, ap = _mapping(b, "properties"), _mapping(a, "properties")
    for name in sorted(set(bp) | set(ap)):
        where = child_path(path, "properties", name)
        if name in bp and name in ap:
            ctx.compare(bp[name], ap[name], where)
        elif name in bp:
            ctx.emit(where, "property.removed",
                     f"property {name!r} removed: arguments or results using it break")
        else:
            _property_added(ctx, b, ap[name], name, where)


def _property_added(ctx: Ctx, b: dict[str, Any], schema: Any, name: str, where: str) -> None:
    kind, governing = _governing(ctx, b, name)
    if kind == "schema":
        ctx.compare(governing, schema, where)
    elif kind == "closed":
        ctx.emit(where, "property.added_to_closed",
                 f"property {name!r} declared on an object that forbade undeclared properties")
    elif kind == "open":
        ctx.emit(where, "property.added", f"optional property {name!r} declared")
    else:
        ctx.emit(where, "unanalysable", f"property {name!r} declared where several or invalid "
                 "patternProperties matched before: cannot be analysed, fails closed")


def _required(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    br = [x for x in b.get("required", []) if isinstance(x, str)]
    ar = [x for x in a.get("required", []) if isinstance(x, str)]
    for index, name in enumerate(ar):
        if name not in br:
            ctx.emit(child_path(path, "required", index), "required.added",
                     f"property {name!r} is now required")
    for index, name in enumerate(br):
        if name not in ar:
            ctx.emit(child_path(path, "required", index), "required.dropped",
                     f"property {name!r} is no longer required")


def _additional(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    rb = ctx.resolve_before(b.get("additionalProperties", True))
    ra = ctx.resolve_after(a.get("additionalProperties", True))
    where = child_path(path, "additionalProperties")
    if rb is False and ra is False:
        return
    if ra is False and not isinstance(rb, Unresolvable):
        ctx.emit(where, "additional_properties.closed",
                 "additionalProperties became false: undeclared properties are rejected")
    elif rb is False and not isinstance(ra, Unresolvable):
        ctx.emit(where, "additional_properties.opened",
                 "additionalProperties false was opened: undeclared properties are allowed")
    else:
        ctx.compare(b.get("additionalProperties", True), a.get("additionalProperties", True),
                    where)


def _pattern_properties(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bp, ap = _mapping(b, "patternProperties"), _mapping(a, "patternProperties")
    for pattern in sorted(set(bp) | set(ap)):
        where = child_path(path, "patternProperties", pattern)
        if pattern in bp and pattern in ap:
            ctx.compare(bp[pattern], ap[pattern], where)
        elif pattern in bp:
            ctx.emit(where, "pattern_property.removed", f"patternProperties {pattern!r} removed")
        elif _openness(ctx, b) == "closed":
            ctx.emit(where, "pattern_property.added_to_closed",
                     f"patternProperties {pattern!r} added to an object that forbade undeclared "
                     "properties")
        else:
            ctx.emit(where, "pattern_property.added", f"patternProperties {pattern!r} added")


def _property_names(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    ctx.compare(b.get("propertyNames", True), a.get("propertyNames", True),
                child_path(path, "propertyNames"))


_DEPENDENT = (("dependentRequired", "dependent_required"), ("dependentSchemas", "dependent_schemas"))


def _dependent(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    # SPEC 1.4 row: dependentRequired/dependentSchemas added or changed is MAJOR (either way).
    for keyword, rule in _DEPENDENT:
        vb, va = b.get(keyword) or _ABSENT, a.get(keyword) or _ABSENT
        where = child_path(path, keyword)
        if vb is _ABSENT and va is _ABSENT:
            continue
        if vb is _ABSENT:
            ctx.emit(where, f"{rule}.added", f"{keyword} added: {show(va)}")
        elif va is _ABSENT:
            ctx.emit(where, f"{rule}.removed", f"{keyword} dropped")
        elif not ctx.same(vb, va):
            ctx.emit(where, f"{rule}.changed", f"{keyword} changed: {show(vb)} -> {show(va)}")


def _items(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bi, ai = b.get("items", True), a.get("items", True)
    if isinstance(bi, list) or isinstance(ai, list):  # draft-07 tuple form: not 2020-12
        if not ctx.same(bi, ai):
            ctx.emit(child_path(path, "items"), "unanalysable",
                     "items is an array (pre-2020-12 tuple form): cannot be analysed, fails closed")
        return
    bp, ap = b.get("prefixItems", []), a.get("prefixItems", [])
    bp, ap = (bp if isinstance(bp, list) else []), (ap if isinstance(ap, list) else [])
    # Position i is governed by prefixItems[i] when present, else by items.
    for index in range(max(len(bp), len(ap))):
        ctx.compare(bp[index] if index < len(bp) else bi, ap[index] if index < len(ap) else ai,
                    child_path(path, "prefixItems", index))
    ctx.compare(bi, ai, child_path(path, "items"))


def _contains(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bc, ac = b.get("contains", _ABSENT), a.get("contains", _ABSENT)
    where = child_path(path, "contains")
    if bc is _ABSENT and ac is _ABSENT:
        return
    if bc is _ABSENT:
        ctx.emit(where, "contains.added", "contains added: arrays must hold a matching item")
    elif ac is _ABSENT:
        ctx.emit(where, "contains.removed", "contains dropped")
    elif "maxContains" in b or "maxContains" in a:
        # With an upper count, a narrower contains loosens the array: not monotone.
        if not ctx.same(bc, ac):
            ctx.emit(where, "unanalysable",
                     "contains changed under maxContains: cannot be analysed, fails closed")
    else:
        ctx.compare(bc, ac, where)


STRUCTURE_HANDLERS: tuple[tuple[frozenset[str], Handler], ...] = (
    (frozenset({"properties"}), _properties),
    (frozenset({"required"}), _required),
    (frozenset({"additionalProperties"}), _additional),
    (frozenset({"patternProperties"}), _pattern_properties),
    (frozenset({"propertyNames"}), _property_names),
    (frozenset(keyword for keyword, _ in _DEPENDENT), _dependent),
    (frozenset({"prefixItems", "items"}), _items),
    (frozenset({"contains"}), _contains),
)
