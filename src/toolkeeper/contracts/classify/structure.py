"""Keyword handlers of the change classifier for objects and arrays (SPEC 1.4): required,
propertyNames, dependentRequired, dependentSchemas, prefixItems, items and contains (object
members live in ``members``). Subschemas are compared by recursion through
``ctx.compare`` (these keywords are monotone: a narrower subschema is a narrower schema).
"""

from __future__ import annotations

from typing import Any

from toolkeeper.contracts.classify.context import Ctx, Handler
from toolkeeper.contracts.classify.keywords import show
from toolkeeper.contracts.classify.refs import child_path

__all__ = ["STRUCTURE_HANDLERS"]

_ABSENT: Any = object()


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
        elif isinstance(vb, dict) and isinstance(va, dict) and not ctx.unchanged(vb, va):
            # Equal, but a format in them starts or stops asserting: each subschema applies in
            # place when its property is present (monotone), so compare them one by one.
            for name in sorted(vb):
                ctx.compare(vb[name], va[name], child_path(where, name), in_place=True)


def _items(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bi, ai = b.get("items", True), a.get("items", True)
    if isinstance(bi, list) or isinstance(ai, list):  # draft-07 tuple form: not 2020-12
        if not ctx.unchanged(bi, ai):
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
        if not ctx.unchanged(bc, ac):
            ctx.emit(where, "unanalysable", "contains changed under maxContains (or a format in "
                     "it started or stopped asserting): cannot be analysed, fails closed")
    else:
        ctx.compare(bc, ac, where)


STRUCTURE_HANDLERS: tuple[tuple[frozenset[str], Handler], ...] = (
    (frozenset({"required"}), _required),
    (frozenset({"propertyNames"}), _property_names),
    (frozenset(keyword for keyword, _ in _DEPENDENT), _dependent),
    (frozenset({"prefixItems", "items"}), _items),
    (frozenset({"contains"}), _contains),
)
