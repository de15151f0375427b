"""Strict, deterministic validation of arguments against a JSON Schema 2020-12 (SPEC 1.2).

Built on jsonschema-rs (compiled once per schema, cached). The fast path is ``is_valid_json``;
only a failing instance pays for error collection. Errors are values (:class:`Issue`) with a JSON path,
the keyword and a message, and are post-processed by a fixed policy:

* ``integer`` rejects booleans **and floats**: JSON Schema says ``5.0`` is an integer, but a tool
  that declared ``integer`` gets a Python ``int`` from us or nothing (seed ``000``: "integer does
  not accept 5.0, which is the correct asymmetry"). Repair turns an integral float into an int.
  ``number`` accepts ints and rejects booleans (jsonschema-rs already keeps bool apart).
* ``additionalProperties``/``unevaluatedProperties`` and ``required`` errors are reported at the
  offending property's own path (``$.urgent``), one error per property.
* A path that has a ``type`` error reports nothing else (no follow-on ``minimum`` noise).
* Errors are sorted by (path, message) and deduplicated: byte-identical output every run.
* A part of the instance that is not JSON data (a non-finite float, a string holding a lone
  surrogate, a key that is not a string, any other Python value: lenient decoders and the Python
  API can produce them, the wire cannot) is an error at its path, whatever the schema says
  (keyword ``type``, a fixed message per reason: :mod:`~toolkeeper.contracts.json_values`).
  ``is_valid`` checks for them first; ``is_valid_json`` is the fast path for instances a strict
  JSON decoder produced, which cannot hold them.
* An invalid instance nested past jsonschema-rs's limit (it cannot build an error for a value
  more than 255 containers deep) still gets its errors listed: those that an instance cut at
  :data:`_CUT_DEPTH` gives exactly, plus one ``depth`` error at the first cut no listed ``type``
  error covers (see :func:`_deep_issues`).
* :meth:`CompiledSchema.bounded_errors` lists the errors of at most a given number of the
  instance's values, so the work of listing them is bounded whatever the instance holds
  (jsonschema-rs builds every error of an instance before it yields the first): an instance of
  more values is cut to the first of them (arrays by index, objects by key in sorted order, so
  the cut depends on the value, not on its key order), and only the errors the cut cannot have
  changed are listed, flagged ``truncated`` (see :func:`_cut_issues`).

A schema that is not JSON (a lone surrogate, a non-string key, an unsupported value), is nested
too deeply, or does not compile raises :class:`~toolkeeper.errors.SchemaError` (``schema.invalid``).
So does one that is not self-contained (``schema.ref_*``, with the path of the reference:
:mod:`~toolkeeper.contracts.references`) or, asserting formats, names an unknown one
(``schema.format_unknown``: :mod:`~toolkeeper.contracts.formats`); both are checked once per
distinct schema, when it is compiled. The validator is built with a retriever that refuses every
URI: whatever reaches it, it reads no file and opens no connection (``schema.ref_external``).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from typing import Any, Final

import jsonschema_rs
import msgspec

from toolkeeper.contracts.canonical import canonical_json, json_type_name, loads_json
from toolkeeper.contracts.formats import find_unknown_format
from toolkeeper.contracts.json_values import (
    NOT_JSON_MESSAGES,
    find_not_json,
    has_non_finite,
    is_json_data,
)
from toolkeeper.contracts.references import find_reference_problem
from toolkeeper.errors import ContractError, SchemaError

__all__ = ["BoundedIssues", "CompiledSchema", "Issue", "compile_schema", "format_path",
           "validate"]

_STRICT_INT = "x-toolkeeper-strict-integer"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Keywords of a schema object whose values are data or names, never schemas: copied as they are.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "dependentRequired"})
# Keywords of a schema object whose values map names to schemas: the names are not keywords
# (a property may be called ``enum``), the values are schemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                          "dependentSchemas"})
# Containers (objects and arrays) a schema may nest; jsonschema-rs refuses past 255 anyway, and
# the bound keeps the Python walk far from the interpreter's recursion limit.
_MAX_SCHEMA_DEPTH = 256
_NOT_JSON_NUMBER = NOT_JSON_MESSAGES["not_finite"]

# Why a schema could not be encoded as JSON (canonical_json raised), by exception type.
_NOT_JSON: dict[type[BaseException], str] = {
    UnicodeEncodeError: "a string is not valid Unicode (a lone surrogate)",
    RecursionError: "it is nested too deeply",
    TypeError: "it holds a value or key that JSON cannot carry",
}


@dataclass(frozen=True, slots=True, order=True)
class Issue:
    """One validation error: JSON path (``$.a[0].b``), message, keyword. Sorts by (path, message)."""

    path: str
    message: str
    keyword: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "keyword": self.keyword, "message": self.message}


@dataclass(frozen=True, slots=True)
class BoundedIssues:
    """The errors :meth:`CompiledSchema.bounded_errors` lists: ``issues`` sorted, as
    :meth:`CompiledSchema.errors` sorts them; ``truncated`` when the instance held more values
    than the bound and those past it were not checked (more errors may exist)."""

    issues: list[Issue]
    truncated: bool


# Issue's own order as a key: tuples compare in C, the dataclass's __lt__ in Python (many
# times slower for an instance with thousands of errors).
_ORDER: Final = attrgetter("path", "message", "keyword")


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
    """Custom keyword: a float never satisfies a schema whose types include integer but not number.
    (A non-finite float already fails the ``type`` itself, with its own message.)"""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.message = f"expected type {value}, got number"

    def validate(self, instance: Any) -> None:
        if type(instance) is float and math.isfinite(instance):
            raise ValueError(self.message)


def _strictify(node: Any, depth: int = 0) -> Any:
    """Copy of a schema with the strict-integer keyword beside every integer-only ``type``. Data
    keywords are copied untouched; names in ``properties`` and the other schema maps are
    names, not keywords. Nesting past :data:`_MAX_SCHEMA_DEPTH` is a :class:`SchemaError`.
    Plain loops, not comprehensions: one interpreter frame per level."""
    if depth > _MAX_SCHEMA_DEPTH:
        raise SchemaError(
            f"not a valid JSON Schema 2020-12: nested deeper than {_MAX_SCHEMA_DEPTH} levels")
    if isinstance(node, list):
        items = []
        for item in node:
            items.append(_strictify(item, depth + 1))
        return items
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DATA_KEYWORDS:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            members: dict[str, Any] = {}
            for name, member in value.items():
                members[name] = _strictify(member, depth + 2)
            out[key] = members
        else:
            out[key] = _strictify(value, depth + 1)
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

    __slots__ = ("_validator", "is_valid_json", "schema")

    def __init__(self, schema: dict[str, Any] | bool, *, assert_formats: bool = False) -> None:
        self.schema = schema
        asked: list[str] = []

        def refuse(uri: str) -> Any:  # the validator's only way out of the document
            asked.append(uri)
            raise LookupError("a contract is self-contained: nothing is retrieved")

        try:
            self._validator = jsonschema_rs.Draft202012Validator(
                _strictify(schema),
                validate_formats=assert_formats,
                ignore_unknown_formats=not assert_formats,
                keywords={_STRICT_INT: _StrictInteger},
                retriever=refuse,
            )
        except (jsonschema_rs.ValidationError, ValueError, TypeError) as exc:
            if asked:
                raise SchemaError(f"{asked[0]!r} is outside the document: a contract is "
                                  "self-contained, only references into it resolve",
                                  code="schema.ref_external") from None
            first = str(exc).split("\n", 1)[0]
            raise SchemaError(f"not a valid JSON Schema 2020-12: {first}") from None
        #: ``is_valid_json(instance) -> bool``: the fast path, bound straight to the compiled
        #: validator, for an instance a strict JSON decoder produced (the gateway's arguments):
        #: it cannot hold the values :meth:`is_valid` looks for first.
        self.is_valid_json: Callable[[Any], bool] = self._validator.is_valid

    def is_valid(self, instance: Any) -> bool:
        """Whether ``instance`` is JSON data and valid (exactly when :meth:`errors` is empty).
        Only an instance the schema accepts pays for the JSON-data walk."""
        try:
            if not self.is_valid_json(instance):
                return False
        except (ValueError, TypeError):  # the library refuses it: not JSON data
            return False
        return is_json_data(instance)

    def errors(self, instance: Any) -> list[Issue]:
        """Every error, policy applied, sorted; ``[]`` exactly when :meth:`is_valid`."""
        if self.is_valid(instance):
            return []
        return self._every_error(instance)

    def bounded_errors(self, instance: Any, budget: int) -> BoundedIssues:
        """The errors of at most ``budget`` of the instance's values (every value, container or
        scalar, counts one): exactly :meth:`errors` when the instance holds no more; else the
        errors of the instance cut to its first ``budget`` values that the cut cannot have
        changed, ``truncated``. The issues are empty exactly when :meth:`is_valid`."""
        if self.is_valid(instance):
            return BoundedIssues([], False)
        if _fits(instance, budget):
            return BoundedIssues(self._every_error(instance), False)
        cut = _Cut(budget)
        shallow = cut.copy(instance, ())
        truncated = bool(cut.wide)
        if not is_json_data(shallow):  # the Python API's values only: a JSON decoder makes none
            rows = [(loc, "type", NOT_JSON_MESSAGES[why]) for loc, why in find_not_json(shallow)]
            return BoundedIssues(_issues(self.schema, [], shallow, rows), truncated)
        return BoundedIssues(_cut_issues(self, instance, shallow, cut), truncated)

    def _every_error(self, instance: Any) -> list[Issue]:
        bad = [] if is_json_data(instance) else find_not_json(instance)
        not_json = [(loc, "type", NOT_JSON_MESSAGES[reason]) for loc, reason in bad]
        try:
            found = list(self._validator.iter_errors(instance)) if not bad else []
        except ValueError:  # a failing value nested past the library's limit: see _deep_issues
            return _deep_issues(self, instance)
        return _issues(self.schema, found, instance, not_json)


def _issues(schema: Any, found: Iterable[Any], instance: Any,
            extra: Iterable[tuple[tuple[str | int, ...], str, str]] = ()) -> list[Issue]:
    """The policy: our paths, keywords and messages; one ``type`` error hides the rest at a path.
    ``extra``: rows found without the library (parts that are not JSON data)."""
    raw: list[tuple[tuple[str | int, ...], str, str]] = list(extra)
    for error in found:
        raw.extend(_raw(schema, error, instance))
    typed = {loc for loc, keyword, _ in raw if keyword == "type"}
    rows = {  # deduplicated and sorted as plain tuples (Issue's field order): C, not Python
        (format_path(loc), message, keyword)
        for loc, keyword, message in raw
        if keyword == "type" or loc not in typed
    }
    return [Issue(*row) for row in sorted(rows)]


def _raw(schema: Any, error: Any, instance: Any) -> list[tuple[tuple[str | int, ...], str, str]]:
    """One library error as (location, keyword, message) rows."""
    kind = error.kind
    loc = tuple(error.instance_path)
    name = kind.name
    if name in _NICE:
        return [((*loc, prop), name, f"{_NICE[name]} is not allowed") for prop in sorted(kind.value)]
    if name == "required":
        return [((*loc, kind.value), "required", "required property is missing")]
    if name == _STRICT_INT:
        return [(loc, "type", str(error.message))]
    if name == "type" and error.instance is None and _non_finite(_walk(instance, loc)):
        return [(loc, "type", _NOT_JSON_NUMBER)]  # the library hands over inf/nan as null
    if name == "falseSchema" and tuple(error.schema_path)[-1:] == ("additionalProperties",):
        # jsonschema-rs reports a bare ``additionalProperties: false`` (no ``properties``) as a
        # false schema at the object's path; name each extra property instead.
        return [((*loc, prop), "additionalProperties", "additional property is not allowed")
                for prop in _extra_properties(schema, tuple(error.schema_path), instance, loc)]
    return [(loc, name, _message(kind, error))]


def _non_finite(value: Any) -> bool:
    return type(value) is float and not math.isfinite(value)


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


# The errors of an instance nested too deeply for jsonschema-rs to build them: the instance is cut
# at _CUT_DEPTH containers (deeper non-empty ones emptied, keeping their JSON type) and validated
# again. Kept, being exact on the cut instance: errors of keywords that look at their value's own
# shape (_SHAPE_KINDS; at a cut, its type only: _TYPE_KINDS) or compare a scalar (_SCALAR_KINDS),
# reached through no keyword whose outcome hangs on deeper content (_CONTENT_GATED). The rest is
# dropped, represented by one ``depth`` error at the first cut that no kept ``type`` error covers
# (a value of the wrong type must change whatever it holds): an invalid instance lists something.
_CUT_DEPTH = 128
_TYPE_KINDS = frozenset({"type", "falseSchema"})
_SHAPE_KINDS = _TYPE_KINDS | {
    _STRICT_INT, "required", "additionalProperties", "propertyNames", "minProperties",
    "maxProperties", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
_SCALAR_KINDS = frozenset({"enum", "const"})
_CONTENT_GATED = frozenset({"if", "then", "else", "not", "anyOf", "oneOf", "contains",
                            "unevaluatedProperties", "unevaluatedItems"})
# At a container cut short, the errors its kept values alone prove (a ``required`` error is
# checked against the uncut container: :func:`_exact_despite_cuts`).
_WIDE_KINDS = _TYPE_KINDS | {"additionalProperties", "propertyNames", "maxItems",
                             "maxProperties", "uniqueItems"}
_TOO_DEEP = "is nested too deeply for its errors to be listed"
_TOO_WIDE = "holds more values than are checked for errors"


def _deep_issues(compiled: CompiledSchema, instance: Any) -> list[Issue]:
    cut = _Cut(None)
    return _cut_issues(compiled, instance, cut.copy(instance, ()), cut)


def _cut_issues(compiled: CompiledSchema, instance: Any, shallow: Any, cut: _Cut) -> list[Issue]:
    """The errors of ``shallow`` (``instance`` cut by ``cut``) that hold for ``instance``. At a
    container cut short (``cut.wide``) the kept values are real values of it: a kept property
    that is not allowed, a bad name, a duplicate, too many items stay errors
    (:data:`_WIDE_KINDS`), and a missing required property is one when ``instance`` lacks it
    too. When nothing is left to list, one error says why: ``depth`` at the first deep cut no
    ``type`` error covers, else ``size`` at the first container cut short."""
    found = list(compiled._validator.iter_errors(shallow))
    deep_at, wide_at = set(cut.deep), set(cut.wide)
    kept = [error for error in found
            if _exact_despite_cuts(error, deep_at, wide_at, instance)]
    issues = _issues(compiled.schema, kept, shallow)
    typed = {tuple(e.instance_path) for e in kept if e.kind.name in ("type", _STRICT_INT)}
    uncovered = [format_path(loc) for loc in cut.deep
                 if not any(loc[:n] in typed for n in range(len(loc) + 1))]
    if uncovered or (not issues and not cut.wide):
        issues.append(Issue(min(uncovered, default="$"), _TOO_DEEP, "depth"))
    elif not issues:
        issues.append(Issue(min(format_path(loc) for loc in cut.wide), _TOO_WIDE, "size"))
    return sorted(issues, key=_ORDER)


def _exact_despite_cuts(error: Any, deep_at: set[tuple[str | int, ...]],
                        wide_at: set[tuple[str | int, ...]], instance: Any) -> bool:
    loc = tuple(error.instance_path)
    name = error.kind.name
    if loc in deep_at:
        kinds = _TYPE_KINDS
    elif loc in wide_at:
        kinds = _WIDE_KINDS
        whole = _walk(instance, loc)
        if name == "required" and isinstance(whole, dict) and error.kind.value not in whole:
            kinds = kinds | {"required"}  # the uncut container lacks the property as well
    else:
        kinds = _SHAPE_KINDS
    if not isinstance(error.instance, (dict, list)):
        kinds = kinds | _SCALAR_KINDS  # a scalar is never cut: comparing it is exact
    return name in kinds and _CONTENT_GATED.isdisjoint(
        part for part in error.schema_path if isinstance(part, str))


def _fits(value: Any, budget: int) -> bool:
    """Whether ``value`` holds at most ``budget`` values (a walk of at most ``budget + 1``)."""
    stack = [value]
    left = budget
    while stack:
        node = stack.pop()
        left -= 1
        if left < 0:
            return False
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


class _Cut:
    """Copies an instance keeping at most ``budget`` values (None: any number): each non-empty
    container :data:`_CUT_DEPTH` deep is emptied (its location appended to ``deep``), each
    container whose values past the budget are left out is cut short (its location appended to
    ``wide``). Values are taken depth first, an array's by index, an object's by key in sorted
    order; recursion is bounded by the cut depth."""

    __slots__ = ("deep", "left", "wide")

    def __init__(self, budget: int | None) -> None:
        self.left = budget
        self.deep: list[tuple[str | int, ...]] = []
        self.wide: list[tuple[str | int, ...]] = []

    def copy(self, value: Any, loc: tuple[str | int, ...]) -> Any:
        if self.left is not None:
            self.left -= 1
        if not isinstance(value, (dict, list)) or not value:
            return value
        if len(loc) >= _CUT_DEPTH:
            self.deep.append(loc)
            return {} if isinstance(value, dict) else []
        if self.left is None:
            if isinstance(value, dict):
                return {key: self.copy(item, (*loc, key)) for key, item in value.items()}
            return [self.copy(item, (*loc, index)) for index, item in enumerate(value)]
        if isinstance(value, list):
            items: list[Any] = []
            for index, item in enumerate(value):
                if self.left <= 0:
                    break
                items.append(self.copy(item, (*loc, index)))
            if len(items) < len(value):
                self.wide.append(loc)
            return items
        members: dict[Any, Any] = {}
        for key in _first_keys(value, self.left):
            if self.left <= 0:
                break
            members[key] = self.copy(value[key], (*loc, key))
        if len(members) < len(value):
            self.wide.append(loc)
        return members


def _first_keys(value: dict[Any, Any], count: int) -> list[Any]:
    """The ``count`` smallest keys, sorted (insertion order when keys do not compare: a value
    that is not JSON data, from the Python API)."""
    try:
        return sorted(value) if len(value) <= count else heapq.nsmallest(count, value)
    except TypeError:
        return list(value)[:count]


_NICE: dict[str, str] = {
    "additionalProperties": "additional property",
    "unevaluatedProperties": "unevaluated property",
}


@lru_cache(maxsize=4096)
def _compile_cached(key: bytes, assert_formats: bool) -> CompiledSchema:
    try:
        schema = loads_json(key)
    except ContractError:  # encodable but too deep to decode again
        raise SchemaError("not a valid JSON Schema 2020-12: it is nested too deeply") from None
    problem = find_reference_problem(schema) or (
        find_unknown_format(schema) if assert_formats else None)
    if problem is not None:
        path = format_path(problem.location)
        raise SchemaError(f"{path}: {problem.message}", code=problem.code, path=path)
    return CompiledSchema(schema, assert_formats=assert_formats)


def compile_schema(schema: dict[str, Any] | bool, *, assert_formats: bool = False) -> CompiledSchema:
    """Compile (or fetch from the cache) the validator for a schema. A schema that is not JSON or
    not a valid schema raises :class:`SchemaError` (with the library's first line at most)."""
    try:
        key = canonical_json(schema)
    except (msgspec.EncodeError, TypeError, ValueError, RecursionError) as exc:
        why = next((text for kind, text in _NOT_JSON.items() if isinstance(exc, kind)),
                   "it is not JSON")
        raise SchemaError(f"not a valid JSON Schema 2020-12: {why}") from None
    if b"null" in key and has_non_finite(schema):  # the encoder writes NaN and infinities as null
        raise SchemaError("not a valid JSON Schema 2020-12: NaN and infinities are not JSON "
                          "numbers")
    return _compile_cached(key, assert_formats)


def validate(schema: dict[str, Any] | CompiledSchema, instance: Any) -> list[Issue]:
    """Validate ``instance``; returns the sorted errors (empty when valid)."""
    compiled = schema if isinstance(schema, CompiledSchema) else compile_schema(schema)
    return compiled.errors(instance)
