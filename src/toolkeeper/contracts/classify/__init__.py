"""The change classifier (SPEC 1.4): compare two contracts or two schemas, name every change.

:func:`classify` compares whole contracts: the input schema (contravariant: breaking when an
argument set valid before is invalid after), the output schema (covariant: breaking when a result
valid after was not promised before) and the metadata (scopes, classification, tenants, side
effect, docs). :func:`classify_schemas` compares two bare schemas. Both are pure and
deterministic: the verdict's bump is the largest bump found (PATCH when none) and its changes
are every change found, sorted by (path, rule). Rule ids and bumps come from the table in
:mod:`~toolkeeper.contracts.classify.rules`. The package's one entry to the schema comparison is
:func:`~toolkeeper.contracts.classify.walk.compare_documents`: the walk holds the table of
keyword handlers, in ``keywords`` (one value), ``members`` (properties, patterns,
additionalProperties), ``structure`` (other object and array keywords), ``evaluation``
(unevaluated*) and ``combinators``; each takes the comparison's
:class:`~toolkeeper.contracts.classify.context.Ctx` (``context``, below the handlers) and none
imports the walk. ``location`` says what the before side declares at an instance location
across its in-place subschemas, ``patterns`` how member names meet regexes, and ``refs`` how
references resolve.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from toolkeeper.contracts.changes import Bump, Change, Verdict
from toolkeeper.contracts.classify.rules import RULES
from toolkeeper.contracts.classify.walk import compare_documents
from toolkeeper.contracts.spec import SIDE_EFFECT_RANK, ToolSpec, classification_rank

__all__ = ["classify", "classify_schemas", "verdict_of"]


def verdict_of(changes: Iterable[Change]) -> Verdict:
    """The verdict for a set of changes: sorted, deduplicated, bump = the largest (or PATCH)."""
    ordered = tuple(sorted(set(changes)))
    bump = max((c.bump for c in ordered), key=lambda b: b.rank, default=Bump.PATCH)
    return Verdict(bump, ordered)


def classify_schemas(before: dict[str, Any], after: dict[str, Any], *, output: bool = False,
                     assert_formats: bool = False) -> Verdict:
    """Classify the change between two bare schemas; ``output=True`` is the covariant direction.
    Paths start at ``$``."""
    direction = "output" if output else "input"
    return verdict_of(compare_documents(before, after, direction=direction, path="$",
                                        assert_formats=(assert_formats, assert_formats)))


def _change(path: str, rule_id: str, reason: str) -> Change:
    return Change(path, rule_id, RULES[rule_id].bump, reason)


def _schemas(before: ToolSpec, after: ToolSpec) -> list[Change]:
    asserts = (before.assert_formats, after.assert_formats)
    out = compare_documents(before.input_schema, after.input_schema, direction="input",
                            path="$.inputSchema", assert_formats=asserts)
    bo, ao = before.output_schema, after.output_schema
    if bo is not None and ao is not None:
        out += compare_documents(bo, ao, direction="output", path="$.outputSchema",
                                 assert_formats=asserts)
    elif ao is not None:
        out.append(_change("$.outputSchema", "contract.output_schema.added",
                           "an output schema now promises the result shape"))
    elif bo is not None:
        out.append(_change("$.outputSchema", "contract.output_schema.removed",
                           "the output schema was dropped: consumers lose the promised shape"))
    return out


def _name(before: ToolSpec, after: ToolSpec) -> list[Change]:
    if before.name == after.name:
        return []
    return [_change("$.name", "contract.name.changed",
                    f"tool name {before.name!r} -> {after.name!r}: callers by name break")]


def _scopes(before: ToolSpec, after: ToolSpec) -> list[Change]:
    added = [_change("$.requiredScopes", "contract.scope.added",
                     f"scope {s!r} now required: principals without it lose the tool")
             for s in sorted(after.required_scopes - before.required_scopes)]
    return added + [_change("$.requiredScopes", "contract.scope.removed",
                            f"scope {s!r} no longer required")
                    for s in sorted(before.required_scopes - after.required_scopes)]


def _classification(before: ToolSpec, after: ToolSpec) -> list[Change]:
    rb = classification_rank(before.data_classification)
    ra = classification_rank(after.data_classification)
    if rb == ra:
        return []
    span = f"{before.data_classification.value} -> {after.data_classification.value}"
    if ra > rb:
        return [_change("$.dataClassification", "contract.classification.raised",
                        f"classification raised {span}: principals below it lose the tool")]
    return [_change("$.dataClassification", "contract.classification.lowered",
                    f"classification lowered {span}")]


def _tenants(before: ToolSpec, after: ToolSpec) -> list[Change]:
    tb, ta = before.tenants, after.tenants
    if tb == ta:
        return []
    if not ta:  # empty means every tenant
        return [_change("$.tenants", "contract.tenant.added",
                        f"now every tenant (was {', '.join(sorted(tb))})")]
    if not tb:
        return [_change("$.tenants", "contract.tenant.removed",
                        f"was every tenant, now only {', '.join(sorted(ta))}")]
    return [_change("$.tenants", "contract.tenant.removed", f"tenant {t!r} lost access")
            for t in sorted(tb - ta)] + [
        _change("$.tenants", "contract.tenant.added", f"tenant {t!r} gained access")
        for t in sorted(ta - tb)]


def _side_effect(before: ToolSpec, after: ToolSpec) -> list[Change]:
    rb, ra = SIDE_EFFECT_RANK[before.side_effect], SIDE_EFFECT_RANK[after.side_effect]
    span = f"{before.side_effect.value} -> {after.side_effect.value}"
    if ra > rb:
        return [_change("$.sideEffect", "contract.side_effect.escalated",
                        f"side effect escalated {span}")]
    if ra < rb:
        return [_change("$.sideEffect", "contract.side_effect.deescalated",
                        f"side effect de-escalated {span}")]
    return []


def _docs(before: ToolSpec, after: ToolSpec) -> list[Change]:
    out = []
    for key, vb, va in (("title", before.title, after.title),
                        ("description", before.description, after.description)):
        if vb != va:
            out.append(_change(f"$.{key}", "contract.doc.changed",
                               f"{key} changed; descriptions steer models: flagged for review"))
    if before.assert_formats != after.assert_formats:
        out.append(_change("$.assertFormats", "contract.assert_formats.changed",
                           f"format assertion {'on' if after.assert_formats else 'off'}: "
                           "each affected format is reported on its own"))
    return out


#: The contract-level checks, one per concern (each returns its changes).
_CHECKS: tuple[Callable[[ToolSpec, ToolSpec], list[Change]], ...] = (
    _schemas, _name, _scopes, _classification, _tenants, _side_effect, _docs,
)


def classify(before: ToolSpec, after: ToolSpec) -> Verdict:
    """Classify the change between two contracts (input contravariant, output covariant,
    metadata per SPEC 1.4). Paths are JSON paths into the contract file form."""
    return verdict_of(change for check in _CHECKS for change in check(before, after))
