"""Keyword handlers of the change classifier for object members (SPEC 1.4): ``properties``,
``patternProperties`` and ``additionalProperties``.

These three keywords are one rule, read per member name: the value of a member named ``k`` must
satisfy ``properties[k]`` when ``k`` is declared, *and* every ``patternProperties`` schema whose
regex matches ``k``, and ``additionalProperties`` when neither applies. So a name's constraint is
a conjunction whose conjuncts come and go as entries are added or removed, and each edit is
judged per class of names:

* a declared name, or a property entry compared with whatever governed its name before;
* a pattern entry present on both sides: its schema changed, a monotone conjunct;
* an *added* pattern entry constrains every name its regex matches: the declared properties it
  matches (tested with the validator's own regex engine), the undeclared names it takes over
  from ``additionalProperties`` (anything on an open object, nothing on a closed one, its schema
  otherwise) and the names it shares with another pattern. Each is judged by asking the
  classifier itself, in a scratch context, whether the old constraint provably implies the new
  one (and, for outputs, the reverse); what cannot be proven is reported as a narrowing or a
  widening, i.e. fails closed in the direction that matters.

Regexes follow the validator (jsonschema-rs, ECMA 262): a pattern it cannot compile makes the
names it might match unanalysable.
"""

from __future__ import annotations

from typing import Any

from toolkeeper.contracts.changes import Bump
from toolkeeper.contracts.classify.context import Ctx, Handler
from toolkeeper.contracts.classify.patterns import openness, pattern_matches, patterns_disjoint
from toolkeeper.contracts.classify.refs import Unresolvable, child_path

__all__ = ["MEMBER_HANDLERS"]

# Rules about what a schema does beyond which values are valid: a probe ignores them.
_NOT_VALIDITY = (".default.added", ".default.changed", ".default.removed")


def _mapping(node: dict[str, Any], key: str) -> dict[str, Any]:
    value = node.get(key)
    return value if isinstance(value, dict) else {}


def _openness(ctx: Ctx, node: dict[str, Any]) -> str:
    return openness(ctx.resolve_before(node.get("additionalProperties", True)))


def _leftover(ctx: Ctx, node: dict[str, Any]) -> Any:
    """The schema a before object applies to names nothing else governs."""
    kind = _openness(ctx, node)
    return {"open": True, "closed": False}.get(kind, node.get("additionalProperties"))


def _matching(node: dict[str, Any], name: str) -> list[Any] | None:
    """The patternProperties schemas of a node whose regex matches ``name``; None when a regex
    cannot be evaluated."""
    found: list[Any] = []
    for pattern, sub in sorted(_mapping(node, "patternProperties").items()):
        hit = pattern_matches(pattern, name)
        if hit is None:
            return None
        if hit:
            found.append(sub)
    return found


def _governors(ctx: Ctx, node: dict[str, Any], name: str) -> list[Any] | None:
    """Every schema a before object applies to a member named ``name`` (it must satisfy all of
    them), or None when a regex cannot be evaluated."""
    matching = _matching(node, name)
    if matching is None:
        return None
    props = _mapping(node, "properties")
    found = ([props[name]] if name in props else []) + matching
    return found or [_leftover(ctx, node)]


def _holds(ctx: Ctx, direction: str, b: Any, a: Any, path: str) -> bool:
    """Whether the classifier, comparing ``b`` (before) with ``a`` (after) in ``direction`` in a
    scratch context, finds nothing breaking the values accepted (defaults aside): input means
    every value ``b`` accepts ``a`` accepts; output means every value ``a`` accepts ``b``
    accepts."""
    probe = ctx.scratch(flip=ctx.direction != direction)
    probe.compare(b, a, path)
    return not any(change.bump is Bump.MAJOR and not change.rule.endswith(_NOT_VALIDITY)
                   for change in probe.changes)


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
    # The name was governed before by the patterns matching it, else by additionalProperties.
    # Patterns present on both sides are compared on their own; an added pattern that matches
    # the name is judged by _pattern_added.
    matching = _matching(b, name)
    kind = _openness(ctx, b)
    if matching is None or len(matching) > 1:
        ctx.emit(where, "unanalysable", f"property {name!r} declared where several or invalid "
                 "patternProperties matched before: cannot be analysed, fails closed")
    elif matching:
        ctx.compare(matching[0], schema, where)
    elif kind == "schema":
        ctx.compare(b.get("additionalProperties"), schema, where)
    elif kind == "closed":
        ctx.emit(where, "property.added_to_closed",
                 f"property {name!r} declared on an object that forbade undeclared properties")
    elif _unevaluated_kind(ctx, b) == "open":
        _property_added_to_open(ctx, b, schema, name, where, added=True)
    else:
        # unevaluatedProperties governed the name, unless another subschema here evaluated it.
        if _unevaluated_kind(ctx, b) == "closed":
            ctx.emit(where, "property.added_to_closed", f"property {name!r} declared on an object "
                     "whose unevaluatedProperties forbade it")
        else:
            ctx.compare(b["unevaluatedProperties"], schema, where)
        _property_added_to_open(ctx, b, schema, name, where, added=False)


