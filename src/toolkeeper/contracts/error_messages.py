"""The messages of validation errors (SPEC 1.2): our own, chosen through tables.

:func:`message_for` picks the message for one jsonschema-rs error by the schema keyword that
failed (:data:`_BY_KEYWORD`), by the error kind where one keyword yields several
(:data:`_BY_KIND`), or renders it from the keyword's value (:data:`_MESSAGES`). A message is
stable across library versions and never echoes the caller's value: only the schema's own
keywords and values, which the caller was shown.
"""

from __future__ import annotations

from typing import Any

from toolkeeper.contracts.canonical import canonical_json, json_type_name

__all__ = ["PROPERTY_NOUNS", "message_for"]

# What the property-rejecting keywords call the property they reject, in their messages.
PROPERTY_NOUNS: dict[str, str] = {
    "additionalProperties": "additional property",
    "unevaluatedProperties": "unevaluated property",
}


def message_for(kind: Any, error: Any) -> str:
    """Our own message for an error: stable across library versions, and it never echoes the
    caller's value (only the schema's own keywords and values, which the caller was shown)."""
    name = kind.name
    if name == "type":
        types = kind.value
        expected = " or ".join(sorted(types)) if isinstance(types, list) else str(types)
        return f"expected type {expected}, got {json_type_name(error.instance)}"
    schema_path = tuple(error.schema_path)
    keyword = schema_path[-1] if schema_path and isinstance(schema_path[-1], str) else name
    fixed = (_BY_KEYWORD.get(keyword) or _BY_KIND.get(type(kind).__name__)
             or _BY_KEYWORD.get(name))
    if fixed is not None:
        return fixed
    render = _MESSAGES.get(name)
    if render is not None:
        return str(render(kind.value))
    return f"does not satisfy {name}"


def _dump(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


# Messages chosen by the schema keyword that failed (several keywords share one error kind).
_BY_KEYWORD: dict[str, str] = {
    "contains": "must contain at least one matching item",
    "minContains": "contains too few matching items",
    "maxContains": "contains too many matching items",
    "propertyNames": "has a property name that is not allowed",
    "anyOf": "does not match any of the allowed schemas (anyOf)",
    "not": "must not match the schema under not",
    "unevaluatedItems": "has items that are not allowed (unevaluatedItems)",
    "additionalItems": "has more items than allowed",
    "contentEncoding": "is not in the declared content encoding",
    "contentMediaType": "is not of the declared content media type",
}

# Messages chosen by the error kind where one keyword yields several kinds.
_BY_KIND: dict[str, str] = {
    "OneOfNotValid": "does not match any of the schemas (oneOf)",
    "OneOfMultipleValid": "matches more than one of the schemas (oneOf)",
    "FalseSchema": "no value is allowed here",
    "BacktrackLimitExceeded": "could not be checked against the pattern",
    "RegexEngineFailure": "could not be checked against the pattern",
    "Referencing": "could not be checked: a schema reference does not resolve",
    "FromUtf8": "is not valid UTF-8",
}

_MESSAGES: dict[str, Any] = {
    "pattern": lambda v: f"does not match pattern '{v}'",
    "format": lambda v: f"is not a valid {v}",
    "enum": lambda v: f"must be one of {_dump(v)}",
    "const": lambda v: f"must equal {_dump(v)}",
    "minimum": lambda v: f"must be >= {_dump(v)}",
    "maximum": lambda v: f"must be <= {_dump(v)}",
    "exclusiveMinimum": lambda v: f"must be > {_dump(v)}",
    "exclusiveMaximum": lambda v: f"must be < {_dump(v)}",
    "minLength": lambda v: f"must be at least {v} characters long",
    "maxLength": lambda v: f"must be at most {v} characters long",
    "minItems": lambda v: f"must have at least {v} items",
    "maxItems": lambda v: f"must have at most {v} items",
    "minProperties": lambda v: f"must have at least {v} properties",
    "maxProperties": lambda v: f"must have at most {v} properties",
    "multipleOf": lambda v: f"must be a multiple of {_dump(v)}",
    "uniqueItems": lambda v: "items must be unique",
}
