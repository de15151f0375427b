"""Local ``$ref`` (and ``$dynamicRef``) resolution and reference-aware equality for the change
classifier (SPEC 1.4).

A :class:`SchemaDocument` wraps one schema document (the before or the after side) and resolves
local references: JSON pointers (``#/$defs/x``, ``#/definitions/x``, ``#/properties/a``), the
root (``#``) and plain-name anchors (``#name`` via ``$anchor``), also when spelled as a URI that
resolves against the root ``$id`` to the document itself. Anything else (a remote or relative
URI) is :class:`Unresolvable`, and the classifier fails closed on it.

Resolution is cached per reference node, so every node the classifier walks is either an object
of the document or one cached derivative of it: object identities are stable for the whole run,
which is what makes the classifier's "compare a reference pair once" memo terminate on cyclic
schemas. A reference with constraint siblings is merged with its target when they cannot
interact, and otherwise becomes ``{"allOf": [target, siblings]}`` (exact 2020-12 semantics),
except beside ``unevaluated*``, which must see the target's annotations: ``{**siblings,
"allOf": [target]}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.references import remove_dot_segments
from toolkeeper.contracts.validate import format_path

__all__ = [
    "DATA_KEYWORDS",
    "DEFINITION_KEYWORDS",
    "DOC_KEYWORDS",
    "REF_KEYWORDS",
    "SchemaDocument",
    "Unresolvable",
    "child_path",
    "is_ref",
    "ref_keyword",
    "same_schema",
    "value_key",
]

#: Annotations only: a change is PATCH, flagged for review (descriptions steer models).
DOC_KEYWORDS = ("$comment", "deprecated", "description", "examples", "readOnly", "title",
                "writeOnly", "x-description", "x-docs", "x-example", "x-examples", "x-title")
#: The reference keywords. In a document without embedded resources (anything else fails
#: closed) ``$dynamicRef`` means ``$ref``: the outermost dynamic scope is the root resource,
#: which holds the very anchor the reference first resolves to (2020-12 section 8.2.3.2).
REF_KEYWORDS = ("$ref", "$dynamicRef")
#: Keywords whose values are JSON data, not schemas: a ``$ref`` inside them is just a string.
DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
#: Keywords that only hold definitions reached through references; never compared directly.
DEFINITION_KEYWORDS = frozenset({"$defs", "definitions", "$anchor", "$dynamicAnchor"})
# Annotation keywords: a reference sibling with only these is an overlay, not a constraint.
_ANNOTATIONS = frozenset({"title", "description", "examples", "$comment", "deprecated",
                          "readOnly", "writeOnly", "default"})
# Keywords whose meaning depends on siblings: never split such a group across a merge.
_GROUPS = (
    frozenset({"properties", "patternProperties", "additionalProperties"}),
    frozenset({"prefixItems", "items"}),
    frozenset({"contains", "minContains", "maxContains"}),
    frozenset({"if", "then", "else"}),
)
_UNEVALUATED = frozenset({"unevaluatedProperties", "unevaluatedItems"})
#: Keywords whose values map names (never keywords) to schemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                          "dependentSchemas"})
#: Keywords whose value is a schema, or a list of schemas, at a schema position.
_SCHEMA_VALUED = frozenset({"items", "additionalProperties", "propertyNames", "contains", "not",
                            "if", "then", "else", "allOf", "anyOf", "oneOf", "prefixItems",
                            *_UNEVALUATED})
_NEVER_MERGE = _UNEVALUATED | {"$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$id", "$schema"}


@dataclass(frozen=True, slots=True)
class Unresolvable:
    """A reference the classifier cannot follow; ``reason`` says why (for the Change reason).
    ``comparable``: two equal ones stand for the same schema (the same remote URI, the same empty
    cycle); otherwise nothing is known and equal-looking references are not trusted."""

    reason: str
    comparable: bool = False


def ref_keyword(node: Any) -> str | None:
    """The reference keyword of a schema node (``$ref`` or ``$dynamicRef``), if any."""
    if isinstance(node, dict):
        for keyword in REF_KEYWORDS:
            if keyword in node:
                return keyword
    return None


def is_ref(node: Any) -> bool:
    return ref_keyword(node) is not None


def _show_ref(ref: Any) -> str:
    """A reference value for a reason."""
    return repr(ref) if isinstance(ref, str) else canonical_json(ref).decode("utf-8")


def child_path(path: str, *parts: str | int) -> str:
    """Extend a JSON path: ``child_path("$", "properties", "odd key")`` -> ``$.properties["odd key"]``."""
    return path + format_path(parts)[1:]


def _normalize(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else value
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _normalize(v) for k, v in value.items()}
    return repr(value)


def value_key(value: Any) -> bytes:
    """A key under which JSON values are equal exactly when JSON Schema says so: ``1 == 1.0``,
    ``true != 1``, object key order is irrelevant."""
    return canonical_json(_normalize(value))


class SchemaDocument:
    """One schema document and its cached reference resolutions."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self._resolved: dict[int, Any] = {}
        self._keep: list[Any] = []  # keeps resolved derivatives alive: ids stay unique
        self._anchors: dict[str, Any] | None = None
        self._embedded = _embeds_resources(root)

    def resolve(self, node: Any) -> Any:
        """The schema a node stands for: the node itself unless it is a reference; else the
        target (chains followed, siblings applied) or an :class:`Unresolvable`."""
        keyword = ref_keyword(node)
        if keyword is None:
            return node
        key = id(node)
        if key in self._resolved:
            return self._resolved[key]
        self._resolved[key] = Unresolvable(
            f"{keyword} {_show_ref(node[keyword])} is a cycle of references", comparable=True)
        result = self._resolve_uncached(node)
        self._resolved[key] = result
        self._keep.append(result)
        return result

    def mentions(self, keyword: str, node: Any) -> bool:
        """Whether ``keyword`` occurs in the schema ``node`` or anything it references (or may
        occur: a reference that cannot be followed may hold it)."""
        seen: set[int] = set()
        stack = [node]
        while stack:
            current = self.resolve(stack.pop())
            if isinstance(current, Unresolvable):
                return True
            if id(current) in seen:
                continue
            seen.add(id(current))
            if isinstance(current, dict):
                if keyword in current:
                    return True
                for k, v in current.items():
                    if k in _SCHEMA_MAPS and isinstance(v, dict):
                        stack.extend(v.values())  # its keys are names, not keywords
                    elif k not in DATA_KEYWORDS:
                        stack.append(v)
            elif isinstance(current, list):
                stack.extend(current)
        return False

    def _resolve_uncached(self, node: dict[str, Any]) -> Any:
        keyword = ref_keyword(node) or "$ref"
        ref = node[keyword]
        if not isinstance(ref, str) or all(k in node for k in REF_KEYWORDS):
            return Unresolvable(f"{keyword} {_show_ref(ref)} is not a lone reference string")
        if self._embedded:
            return Unresolvable(f"{keyword} {ref!r} is in a document that embeds resources ($id below "
                                "the root), whose reference resolution is not analysed")
        fragment = self._local_fragment(ref)
        if fragment is None:
            return Unresolvable(f"{keyword} {ref!r} is not local to the document", comparable=True)
        if isinstance(fragment, Unresolvable):
            return fragment
        target = self._lookup(fragment)
        if target is _MISSING:
            return Unresolvable(f"{keyword} {ref!r} does not resolve in the document")
        target = self.resolve(target)
        rest = {k: v for k, v in node.items() if k != keyword and k not in DEFINITION_KEYWORDS}
        if not rest or isinstance(target, Unresolvable) or target is False:
            return target
        if target is True:
            return rest
        if not isinstance(target, dict):
            return Unresolvable(f"{keyword} {ref!r} does not point at a schema")
        if rest.keys() & _UNEVALUATED:
            # unevaluated* beside a $ref sees what the target evaluated: both stay in one
            # schema object ($ref and allOf are both in-place applicators there).
            if "allOf" in rest:
                return Unresolvable(f"{keyword} {ref!r} sits beside unevaluated* and allOf: not "
                                    "analysed")
            return {**rest, "allOf": [target]}
        if _can_merge(target, rest):
            merged = {k: v for k, v in target.items() if k not in DEFINITION_KEYWORDS}
            merged.update(rest)
            return merged
        return {"allOf": [target, rest]}

    def _local_fragment(self, ref: str) -> str | Unresolvable | None:
        """The fragment of a reference into this document; None for another document; an
        :class:`Unresolvable` when that cannot be told. The validator resolves a reference
        against the root ``$id`` (``json-schema:///`` without one) and normalizes URIs, so
        ``https://example.com/s#/$defs/x`` and ``s#/$defs/x`` under that ``$id`` are local."""
        if ref.startswith("#"):
            return ref[1:]
        base = self.root.get("$id") if isinstance(self.root, dict) else None
        base = base if isinstance(base, str) else _DEFAULT_BASE
        uri, _, fragment = urljoin(base, ref).partition("#")
        here, there = _normal(base.partition("#")[0]), _normal(uri)
        if here == there:
            return fragment
        if here[:2] == there[:2]:
            # Same scheme and authority: a spelling the normalization here misses may still
            # name this document; two equal ones are not trusted to mean the same schema.
            return Unresolvable(f"reference {ref!r} may or may not name the document itself")
        return None

    def _lookup(self, fragment: str) -> Any:
        if fragment == "":
            return self.root
        if not fragment.startswith("/"):
            return self._anchor_index().get(fragment, _MISSING)
        node = self.root
        for raw in fragment[1:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return _MISSING
        return node

    def _anchor_index(self) -> dict[str, Any]:
        if self._anchors is None:
            found: dict[str, Any] = {}
            stack = [self.root]
            while stack:
                node = stack.pop()
                if isinstance(node, dict):
                    for keyword in ("$anchor", "$dynamicAnchor"):
                        anchor = node.get(keyword)
                        if isinstance(anchor, str):
                            # A name given to two schemas: which one wins is not analysed.
                            kept = found.setdefault(anchor, node)
                            found[anchor] = kept if kept is node else _MISSING
                    stack.extend(v for k, v in node.items() if k not in DATA_KEYWORDS)
                elif isinstance(node, list):
                    stack.extend(node)
            self._anchors = found
        return self._anchors


_MISSING: Any = object()
#: The base URI the validator gives a document without a root ``$id``.
_DEFAULT_BASE = "json-schema:///"


def _normal(uri: str) -> tuple[str, str, str, str]:
    """A URI without fragment as (scheme, authority, path, query), compared loosely: scheme and
    host are case-insensitive, dot segments are removed, an empty path is ``/``."""
    parts = urlsplit(uri)
    return (parts.scheme.lower(), parts.netloc.lower(), remove_dot_segments(parts.path),
            parts.query)


def _embeds_resources(root: Any) -> bool:
    """Whether a schema below the root declares ``$id`` (it would re-base references)."""
    stack = [v for k, v in root.items() if k not in DATA_KEYWORDS] if isinstance(root, dict) \
        else []
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "$id" in node:
                return True
            stack.extend(v for k, v in node.items() if k not in DATA_KEYWORDS)
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _can_merge(target: dict[str, Any], rest: dict[str, Any]) -> bool:
    """Whether ``{**target, **rest}`` means the same as ``allOf: [target, rest]``: no shared
    constraint keyword, and no sibling-dependent keyword group split across the two."""
    t_keys = set(target) - DEFINITION_KEYWORDS - _ANNOTATIONS
    r_keys = set(rest) - _ANNOTATIONS
    if not r_keys:
        return True  # annotations constrain nothing: an overlay on any target ($id, $schema...)
    if t_keys & r_keys or (t_keys | r_keys) & _NEVER_MERGE:
        return False
    return not any(group & t_keys and group & r_keys for group in _GROUPS)


def same_schema(before: SchemaDocument, b: Any, after: SchemaDocument, a: Any, *,
                ignore: frozenset[str] = frozenset()) -> bool:
    """Reference-aware structural equality: equal JSON, where two equal ``$ref`` strings also need
    equal targets (each document resolves its own). Cycles are assumed equal on revisit, which
    is exact for this (greatest fixed point) equality. ``ignore``: keywords (annotations) left
    out wherever a schema certainly stands (the root, the values of ``properties`` and the other
    name maps, applicator subschemas); anything else, unknown keywords' values too, is compared
    in full."""
    return _same(before, b, after, a, set(), ignore)


def _same(before: SchemaDocument, b: Any, after: SchemaDocument, a: Any,
          memo: set[tuple[int, int, bool]], ignore: frozenset[str]) -> bool:
    if isinstance(b, dict) and isinstance(a, dict):
        keys = set(b) - DEFINITION_KEYWORDS - ignore
        if keys != set(a) - DEFINITION_KEYWORDS - ignore:
            return False
        kb, ka = ref_keyword(b), ref_keyword(a)
        if kb is not None or ka is not None:
            if kb != ka or value_key(b[kb]) != value_key(a[ka]):
                return False
            pair = (id(b), id(a), bool(ignore))
            if pair in memo:
                return True
            memo.add(pair)
            rb, ra = before.resolve(b), after.resolve(a)
            if isinstance(rb, Unresolvable) or isinstance(ra, Unresolvable):
                return isinstance(rb, Unresolvable) and rb.comparable and rb == ra
            return _same(before, rb, after, ra, memo, ignore)
        for key in sorted(keys):
            vb, va = b[key], a[key]
            if key in DATA_KEYWORDS:
                if value_key(vb) != value_key(va):
                    return False
            elif ignore and key in _SCHEMA_MAPS and isinstance(vb, dict) and isinstance(va, dict):
                if set(vb) != set(va) or not all(
                        _same(before, vb[n], after, va[n], memo, ignore) for n in sorted(vb)):
                    return False
            elif not _same(before, vb, after, va, memo,
                           ignore if key in _SCHEMA_VALUED else frozenset()):
                return False
        return True
    if isinstance(b, list) and isinstance(a, list):
        return len(b) == len(a) and all(
            _same(before, x, after, y, memo, ignore) for x, y in zip(b, a, strict=True))
    if isinstance(b, (dict, list)) or isinstance(a, (dict, list)):
        return False
    return value_key(b) == value_key(a)
