"""Keyword handlers of the change classifier for assertions on one value (SPEC 1.4): type,
enum/const, numeric and count bounds, multipleOf, uniqueItems, pattern, format, default, docs.

Each handler takes ``(ctx, before, after, path)`` for one resolved schema pair and emits changes
by rule suffix; :data:`VALUE_HANDLERS` lists them with the keywords they own. Direction
(input/output) is the context's business: handlers only say *what* changed.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.classify.context import Ctx, Handler
from toolkeeper.contracts.classify.refs import DOC_KEYWORDS, child_path, value_key

__all__ = ["VALUE_HANDLERS", "allowed_values", "show", "types_of"]

_ABSENT: Any = object()


def show(value: Any, limit: int = 60) -> str:
    """A short JSON rendering of a value for a reason."""
    text = canonical_json(value).decode("utf-8")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def types_of(node: dict[str, Any]) -> frozenset[str] | None:
    """The declared type set, or None when unconstrained."""
    declared = node.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(t for t in declared if isinstance(t, str))
    return None


def _covered(kind: str, types: frozenset[str]) -> bool:
    return kind in types or (kind == "integer" and "number" in types)


def _type(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bt, at = types_of(b), types_of(a)
    if bt == at:
        return
    where = child_path(path, "type")
    span = f"{show(b.get('type', 'any'))} -> {show(a.get('type', 'any'))}"
    if at is not None and (bt is None or any(not _covered(t, at) for t in bt)):
        ctx.emit(where, "type.narrowed", f"type narrowed: {span}")
    if bt is not None and (at is None or any(not _covered(t, bt) for t in at)):
        ctx.emit(where, "type.widened", f"type widened: {span}")


def allowed_values(node: dict[str, Any]) -> set[bytes] | None:
    """The finite set of allowed values (enum intersected with const), or None."""
    out: set[bytes] | None = None
    if isinstance(node.get("enum"), list):
        out = {value_key(v) for v in node["enum"]}
    if "const" in node:
        const = {value_key(node["const"])}
        out = const if out is None else out & const
    return out


def _values(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    vb, va = allowed_values(b), allowed_values(a)
    if vb == va:
        return
    b_const, a_const = "const" in b, "const" in a
    key = "const" if a_const or (b_const and va is None) else "enum"
    where = child_path(path, key)
    if vb is None:
        rule = "const.added" if a_const else "enum.introduced"
        ctx.emit(where, rule, f"{key} now restricts the value to {show(a.get(key))}")
        return
    if va is None:
        rule = "const.removed" if b_const else "enum.removed"
        ctx.emit(where, rule, f"{key} {show(b.get(key))} dropped: any value of the type is allowed")
        return
    if b_const and a_const:
        ctx.emit(where, "const.changed", f"const changed: {show(b['const'])} -> {show(a['const'])}")
        return
    dropped = [v for v in _listed(b) if value_key(v) in vb - va]
    added = [v for v in _listed(a) if value_key(v) in va - vb]
    if dropped:
        rule = "const.added" if a_const else "enum.narrowed"
        ctx.emit(where, rule, f"value(s) no longer allowed: {show(dropped)}")
    if added:
        rule = "const.removed" if b_const else "enum.widened"
        ctx.emit(where, rule, f"value(s) newly allowed: {show(added)}")


def _listed(node: dict[str, Any]) -> list[Any]:
    """The values an enum/const node names, in document order, without duplicates."""
    values = list(node["enum"]) if isinstance(node.get("enum"), list) else []
    if "const" in node:
        values.append(node["const"])
    unique: dict[bytes, Any] = {}
    for value in values:
        unique.setdefault(value_key(value), value)
    return list(unique.values())


def _number(value: Any) -> Fraction | None:
    """Exact value of a JSON number (a float by its shortest decimal spelling), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(repr(value))
    return None


