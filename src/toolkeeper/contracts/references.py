"""Self-contained schemas: every reference resolves inside its own document (SPEC 1.2).

A contract is the whole truth about a tool: nothing it means may live in a file, on a host or
behind a URN that can change, hang or leak after it was published. :func:`find_reference_problem`
says why a schema is not self-contained, with the location of the offending keyword, and
:func:`~toolkeeper.contracts.validate.compile_schema` refuses such a schema (so do contract
parsing, the CLI's bare schemas, estates and the gateway, which all compile through it).

What resolves. The document is one or more *resources*: the root, and every subschema that
declares ``$id`` (its URI resolved against the enclosing one; the root's base is the
validator's default ``json-schema:///`` when it declares none). A ``$ref`` or ``$dynamicRef``
string is resolved against the base URI where it stands (RFC 3986; a relative reference under
a base whose scheme urllib cannot join, such as ``urn:``, names no resource). It must name one
of the document's resources, and its fragment must be empty, a JSON pointer that exists inside
that resource, or a plain name that ``$anchor``/``$dynamicAnchor`` declares in it. A
``$dynamicRef`` is checked as a ``$ref``: within one document its initial target is what the
validator starts from. ``$schema`` is not a reference here (the validator is pinned to 2020-12
and never loads a meta-schema).

Refused, each with the location of the reference keyword (``$ref`` or ``$dynamicRef``):

=========================  =================================================================
``schema.ref_external``    any other document: ``file:``, ``http(s):``, ``urn:``, a relative
                           URI naming another file, a JSON Schema meta-schema
``schema.ref_unresolved``  a pointer or anchor that this document does not hold
``schema.ref_cycle``       references that lead back to the same schema without descending
                           into the instance (through ``$ref``/``$dynamicRef`` and in-place
                           applicators): an evaluation that never ends, which the validator
                           silently treats as accepting everything
=========================  =================================================================

Every object outside data keywords (``const``, ``enum``, ``default``, ``examples``) is read as a
schema, unknown keywords' values included: a pointer may make any of them one. A pointer into
data (``#/enum/0``) makes its target a schema, and the target is checked as one.

Cost. Every reference is resolved once, when a walk finds it, and every object is walked and
searched for cycles once; locations are parent links until one is reported. So the check is
linear in the document, for long chains, wide fan-out, references into data and any depth
(nothing recurses). URIs compare as the validator compares them (case, an http(s) default port,
percent-encoded unreserved characters in the host, dot segments); any other spelling of the
same resource (percent-encodings in the path, an empty port) names no resource here and is
refused as ``schema.ref_external``, which is safe: the validator retrieves nothing either way.
An array index in a pointer is ASCII decimal without a leading zero (RFC 6901).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final
from urllib.parse import unquote, urldefrag, urljoin, urlsplit, uses_relative

from toolkeeper.contracts.json_values import Link

__all__ = ["SchemaProblem", "find_reference_problem", "iter_schema_objects", "remove_dot_segments"]

Location = tuple[str | int, ...]

REF_KEYWORDS: Final = ("$ref", "$dynamicRef")
#: The validator's base URI for a document that declares no root ``$id``.
DEFAULT_BASE: Final = "json-schema:///"
# Keywords whose values are JSON data, never schemas.
_DATA: Final = frozenset({"const", "enum", "default", "examples"})
# Keywords whose values map names (never keywords) to schemas.
_NAME_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "definitions",
                               "dependentSchemas"})
# Keywords whose value is a schema, or a list of schemas (with the name maps: every place
# 2020-12 reads a schema without a reference pointing there).
_SCHEMA_VALUED: Final = frozenset({
    "items", "prefixItems", "additionalProperties", "propertyNames", "contains", "not", "if",
    "then", "else", "allOf", "anyOf", "oneOf", "unevaluatedProperties", "unevaluatedItems",
    "contentSchema"})
# In-place applicators: their subschemas apply to the very instance of their parent.
_IN_PLACE_ONE: Final = ("not", "if", "then", "else")
_IN_PLACE_MANY: Final = ("allOf", "anyOf", "oneOf")
# An array index in a JSON pointer (RFC 6901): ASCII digits, no leading zero, and short enough
# that int() never meets its digit limit (no array holds 10**18 items).
_INDEX: Final = re.compile(r"0|[1-9][0-9]{0,17}")
# Percent-encodings of unreserved characters (RFC 3986 2.3): the same host either way.
_UNRESERVED: Final = re.compile(r"%(2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])")
_DEFAULT_PORTS: Final = {"http": ":80", "https": ":443"}


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """Why a schema is refused: a stable ``code``, the ``location`` of the offending keyword
    inside the schema (keys and indexes) and a message that names no outside content."""

    code: str
    location: Location
    message: str


def iter_schema_objects(root: Any, *, unknown_keywords: bool = True
                        ) -> Iterator[tuple[Link, dict[str, Any]]]:
    """Every object of ``root`` that may be read as a schema, with its location as a parent
    link (:func:`~toolkeeper.contracts.json_values.link_parts` makes it a path: linear in the
    depth, however deep), in document order: members of the name maps are schemas (their names
    are not keywords), data keywords' values never are, and unknown keywords' values are when
    ``unknown_keywords`` (a pointer can make them schemas) and not otherwise (where they are
    schemas only if referenced)."""
    stack: list[tuple[Link, Any]] = [(None, root)]
    while stack:
        link, node = stack.pop()
        children: list[tuple[Link, Any]] = []
        if isinstance(node, dict):
            yield link, node
            for key, value in node.items():
                if key in _DATA or not (unknown_keywords or key in _SCHEMA_VALUED
                                        or key in _NAME_MAPS):
                    continue
                if key in _NAME_MAPS and isinstance(value, dict):
                    children.extend((((link, key), name), member)
                                    for name, member in value.items())
                else:
                    children.append(((link, key), value))
        elif isinstance(node, list):
            children.extend(((link, index), item) for index, item in enumerate(node))
        stack.extend(reversed(children))


def find_reference_problem(schema: Any) -> SchemaProblem | None:
    """The first reason (in document order) that ``schema`` is not self-contained, or None."""
    return _Document(schema).check()


@dataclass(frozen=True, slots=True)
class _Ref:
    at: int  # the object holding the reference keyword
    keyword: str
    value: str
    base: str


class _Document:
    """The document's containers as integer ids with parent links (a location is a path only
    when it is reported), so every step below is linear in the document, whatever its depth."""

    def __init__(self, root: Any) -> None:
        self.values: list[Any] = [root]  # by id; the root is 0
        self.links: list[tuple[int, str | int] | None] = [None]  # (parent id, key) by id
        self.ids: dict[tuple[int, str | int], int] = {}
        self.bases: dict[int, str] = {}  # base URI in force at an object (its ``$id`` applied)
        self.walked: set[int] = set()
        self.order: list[int] = []  # walked objects, each walk in document order
        self.resources: dict[str, int] = {}
        self.anchors: dict[tuple[str, str], int] = {}
        self.targets: dict[tuple[int, str], int] = {}  # (object, ref keyword) -> target
        self.refs: deque[_Ref] = deque()  # found by a walk, not resolved yet

    def check(self) -> SchemaProblem | None:
        """Resolve every reference once, as walks find them; a target that is not a schema yet
        (a pointer into data) is walked once all references known so far are resolved."""
        pending: list[int] = [0]
        while pending:
            target = pending.pop()
            if target not in self.walked:
                self._walk(target, self._base_above(target))
            while self.refs:
                ref = self.refs.popleft()
                resolved = self._resolve(ref)
                if isinstance(resolved, SchemaProblem):
                    return resolved
                self.targets[(ref.at, ref.keyword)] = resolved
                if resolved not in self.walked:
                    pending.append(resolved)
        return self._find_cycle()

    def _child(self, parent: int, key: str | int) -> int:
        at = self.ids.get((parent, key))
        if at is None:
            at = self.ids[(parent, key)] = len(self.values)
            self.values.append(self.values[parent][key])
            self.links.append((parent, key))
        return at

    def _location(self, at: int) -> Location:
        parts: list[str | int] = []
        link = self.links[at]
        while link is not None:
            at, key = link
            parts.append(key)
            link = self.links[at]
        return tuple(reversed(parts))

    def _ref_location(self, ref: _Ref) -> Location:
        return (*self._location(ref.at), ref.keyword)

    def _walk(self, start: int, outer: str) -> None:
        """Record the resources, anchors and references of the schema at ``start`` (``outer``:
        the base URI around it); what an earlier walk recorded is not walked again."""
        stack: list[tuple[int, str]] = [(start, outer)]
        while stack:
            at, parent = stack.pop()
            node = self.values[at]
            if at in self.walked or not isinstance(node, dict | list):
                continue
            self.walked.add(at)
            if isinstance(node, list):
                stack.extend((self._child(at, i), parent) for i in reversed(range(len(node))))
                continue
            self.order.append(at)
            here = self.bases[at] = _base_of(node, parent)
            if here != parent or at == 0:
                self.resources.setdefault(_normal(here), at)
            for keyword in ("$anchor", "$dynamicAnchor"):
                anchor = node.get(keyword)
                if isinstance(anchor, str):
                    self.anchors.setdefault((_normal(here), anchor), at)
            for keyword in REF_KEYWORDS:
                value = node.get(keyword)
                if isinstance(value, str):
                    self.refs.append(_Ref(at, keyword, value, here))
            stack.extend(reversed([(child, here) for child in self._schema_children(at, node)]))

    def _schema_children(self, at: int, node: dict[str, Any]) -> Iterator[int]:
        for key, value in node.items():
            if key in _DATA or not isinstance(value, dict | list):
                continue
            if key in _NAME_MAPS and isinstance(value, dict):
                names = self._child(at, key)
                yield from (self._child(names, name) for name in value)
            else:
                yield self._child(at, key)

    def _base_above(self, at: int) -> str:
        """The base URI in force around ``at`` (every ``$id`` on the way from the root applied;
        what is computed is kept, so each object's base is computed once)."""
        link = self.links[at]
        if link is None:
            return DEFAULT_BASE
        path: list[int] = []
        at = link[0]
        while at not in self.bases:
            path.append(at)
            above = self.links[at]
            if above is None:
                break
            at = above[0]
        base = self.bases.get(at, DEFAULT_BASE)
        for at in reversed(path):
            base = self.bases[at] = _base_of(self.values[at], base)
        return base

    def _resolve(self, ref: _Ref) -> int | SchemaProblem:
        uri, fragment = _split(ref.value, ref.base)
        resource = self.resources.get(_normal(uri)) if uri is not None else None
        if uri is None or resource is None:
            return SchemaProblem("schema.ref_external", self._ref_location(ref),
                                 f"{ref.value!r} is outside the document: a contract is "
                                 "self-contained, only references into it resolve")
        fragment = unquote(fragment)
        if fragment.startswith("/") or not fragment:
            target = self._pointer(resource, fragment)
        else:
            target = self.anchors.get((_normal(uri), fragment))
        if target is None:
            return SchemaProblem("schema.ref_unresolved", self._ref_location(ref),
                                 f"{ref.value!r} points at nothing in the document")
        return target

    def _pointer(self, resource: int, fragment: str) -> int | None:
        """The object a JSON pointer names inside the resource ``resource``, or None."""
        at = resource
        for raw in fragment.split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            node = self.values[at]
            if isinstance(node, dict) and part in node:
                at = self._child(at, part)
            elif isinstance(node, list) and _INDEX.fullmatch(part) and int(part) < len(node):
                at = self._child(at, int(part))
            else:
                return None
        return at

    def _find_cycle(self) -> SchemaProblem | None:
        """The reference closing the first loop of in-place steps found by a depth-first
        search from every schema object in walk order (each object is searched once)."""
        done: set[int] = set()
        for start in self.order:
            trail: list[tuple[int, str] | None] = []  # the reference taken into each object
            on_trail: dict[int, int] = {}
            stack: list[tuple[int, tuple[int, str] | None, bool]] = [(start, None, False)]
            while stack:
                at, via, leaving = stack.pop()
                if leaving:
                    del on_trail[at]
                    trail.pop()
                    done.add(at)
                elif at in on_trail:
                    loop = [*trail[on_trail[at] + 1:], via]
                    closing = next(r for r in reversed(loop) if r is not None)
                    return SchemaProblem("schema.ref_cycle",
                                         (*self._location(closing[0]), closing[1]),
                                         "references loop back to the same schema without "
                                         "descending into the instance")
                elif at not in done:
                    on_trail[at] = len(trail)
                    trail.append(via)
                    stack.append((at, via, True))
                    stack.extend((step, ref, False)
                                 for step, ref in reversed(list(self._in_place(at))))
        return None

    def _in_place(self, at: int) -> Iterator[tuple[int, tuple[int, str] | None]]:
        """Where evaluation goes next on the same instance: (object, reference taken or None)."""
        node = self.values[at]
        if not isinstance(node, dict):
            return
        for keyword in REF_KEYWORDS:
            target = self.targets.get((at, keyword))
            if target is not None:
                yield target, (at, keyword)
        for keyword in _IN_PLACE_ONE:
            if isinstance(node.get(keyword), dict):
                yield self._child(at, keyword), None
        for keyword in _IN_PLACE_MANY:
            value = node.get(keyword)
            if isinstance(value, list):
                many = self._child(at, keyword)
                yield from ((self._child(many, i), None) for i in range(len(value)))
        dependent = node.get("dependentSchemas")
        if isinstance(dependent, dict):
            names = self._child(at, "dependentSchemas")
            yield from ((self._child(names, name), None) for name in dependent)


def _base_of(node: Any, base: str) -> str:
    declared = node.get("$id") if isinstance(node, dict) else None
    if not isinstance(declared, str):
        return base
    joined = _join(base, declared)
    return urldefrag(joined if joined is not None else declared).url


def _join(base: str, reference: str) -> str | None:
    """RFC 3986 resolution as far as urllib can do it; None when it cannot (a relative
    reference under a base whose scheme urllib does not join)."""
    if urlsplit(reference).scheme:
        return reference
    scheme = urlsplit(base).scheme
    if scheme == "json-schema":  # hierarchical like file:///, which urllib knows how to join
        return scheme + urljoin("file" + base[len(scheme):], reference)[len("file"):]
    return urljoin(base, reference) if scheme in uses_relative else None


def _split(reference: str, base: str) -> tuple[str | None, str]:
    """(the URI it names, without fragment; its fragment)."""
    if reference.startswith("#"):
        return base, reference[1:]
    joined = _join(base, reference)
    if joined is None:
        return None, ""
    uri, fragment = urldefrag(joined)
    return uri, fragment


@lru_cache(maxsize=1024)
def _normal(uri: str) -> str:
    """A URI compared as the validator does: scheme and host case-insensitive, a host's
    percent-encoded unreserved characters decoded and an http(s) default port dropped (RFC
    3986 6.2.2-6.2.3), dot segments removed, an empty path is ``/``."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    userinfo, at, host = parts.netloc.rpartition("@")
    userinfo, host = userinfo.lower(), _UNRESERVED.sub(_decoded, host).lower()
    host = host.removesuffix(_DEFAULT_PORTS.get(scheme, "\0"))
    path = remove_dot_segments(parts.path)
    return f"{scheme}://{userinfo}{at}{host}{path}" + (f"?{parts.query}" if parts.query else "")


def remove_dot_segments(path: str) -> str:
    """A URI path with its ``.`` and ``..`` segments resolved (never above the root); an
    empty path is ``/``."""
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(segments) > 1:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    return "/".join(segments) or "/"


def _decoded(match: re.Match[str]) -> str:
    return chr(int(match[1], 16))