def _unevaluated_kind(ctx: Ctx, node: dict[str, Any]) -> str:
    """How a before object's unevaluatedProperties treats names nothing else evaluated."""
    return openness(ctx.resolve_before(node.get("unevaluatedProperties", True)))


def _property_added_to_open(ctx: Ctx, b: dict[str, Any], schema: Any, name: str, where: str,
                            *, added: bool) -> None:
    # SPEC 1.4: MINOR, callers do not send undeclared names. Unless another subschema at the
    # same location declares, matches or admits it, or any names it (required, dependent*,
    # propertyNames): then callers send it, and the new schema must accept its values.
    location = ctx.location()
    declared = location.declares(name, excluding=b)
    if declared is None:
        ctx.emit(where, "unanalysable", f"property {name!r} declared where the subschemas at the "
                 "same place cannot all be read: fails closed")
    elif declared and not any(_holds(ctx, "input", g, schema, where)
                              for g in [True, *location.conjunctive(name)]):
        ctx.emit(where, "property.redeclared",
                 f"property {name!r} declared on an open subschema while the schemas at the same "
                 "place already declare or name it: its schema does not provably accept every "
                 "value sent")
    elif added:
        ctx.emit(where, "property.added", f"optional property {name!r} declared")


def _additional(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], path: str) -> None:
    # Governs the names that no property and no pattern (before or after) covers; names an added
    # pattern takes over are judged by _pattern_added, removed patterns are breaking anyway.
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
        else:
            _pattern_added(ctx, b, a, pattern, where)


def _pattern_added(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], pattern: str,
                   where: str) -> None:
    schema = _mapping(a, "patternProperties")[pattern]
    if pattern_matches(pattern, "") is None:
        ctx.emit(where, "unanalysable", f"patternProperties {pattern!r} is not a regex the "
                 "validator compiles: cannot be analysed, fails closed")
        return
    kind = _openness(ctx, b)
    if kind == "closed":
        ctx.emit(where, "pattern_property.added_to_closed",
                 f"patternProperties {pattern!r} added to an object that forbade undeclared "
                 "properties: names it matches are now accepted")
    else:
        ctx.emit(where, "pattern_property.added", f"patternProperties {pattern!r} added")
    _pattern_on_declared(ctx, b, a, pattern, schema, where)
    _pattern_on_undeclared(ctx, b, a, pattern, schema, where)


def _pattern_on_declared(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], pattern: str,
                         schema: Any, where: str) -> None:
    """An added pattern is one more conjunct on each declared property it matches: safe for
    inputs only if something that constrained the name before implies it."""
    for name in sorted(_mapping(a, "properties")):
        if not pattern_matches(pattern, name):
            continue
        governing = _governors(ctx, b, name)
        if governing is None:
            ctx.emit(where, "unanalysable", f"patternProperties {pattern!r} matches property {name!r}, "
                     "whose old patterns cannot be evaluated: fails closed")
            return
        if not any(_holds(ctx, "input", g, schema, where) for g in governing):
            ctx.emit(where, "pattern_property.narrows_property",
                     f"patternProperties {pattern!r} now also constrains property {name!r} and "
                     "does not provably accept every value it accepted")


def _pattern_on_undeclared(ctx: Ctx, b: dict[str, Any], a: dict[str, Any], pattern: str,
                           schema: Any, where: str) -> None:
    """Undeclared names the added pattern matches: those no old pattern matched were governed by
    additionalProperties (assumed to exist: regexes are not compared for inclusion); those an
    old pattern still present also matches (unless provably disjoint) were governed by it."""
    leftover = _leftover(ctx, b)
    if not _holds(ctx, "input", leftover, schema, where):
        what = "any value" if leftover is True else "every value additionalProperties accepted"
        ctx.emit(where, "pattern_property.narrows_undeclared",
                 f"patternProperties {pattern!r} takes over undeclared names it matches and does "
                 f"not provably accept {what}")
    if _openness(ctx, b) == "schema" and not _holds(ctx, "output", leftover, schema, where):
        ctx.emit(where, "pattern_property.widens_undeclared",
                 f"patternProperties {pattern!r} takes undeclared names it matches away from "
                 "additionalProperties and accepts values it refused")
    after = _mapping(a, "patternProperties")
    for other, sub in sorted(_mapping(b, "patternProperties").items()):
        if other not in after or patterns_disjoint(pattern, other):
            continue
        if not _holds(ctx, "input", sub, schema, where):
            ctx.emit(where, "pattern_property.narrows_undeclared",
                     f"patternProperties {pattern!r} may match names {other!r} matched and does "
                     "not provably accept every value it accepted")


MEMBER_HANDLERS: tuple[tuple[frozenset[str], Handler], ...] = (
    (frozenset({"properties"}), _properties),
    (frozenset({"additionalProperties"}), _additional),
    (frozenset({"patternProperties"}), _pattern_properties),
)
