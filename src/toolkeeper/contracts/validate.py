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
  :data:`~toolkeeper.contracts.instance_cut.CUT_DEPTH` gives exactly, plus one ``depth`` error
  at the first cut no listed ``type`` error covers (see :func:`_deep_issues`).
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

This module holds the compiled validator, the error policy and the compile cache; the parts it
builds on sit below it: errors as values and paths (:mod:`~toolkeeper.contracts.issues`), the
strict-integer keyword (:mod:`~toolkeeper.contracts.strict_integer`), the message tables
(:mod:`~toolkeeper.contracts.error_messages`) and the cut of an instance too deep or too large to
list every error of (:mod:`~toolkeeper.contracts.instance_cut`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import jsonschema_rs
import msgspec

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.error_messages import PROPERTY_NOUNS, message_for
from toolkeeper.contracts.formats import find_unknown_format
from toolkeeper.contracts.instance_cut import TOO_DEEP, TOO_WIDE, Cut, exact_despite_cuts, fits
from toolkeeper.contracts.issues import ISSUE_ORDER, BoundedIssues, Issue, format_path, value_at
from toolkeeper.contracts.json_values import (
    NOT_JSON_MESSAGES,
    find_not_json,
    has_non_finite,
    is_json_data,
)
from toolkeeper.contracts.references import find_reference_problem
from toolkeeper.contracts.strict_integer import STRICT_INT, StrictInteger, strictify
from toolkeeper.errors import ContractError, SchemaError

__all__ = ["BoundedIssues", "CompiledSchema", "Issue", "compile_schema", "format_path",
           "validate"]

_NOT_JSON_NUMBER = NOT_JSON_MESSAGES["not_finite"]

# Why a schema could not be encoded as JSON (canonical_json raised), by exception type.
_NOT_JSON: dict[type[BaseException], str] = {
    UnicodeEncodeError: "a string is not valid Unicode (a lone surrogate)",
    RecursionError: "it is nested too deeply",
    TypeError: "it holds a value or key that JSON cannot carry",
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
                strictify(schema),
                validate_formats=assert_formats,
                ignore_unknown_formats=not assert_formats,
                keywords={STRICT_INT: StrictInteger},
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
        if fits(instance, budget):
            return BoundedIssues(self._every_error(instance), False)
        cut = Cut(budget)
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
    if name in PROPERTY_NOUNS:
        noun = PROPERTY_NOUNS[name]
        return [((*loc, prop), name, f"{noun} is not allowed") for prop in sorted(kind.value)]
    if name == "required":
        return [((*loc, kind.value), "required", "required property is missing")]
    if name == STRICT_INT:
        return [(loc, "type", str(error.message))]
    if name == "type" and error.instance is None and _non_finite(value_at(instance, loc)):
        return [(loc, "type", _NOT_JSON_NUMBER)]  # the library hands over inf/nan as null
    if name == "falseSchema" and tuple(error.schema_path)[-1:] == ("additionalProperties",):
        # jsonschema-rs reports a bare ``additionalProperties: false`` (no ``properties``) as a
        # false schema at the object's path; name each extra property instead.
        return [((*loc, prop), "additionalProperties", "additional property is not allowed")
                for prop in _extra_properties(schema, tuple(error.schema_path), instance, loc)]
    return [(loc, name, message_for(kind, error))]


def _non_finite(value: Any) -> bool:
    return type(value) is float and not math.isfinite(value)


def _extra_properties(schema: Any, schema_path: tuple[str | int, ...], instance: Any,
                      loc: tuple[str | int, ...]) -> list[str]:
    """Keys of the object at ``loc`` that neither ``properties`` nor ``patternProperties`` of the
    subschema owning ``schema_path[-1]`` admit."""
    owner = value_at(schema, schema_path[:-1])
    target = value_at(instance, loc)
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


def _deep_issues(compiled: CompiledSchema, instance: Any) -> list[Issue]:
    cut = Cut(None)
    return _cut_issues(compiled, instance, cut.copy(instance, ()), cut)


def _cut_issues(compiled: CompiledSchema, instance: Any, shallow: Any, cut: Cut) -> list[Issue]:
    """The errors of ``shallow`` (``instance`` cut by ``cut``) that hold for ``instance``. At a
    container cut short (``cut.wide``) the kept values are real values of it: a kept property
    that is not allowed, a bad name, a duplicate, too many items stay errors
    (:func:`~toolkeeper.contracts.instance_cut.exact_despite_cuts`), and a missing required
    property is one when ``instance`` lacks it too. When nothing is left to list, one error says
    why: ``depth`` at the first deep cut no ``type`` error covers, else ``size`` at the first
    container cut short."""
    found = list(compiled._validator.iter_errors(shallow))
    deep_at, wide_at = set(cut.deep), set(cut.wide)
    kept = [error for error in found
            if exact_despite_cuts(error, deep_at, wide_at, instance)]
    issues = _issues(compiled.schema, kept, shallow)
    typed = {tuple(e.instance_path) for e in kept if e.kind.name in ("type", STRICT_INT)}
    uncovered = [format_path(loc) for loc in cut.deep
                 if not any(loc[:n] in typed for n in range(len(loc) + 1))]
    if uncovered or (not issues and not cut.wide):
        issues.append(Issue(min(uncovered, default="$"), TOO_DEEP, "depth"))
    elif not issues:
        issues.append(Issue(min(format_path(loc) for loc in cut.wide), TOO_WIDE, "size"))
    return sorted(issues, key=ISSUE_ORDER)


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
