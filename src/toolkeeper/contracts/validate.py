"""Strict, deterministic validation of arguments against a JSON Schema 2020-12 (SPEC 1.2).

Built on jsonschema-rs (compiled once per schema, cached). The fast path is ``is_valid``; only a
failing instance pays for error collection. Errors are values (:class:`Issue`) with a JSON path,
the keyword and a message, and are post-processed by a fixed policy:

* ``integer`` rejects booleans **and floats**: JSON Schema says ``5.0`` is an integer, but a tool
  that declared ``integer`` gets a Python ``int`` from us or nothing (seed ``000``: "integer does
  not accept 5.0, which is the correct asymmetry"). Repair turns an integral float into an int.
  ``number`` accepts ints and rejects booleans (jsonschema-rs already keeps bool apart).
* ``additionalProperties``/``unevaluatedProperties`` and ``required`` errors are reported at the
  offending property's own path (``$.urgent``), one error per property.
* A path that has a ``type`` error reports nothing else (no follow-on ``minimum`` noise).
* Errors are sorted by (path, message) and deduplicated: byte-identical output every run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema_rs

from toolkeeper.contracts.canonical import canonical_json, json_type_name
from toolkeeper.errors import SchemaError

__all__ = ["CompiledSchema", "Issue", "compile_schema", "format_path", "validate"]

_STRICT_INT = "x-toolkeeper-strict-integer"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Keywords whose values are data, not subschemas: never rewrite inside them.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


@dataclass(frozen=True, slots=True, order=True)
class Issue:
    """One validation error: JSON path (``$.a[0].b``), message, keyword. Sorts by (path, message)."""

    path: str
    message: str
    keyword: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "keyword": self.keyword, "message": self.message}


def format_path(parts: Iterable[str | int]) -> str:
    """Render an instance location as a JSON path: ``$.a[0]['odd key']``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENT.fullmatch(part):
            out.append(f".{part}")
        else:
            out.append("[" + canonical_json(part).decode("utf-8") + "]")
    return "".join(out)


class _StrictInteger:
    """Custom keyword: a float never satisfies a schema whose types include integer but not number."""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.message = f"expected type {value}, got number"

    def validate(self, instance: Any) -> None:
        if type(instance) is float:
            raise ValueError(self.message)


def _strictify(node: Any) -> Any:
    """Copy of a schema with the strict-integer keyword beside every integer-only ``type``."""
    if isinstance(node, list):
        return [_strictify(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in _DATA_KEYWORDS else _strictify(v)) for k, v in node.items()}
    declared = node.get("type")
    types = [declared] if isinstance(declared, str) else declared
    if isinstance(types, list) and "integer" in types and "number" not in types:
        out[_STRICT_INT] = " or ".join(sorted(types))
    return out


def _message(kind: Any, error: Any) -> str:
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


class CompiledSchema:
    """A compiled validator for one schema. Build with :func:`compile_schema` (cached)."""

    __slots__ = ("_validator", "is_valid", "schema")

    def __init__(self, schema: dict[str, Any] | bool, *, assert_formats: bool = False) -> None:
        self.schema = schema
        try:
            self._validator = jsonschema_rs.Draft202012Validator(
                _strictify(schema),
                validate_formats=assert_formats,
                keywords={_STRICT_INT: _StrictInteger},
            )
        except (jsonschema_rs.ValidationError, ValueError, TypeError) as exc:
            first = str(exc).split("\n", 1)[0]
            raise SchemaError(f"not a valid JSON Schema 2020-12: {first}") from None
        #: ``is_valid(instance) -> bool``: the fast path, bound straight to the compiled validator.
        self.is_valid: Callable[[Any], bool] = self._validator.is_valid

    def errors(self, instance: Any) -> list[Issue]:
        """Every error, policy applied, sorted; ``[]`` when valid."""
        if self.is_valid(instance):
            return []
        raw: list[tuple[tuple[str | int, ...], str, str]] = []
        for error in self._validator.iter_errors(instance):
            kind = error.kind
            loc = tuple(error.instance_path)
            name = kind.name
            if name in ("additionalProperties", "unevaluatedProperties"):
                for prop in sorted(kind.value):
                    raw.append(((*loc, prop), name, f"{_NICE[name]} is not allowed"))
            elif name == "required":
                raw.append(((*loc, kind.value), "required", "required property is missing"))
            elif name == _STRICT_INT:
                raw.append((loc, "type", str(error.message)))
            elif name == "falseSchema" and tuple(error.schema_path)[-1:] == ("additionalProperties",):
                # jsonschema-rs reports a bare ``additionalProperties: false`` (no ``properties``)
                # as a false schema at the object's path; name each extra property instead.
                for prop in _extra_properties(self.schema, tuple(error.schema_path), instance, loc):
                    raw.append(((*loc, prop), "additionalProperties",
                                "additional property is not allowed"))
            else:
                raw.append((loc, name, _message(kind, error)))
        typed = {loc for loc, keyword, _ in raw if keyword == "type"}
        issues = {
            Issue(format_path(loc), message, keyword)
            for loc, keyword, message in raw
            if keyword == "type" or loc not in typed
        }
        return sorted(issues)


def _walk(node: Any, parts: Iterable[str | int]) -> Any:
    for part in parts:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
            continue
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            continue
        return None
    return node


def _extra_properties(schema: Any, schema_path: tuple[str | int, ...], instance: Any,
                      loc: tuple[str | int, ...]) -> list[str]:
    """Keys of the object at ``loc`` that neither ``properties`` nor ``patternProperties`` of the
    subschema owning ``schema_path[-1]`` admit."""
    owner = _walk(schema, schema_path[:-1])
    target = _walk(instance, loc)
    if not isinstance(owner, dict) or not isinstance(target, dict):
        return []
    declared = owner.get("properties")
    props: dict[str, Any] = declared if isinstance(declared, dict) else {}
    patterns = owner.get("patternProperties")
    patterns = list(patterns) if isinstance(patterns, dict) else []
    return sorted(
        key for key in target
        if key not in props
        and not any(compile_schema({"pattern": p}).is_valid(key) for p in patterns)
    )


_NICE = {
    "additionalProperties": "additional property",
    "unevaluatedProperties": "unevaluated property",
}


@lru_cache(maxsize=4096)
def _compile_cached(key: bytes, assert_formats: bool) -> CompiledSchema:
    from toolkeeper.contracts.canonical import loads_json

    return CompiledSchema(loads_json(key), assert_formats=assert_formats)


def compile_schema(schema: dict[str, Any] | bool, *, assert_formats: bool = False) -> CompiledSchema:
    """Compile (or fetch from the cache) the validator for a schema. Invalid schemas raise
    :class:`SchemaError` with the library's first line only."""
    return _compile_cached(canonical_json(schema), assert_formats)


def validate(schema: dict[str, Any] | CompiledSchema, instance: Any) -> list[Issue]:
    """Validate ``instance``; returns the sorted errors (empty when valid)."""
    compiled = schema if isinstance(schema, CompiledSchema) else compile_schema(schema)
    return compiled.errors(instance)
