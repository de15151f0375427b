"""Keyword handlers of the change classifier for combinators (SPEC 1.4): ``anyOf``, ``oneOf``,
``allOf``, ``not`` and ``if``/``then``/``else``.

Branches are matched identical-first, then by signature (declared types plus discriminating
const/enum properties; the same position first), then by position among branches whose types
overlap; the rest are added or removed. Any pairing is sound (each pair is compared, and what
is left over is an added or removed branch); a good one avoids needless MAJOR verdicts.
``oneOf`` is only as loose as ``anyOf`` when its branches are disjoint, so any non-breaking
change inside a ``oneOf`` whose branches are not provably disjoint fails closed.
``not`` inverts direction: its subschema is compared in the opposite direction and summarised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolkeeper.contracts.changes import Bump
from toolkeeper.contracts.classify.context import Ctx, Handler
from toolkeeper.contracts.classify.keywords import allowed_values, types_of
from toolkeeper.contracts.classify.refs import child_path
from toolkeeper.contracts.classify.rules import RULES

__all__ = ["COMBINATOR_HANDLERS"]

_ABSENT: Any = object()


def _overlap(x: frozenset[str] | None, y: frozenset[str] | None) -> bool:
    if x is None or y is None:
        return True
    numeric = {"number", "integer"}
    return bool(x & y) or bool(x & numeric and "number" in y) or bool(y & numeric and "number" in x)


def _discriminators(node: dict[str, Any], resolve: Callable[[Any], Any]
                    ) -> dict[str, set[bytes]]:
    """Required properties whose values are pinned to a finite set (const/enum)."""
    props = node.get("properties")
    props = props if isinstance(props, dict) else {}
    out: dict[str, set[bytes]] = {}
    for name in node.get("required", []):
        sub = resolve(props.get(name)) if isinstance(name, str) and name in props else None
        values = allowed_values(sub) if isinstance(sub, dict) else None
        if values is not None:
            out[name] = values
    return out


def _signature(node: Any, resolve: Callable[[Any], Any]) -> Any:
    if not isinstance(node, dict):
        return None
    pins = _discriminators(node, resolve)
    return (types_of(node), tuple(sorted((k, tuple(sorted(v))) for k, v in pins.items())))


def _disjoint(x: Any, y: Any, resolve: Callable[[Any], Any]) -> bool:
    """Cheap proof that no instance satisfies both: disjoint types, disjoint allowed values, or a
    required discriminator property with disjoint allowed values."""
    if x is False or y is False:
        return True
    if not isinstance(x, dict) or not isinstance(y, dict):
        return False
    if not _overlap(types_of(x), types_of(y)):
        return True
    vx, vy = allowed_values(x), allowed_values(y)
    if vx is not None and vy is not None and not vx & vy:
        return True
    px, py = _discriminators(x, resolve), _discriminators(y, resolve)
    return any(not px[name] & py[name] for name in set(px) & set(py))


def _pairwise_disjoint(branches: list[Any], resolve: Callable[[Any], Any]) -> bool:
    nodes = [resolve(branch) for branch in branches]
    return all(_disjoint(nodes[i], nodes[j], resolve)
               for i in range(len(nodes)) for j in range(i + 1, len(nodes)))


def _match(ctx: Ctx, bl: list[Any], al: list[Any]
           ) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pair before/after branches: (pairs, unmatched before, unmatched after)."""
    left, right = list(range(len(bl))), list(range(len(al)))
    rb = [ctx.resolve_before(x) for x in bl]
    ra = [ctx.resolve_after(x) for x in al]
    sb = [_signature(x, ctx.resolve_before) for x in rb]
    sa = [_signature(x, ctx.resolve_after) for x in ra]
    pairs: list[tuple[int, int]] = []
    tests: tuple[Callable[[int, int], bool], ...] = (
        lambda i, j: ctx.same(bl[i], al[j]),
        lambda i, j: i == j and sb[i] is not None and sb[i] == sa[j],  # in place, same signature
        lambda i, j: sb[i] is not None and sb[i] == sa[j],
        lambda i, j: isinstance(rb[i], dict) and isinstance(ra[j], dict)
        and _overlap(types_of(rb[i]), types_of(ra[j])),
    )
    for test in tests:
        for i in list(left):
            for j in right:
                if test(i, j):
                    pairs.append((i, j))
                    left.remove(i)
                    right.remove(j)
                    break
    return sorted(pairs), left, right


# keyword -> (rule for an added branch, rule for a removed branch)
_BRANCH_RULES = {
    "anyOf": ("branch.added", "branch.removed"),
    "oneOf": ("branch.added", "branch.removed"),
    "allOf": ("conjunct.added", "conjunct.removed"),
}