# (keyword, exclusive?) per side of the numeric range; a key orders bounds by tightness.
def _numeric_bound(node: dict[str, Any], lower: bool) -> tuple[tuple[Fraction, int], str] | None:
    names = ("minimum", "exclusiveMinimum") if lower else ("maximum", "exclusiveMaximum")
    best: tuple[tuple[Fraction, int], str] | None = None
    for exclusive, name in enumerate(names):
        value = _number(node.get(name))
        if value is None:
            continue
        # Lower: bigger is tighter, exclusive tighter at equal value. Upper: negate.
        key = (value, exclusive) if lower else (-value, exclusive)
        if best is None or key > best[0]:
            best = (key, name)
    return best


def _numeric_bounds(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    for lower in (True, False):
        bb, ab = _numeric_bound(b, lower), _numeric_bound(a, lower)
        if bb == ab or (bb and ab and bb[0] == ab[0]):
            continue
        side = "lower" if lower else "upper"
        if bb is None or (ab is not None and ab[0] > bb[0]):
            assert ab is not None
            rule = "bound.lower_raised" if lower else "bound.upper_lowered"
            ctx.emit(child_path(path, ab[1]), rule,
                     f"{side} bound tightened: {_bound_text(b, bb)} -> {_bound_text(a, ab)}")
        else:
            assert bb is not None
            where = child_path(path, ab[1] if ab is not None else bb[1])
            ctx.emit(where, "bound.relaxed",
                     f"{side} bound relaxed: {_bound_text(b, bb)} -> {_bound_text(a, ab)}")


def _bound_text(node: dict[str, Any], bound: tuple[Any, str] | None) -> str:
    return "none" if bound is None else f"{bound[1]} {show(node[bound[1]])}"


# Count bounds: (keyword, is lower, lower value when absent). An absent lower count is its
# identity (0, or 1 for minContains per 2020-12: adding the identity changes nothing); an absent
# upper bound is +infinity, so adding any upper bound is a tightening.
_COUNT_BOUNDS: tuple[tuple[str, bool, int], ...] = (
    ("minLength", True, 0), ("minItems", True, 0), ("minProperties", True, 0),
    ("minContains", True, 1), ("maxLength", False, 0), ("maxItems", False, 0),
    ("maxProperties", False, 0), ("maxContains", False, 0),
)


def _count_bounds(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    for name, lower, absent in _COUNT_BOUNDS:
        bv, av = _number(b.get(name)), _number(a.get(name))
        if bv == av:
            continue
        where = child_path(path, name)
        if lower:
            bl, al = (bv if bv is not None else absent), (av if av is not None else absent)
            if al == bl:
                continue
            tighter = al > bl
        else:
            tighter = av is not None and (bv is None or av < bv)
        rule = ("bound.lower_raised" if lower else "bound.upper_lowered") if tighter \
            else "bound.relaxed"
        ctx.emit(where, rule, f"{name} {_or_none(b, name)} -> {_or_none(a, name)}")


def _or_none(node: dict[str, Any], name: str) -> str:
    return show(node[name]) if name in node else "none"


def _multiple_of(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bv, av = _number(b.get("multipleOf")), _number(a.get("multipleOf"))
    if bv == av:
        return
    where = child_path(path, "multipleOf")
    span = f"multipleOf {_or_none(b, 'multipleOf')} -> {_or_none(a, 'multipleOf')}"
    if bv is None:
        ctx.emit(where, "multiple_of.added", f"{span}: values must now be multiples")
    elif av is None:
        ctx.emit(where, "multiple_of.removed", f"{span}: dropped")
    elif av and (bv / av).denominator == 1:
        ctx.emit(where, "multiple_of.divisor", f"{span}: every old multiple is still one")
    elif bv and (av / bv).denominator == 1:
        ctx.emit(where, "multiple_of.multiple", f"{span}: some old multiples are no longer")
    else:
        ctx.emit(where, "multiple_of.changed", f"{span}: not a divisor of the old value")


def _unique_items(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bu, au = b.get("uniqueItems") is True, a.get("uniqueItems") is True
    if bu != au:
        rule = "unique_items.added" if au else "unique_items.removed"
        ctx.emit(child_path(path, "uniqueItems"), rule, f"uniqueItems {bu} -> {au}".lower())


def _pattern(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    bp, ap = b.get("pattern", _ABSENT), a.get("pattern", _ABSENT)
    if bp == ap:
        return
    rule = "pattern.added" if bp is _ABSENT else "pattern.removed" if ap is _ABSENT \
        else "pattern.changed"
    ctx.emit(child_path(path, "pattern"), rule,
             f"pattern {_or_none(b, 'pattern')} -> {_or_none(a, 'pattern')}")


def _format(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    assert_b, assert_a = ctx.assert_formats
    bf, af = b.get("format", _ABSENT), a.get("format", _ABSENT)
    # A format only constrains when asserted; otherwise it is an annotation.
    eb = bf if assert_b else _ABSENT
    ea = af if assert_a else _ABSENT
    where = child_path(path, "format")
    span = f"format {_or_none(b, 'format')} -> {_or_none(a, 'format')}"
    if eb != ea:
        rule = "format.added" if eb is _ABSENT else "format.removed" if ea is _ABSENT \
            else "format.changed"
        ctx.emit(where, rule, f"{span} (format assertion {_ON[assert_b]} -> {_ON[assert_a]})")
    elif bf != af:
        ctx.emit(where, "format.annotation",
                 f"{span}: formats are not asserted, annotation only; flagged for review")


_ON = {True: "on", False: "off"}


def _default(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    has_b, has_a = "default" in b, "default" in a
    if has_b and has_a and value_key(b["default"]) == value_key(a["default"]):
        return
    if not has_b and not has_a:
        return
    where = child_path(path, "default")
    if not has_b:
        ctx.emit(where, "default.added", f"default {show(a['default'])} declared")
    elif not has_a:
        ctx.emit(where, "default.removed",
                 f"default {show(b['default'])} dropped: callers that omit the field get "
                 "different behaviour")
    else:
        ctx.emit(where, "default.changed",
                 f"default {show(b['default'])} -> {show(a['default'])}: callers that omit the "
                 "field get different behaviour")


def _docs(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    for name in DOC_KEYWORDS:
        vb, va = b.get(name, _ABSENT), a.get(name, _ABSENT)
        if vb is _ABSENT and va is _ABSENT:
            continue
        if vb is not _ABSENT and va is not _ABSENT and value_key(vb) == value_key(va):
            continue
        ctx.emit(child_path(path, name), "doc.changed",
                 f"{name} changed; descriptions steer models: flagged for review")


_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _dialect(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    """``$schema`` absent means 2020-12 (what contracts are validated as); another dialect
    changes what every keyword means: fail closed. ``$id`` only names the resource."""
    bd = str(b.get("$schema", _DIALECT)).rstrip("#")
    ad = str(a.get("$schema", _DIALECT)).rstrip("#")
    if bd != ad:
        ctx.emit(child_path(path, "$schema"), "unanalysable",
                 f"dialect {show(bd)} -> {show(ad)}: cannot be analysed, fails closed")


_NUMERIC = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
            *(name for name, _, _ in _COUNT_BOUNDS))


def _malformed_numbers(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    """A numeric keyword holding a non-number (possible in a bare schema) cannot be reasoned
    about: fail closed when it changed."""
    for name in _NUMERIC:
        vb, va = b.get(name, _ABSENT), a.get(name, _ABSENT)
        odd = any(v is not _ABSENT and _number(v) is None for v in (vb, va))
        if odd and value_key(vb if vb is not _ABSENT else None) != value_key(
                va if va is not _ABSENT else None):
            ctx.emit(child_path(path, name), "unanalysable",
                     f"{name} is not a number; cannot be analysed, fails closed")


VALUE_HANDLERS: tuple[tuple[frozenset[str], Handler], ...] = (
    (frozenset(), _malformed_numbers),
    (frozenset({"$schema", "$id"}), _dialect),
    (frozenset({"type"}), _type),
    (frozenset({"enum", "const"}), _values),
    (frozenset({"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}), _numeric_bounds),
    (frozenset(name for name, _, _ in _COUNT_BOUNDS), _count_bounds),
    (frozenset({"multipleOf"}), _multiple_of),
    (frozenset({"uniqueItems"}), _unique_items),
    (frozenset({"pattern"}), _pattern),
    (frozenset({"format"}), _format),
    (frozenset({"default"}), _default),
    (frozenset(DOC_KEYWORDS), _docs),
)
