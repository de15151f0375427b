"""The change classifier's rule table (SPEC 1.4): the single source of truth for rule ids and bumps.

Schema rules are written once with the bump they need in each direction and expanded into
``input.*`` and ``output.*`` ids. Input schemas are contravariant (a change that rejects an
argument set that was valid before breaks callers); output schemas are covariant (a change that
allows a result that was not promised before breaks consumers), so most rows flip.
Contract metadata rules are ``contract.*``. Adding behaviour means adding a row here, code that
emits it, and a fixture that exercises it (a test checks every row is exercised).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from toolkeeper.contracts.changes import Bump

__all__ = ["DIRECTIONS", "RULES", "Rule"]

_MAJOR, _MINOR, _PATCH = Bump.MAJOR, Bump.MINOR, Bump.PATCH

#: The two schema directions; each is the prefix of its rule ids.
DIRECTIONS = ("input", "output")


@dataclass(frozen=True, slots=True)
class Rule:
    """One row: stable dotted id, the bump it requires, whether a person should review it even
    though it is PATCH, and what it means."""

    id: str
    bump: Bump
    review: bool
    description: str


# (suffix, input bump, output bump, review, description)
_SCHEMA_ROWS: tuple[tuple[str, Bump, Bump, bool, str], ...] = (
    ("type.narrowed", _MAJOR, _MINOR, False,
     "a type was removed or introduced (incl. number -> integer)"),
    ("type.widened", _MINOR, _MAJOR, False, "a type was added or the type constraint dropped"),
    ("enum.introduced", _MAJOR, _MINOR, False, "an enum now restricts a value that was free"),
    ("enum.narrowed", _MAJOR, _MINOR, False, "enum values were removed"),
    ("enum.widened", _MINOR, _MAJOR, False, "enum values were added"),
    ("enum.removed", _MINOR, _MAJOR, False, "the enum was dropped"),
    ("const.added", _MAJOR, _MINOR, False, "a const now pins a value"),
    ("const.changed", _MAJOR, _MAJOR, False, "the const value changed"),
    ("const.removed", _MINOR, _MAJOR, False, "the const was dropped"),
    ("required.added", _MAJOR, _MINOR, False,
     "a property became required (new or formerly optional, with or without default)"),
    ("required.dropped", _MINOR, _MAJOR, False, "a property is no longer required"),
    ("property.added", _MINOR, _MINOR, False, "an optional property was declared"),
    ("property.added_to_closed", _MINOR, _MAJOR, False,
     "a property was declared on an object that forbade undeclared properties"),
    ("property.redeclared", _MAJOR, _MINOR, False,
     "an optional property was declared on an open subschema while another subschema at the same "
     "place (allOf/anyOf/oneOf/if/then/else/not/dependentSchemas or the enclosing object) "
     "declares the name, or one names it (required, dependentRequired, dependentSchemas, a "
     "propertyNames enum or const), and it does not provably accept every value callers send"),
    ("property.removed", _MAJOR, _MAJOR, False, "a declared property was removed"),
    ("pattern_property.added", _MINOR, _MINOR, False, "a patternProperties entry was added"),
    ("pattern_property.added_to_closed", _MINOR, _MAJOR, False,
     "a patternProperties entry was added to an object that forbade undeclared properties"),
    ("pattern_property.removed", _MAJOR, _MAJOR, False, "a patternProperties entry was removed"),
    ("pattern_property.narrows_property", _MAJOR, _MINOR, False,
     "an added patternProperties entry matches a declared property and does not provably accept "
     "every value the property accepted"),
    ("pattern_property.narrows_undeclared", _MAJOR, _MINOR, False,
     "an added patternProperties entry matches undeclared names and does not provably accept every "
     "value they accepted (anything on an open object, else additionalProperties or an old pattern)"),
    ("pattern_property.widens_undeclared", _MINOR, _MAJOR, False,
     "an added patternProperties entry takes undeclared names from an additionalProperties schema "
     "and accepts values it refused"),
    ("additional_properties.closed", _MAJOR, _MINOR, False,
     "additionalProperties became false"),
    ("additional_properties.opened", _PATCH, _MAJOR, False,
     "additionalProperties false was opened (cannot break a caller)"),
    ("bound.lower_raised", _MAJOR, _MINOR, False,
     "a lower bound was raised or newly set (absent is -infinity)"),
    ("bound.upper_lowered", _MAJOR, _MINOR, False,
     "an upper bound was lowered or newly set (absent is +infinity)"),
    ("bound.relaxed", _MINOR, _MAJOR, False, "a bound was lowered, raised or dropped"),
    ("multiple_of.added", _MAJOR, _MINOR, False, "multipleOf was added"),
    ("multiple_of.removed", _MINOR, _MAJOR, False, "multipleOf was dropped"),
    ("multiple_of.divisor", _MINOR, _MAJOR, False,
     "multipleOf changed to a divisor of the old value"),
    ("multiple_of.multiple", _MAJOR, _MINOR, False,
     "multipleOf changed to a multiple of the old value"),
    ("multiple_of.changed", _MAJOR, _MAJOR, False,
     "multipleOf changed to a value that neither divides nor is a multiple of the old one"),
    ("unique_items.added", _MAJOR, _MINOR, False, "uniqueItems was turned on"),
    ("unique_items.removed", _MINOR, _MAJOR, False, "uniqueItems was turned off"),
    ("pattern.added", _MAJOR, _MINOR, False, "a pattern was added"),
    ("pattern.changed", _MAJOR, _MAJOR, False, "the pattern changed"),
    ("pattern.removed", _MINOR, _MAJOR, False, "the pattern was dropped"),
    ("format.added", _MAJOR, _MINOR, False, "an asserted format was added"),
    ("format.changed", _MAJOR, _MAJOR, False, "an asserted format changed"),
    ("format.removed", _MINOR, _MAJOR, False, "an asserted format was dropped"),
    ("format.annotation", _PATCH, _PATCH, True,
     "a format changed where formats are annotations only (not asserted)"),
    ("default.added", _MINOR, _PATCH, False, "a default was declared"),
    ("default.changed", _MAJOR, _PATCH, False,
     "the default changed (callers that omit the field get different behaviour)"),
    ("default.removed", _MAJOR, _PATCH, False,
     "the default was dropped (callers that omit the field get different behaviour)"),
    ("contains.added", _MAJOR, _MINOR, False, "contains was added"),
    ("contains.removed", _MINOR, _MAJOR, False, "contains was dropped"),
    ("branch.added", _MINOR, _MAJOR, False, "an anyOf/oneOf branch was added"),
    ("branch.removed", _MAJOR, _MINOR, False, "an anyOf/oneOf branch was removed"),
    ("branch.exclusivity_unproven", _MAJOR, _MAJOR, False,
     "a oneOf changed and its branches are not provably disjoint"),
    ("conjunct.added", _MAJOR, _MINOR, False, "an allOf branch was added"),
    ("conjunct.removed", _MINOR, _MAJOR, False, "an allOf branch was removed"),
    ("combinator.added", _MAJOR, _MINOR, False,
     "anyOf/oneOf/allOf/not/if/then/else was added"),
    ("combinator.removed", _MINOR, _MAJOR, False,
     "anyOf/oneOf/allOf/not/if/then/else was dropped"),
    ("not.narrowed", _MAJOR, _MINOR, False,
     "the schema under not widened (or could not be shown to narrow)"),
    ("not.widened", _MINOR, _MAJOR, False,
     "the schema under not narrowed (or could not be shown to widen)"),
    ("dependent_required.added", _MAJOR, _MINOR, False, "dependentRequired was added"),
    ("dependent_required.changed", _MAJOR, _MAJOR, False, "dependentRequired changed"),
    ("dependent_required.removed", _MINOR, _MAJOR, False, "dependentRequired was dropped"),
    ("dependent_schemas.added", _MAJOR, _MINOR, False, "dependentSchemas was added"),
    ("dependent_schemas.changed", _MAJOR, _MAJOR, False, "dependentSchemas changed"),
    ("dependent_schemas.removed", _MINOR, _MAJOR, False, "dependentSchemas was dropped"),
    ("schema.closed", _MAJOR, _MINOR, False, "a subschema became false (rejects everything)"),
    ("schema.opened", _MINOR, _MAJOR, False, "a false subschema now accepts values"),
    ("doc.changed", _PATCH, _PATCH, True,
     "title/description/examples or another annotation changed (descriptions steer models)"),
    ("unanalysable", _MAJOR, _MAJOR, False,
     "a keyword or reference the classifier cannot analyse changed (fails closed)"),
)

_CONTRACT_ROWS: tuple[tuple[str, Bump, bool, str], ...] = (
    ("contract.name.changed", _MAJOR, False, "the tool name changed"),
    ("contract.scope.added", _MAJOR, False, "a new required scope"),
    ("contract.scope.removed", _MINOR, False, "a required scope was dropped"),
    ("contract.classification.raised", _MAJOR, False, "the data classification was raised"),
    ("contract.classification.lowered", _MINOR, False, "the data classification was lowered"),
    ("contract.tenant.removed", _MAJOR, False,
     "a tenant lost access (an empty list, meaning all tenants, becoming a list is a removal)"),
    ("contract.tenant.added", _MINOR, False, "a tenant gained access"),
    ("contract.side_effect.escalated", _MAJOR, False,
     "the side effect escalated (read < idempotent_write < write < destructive)"),
    ("contract.side_effect.deescalated", _MINOR, False, "the side effect de-escalated"),
    ("contract.output_schema.added", _MINOR, False, "an output schema now promises a shape"),
    ("contract.output_schema.removed", _MAJOR, False, "the output schema was dropped"),
    ("contract.assert_formats.changed", _PATCH, True,
     "format assertion was switched (its effect on each format is reported separately)"),
    ("contract.doc.changed", _PATCH, True,
     "the contract title/description changed (descriptions steer models)"),
)


def _build() -> Mapping[str, Rule]:
    rows: dict[str, Rule] = {}
    for suffix, in_bump, out_bump, review, description in _SCHEMA_ROWS:
        for direction, bump in zip(DIRECTIONS, (in_bump, out_bump), strict=True):
            rows[f"{direction}.{suffix}"] = Rule(f"{direction}.{suffix}", bump, review,
                                                 description)
    for rule_id, bump, review, description in _CONTRACT_ROWS:
        rows[rule_id] = Rule(rule_id, bump, review, description)
    return MappingProxyType(dict(sorted(rows.items())))


#: Every rule, by id, sorted.
RULES: Mapping[str, Rule] = _build()