def _presence(ctx: Ctx, keyword: str, vb: Any, va: Any, path: str) -> bool:
    """Report a combinator added or dropped; True when both sides have it (compare inside)."""
    where = child_path(path, keyword)
    if vb is _ABSENT and va is not _ABSENT:
        ctx.emit(where, "combinator.added", f"{keyword} added: it further constrains the value")
    elif va is _ABSENT and vb is not _ABSENT:
        ctx.emit(where, "combinator.removed", f"{keyword} dropped")
    return vb is not _ABSENT and va is not _ABSENT


def _branches(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    for keyword, (added_rule, removed_rule) in _BRANCH_RULES.items():
        bl, al = b.get(keyword, _ABSENT), a.get(keyword, _ABSENT)
        if not _presence(ctx, keyword, bl, al, path):
            continue
        bl, al = (bl if isinstance(bl, list) else []), (al if isinstance(al, list) else [])
        # A oneOf must see every change inside it, even in definitions compared elsewhere.
        inner = ctx.scratch() if keyword == "oneOf" else ctx
        pairs, removed, added = _match(inner, bl, al)
        for i, j in pairs:
            inner.compare(bl[i], al[j], child_path(path, keyword, j), in_place=True)
        for i in removed:
            inner.emit(child_path(path, keyword, i), removed_rule, f"{keyword} branch {i} removed")
        for j in added:
            inner.emit(child_path(path, keyword, j), added_rule, f"{keyword} branch {j} added")
        if inner is not ctx:
            ctx.changes.extend(inner.changes)
            ctx.assumed = ctx.assumed or inner.assumed
            _exclusivity(ctx, bl, al, inner.changes, child_path(path, keyword),
                         unseen=inner.assumed)


def _exclusivity(ctx: Ctx, bl: list[Any], al: list[Any], inner: list[Any], where: str, *,
                 unseen: bool) -> None:
    """A non-breaking change inside a oneOf is only safe when exactly-one equals at-least-one:
    the branches a valid value must now match (input: after; output: before) are disjoint.
    ``unseen``: the branches reach a pair an outer comparison is still comparing (a recursive
    schema), whose changes are not in ``inner``: assume there is one."""
    if any(c.bump is Bump.MAJOR for c in inner):
        return
    if not unseen and all(RULES[c.rule].review for c in inner):
        return
    branches, resolve = (al, ctx.resolve_after) if ctx.direction == "input" \
        else (bl, ctx.resolve_before)
    if not _pairwise_disjoint(branches, resolve):
        ctx.emit(where, "branch.exclusivity_unproven",
                 "oneOf changed and its branches are not provably disjoint: a value may now "
                 "match two branches; fails closed")


def _not(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    vb, va = b.get("not", _ABSENT), a.get("not", _ABSENT)
    if not _presence(ctx, "not", vb, va, path):
        return
    where = child_path(path, "not")
    scratch = ctx.scratch(flip=True)
    scratch.compare(vb, va, where, in_place=True)
    ctx.assumed = ctx.assumed or scratch.assumed
    for change in scratch.changes:
        if RULES[change.rule].review:
            ctx.emit(change.path, change.rule.split(".", 1)[1], change.reason)
    rest = [c for c in scratch.changes if not RULES[c.rule].review]
    if not rest:
        return
    unsafe = any(c.bump is Bump.MAJOR for c in rest)
    narrower = unsafe == (ctx.direction == "input")
    inner = ", ".join(sorted({c.rule.split(".", 1)[1] for c in rest}))
    ctx.emit(where, "not.narrowed" if narrower else "not.widened",
             f"the subschema under not changed ({inner}); not inverts it, so the schema is "
             f"{'narrower' if narrower else 'wider'}" + (" or unknown" if unsafe else ""))


def _conditional(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    vb, va = b.get("if", _ABSENT), a.get("if", _ABSENT)
    if vb is _ABSENT and va is _ABSENT:
        return  # then/else without if are ignored by validators
    if not _presence(ctx, "if", vb, va, path):
        return
    if not ctx.unchanged(vb, va):
        ctx.emit(child_path(path, "if"), "unanalysable",
                 "the if condition changed (or a format in it started or stopped asserting): the "
                 "branches it selects cannot be related, fails closed")
        return
    for keyword in ("then", "else"):
        tb, ta = b.get(keyword, _ABSENT), a.get(keyword, _ABSENT)
        if _presence(ctx, keyword, tb, ta, path):
            ctx.compare(tb, ta, child_path(path, keyword), in_place=True)


COMBINATOR_HANDLERS: tuple[tuple[frozenset[str], Handler], ...] = (
    (frozenset(_BRANCH_RULES), _branches),
    (frozenset({"not"}), _not),
    (frozenset({"if", "then", "else"}), _conditional),
)
