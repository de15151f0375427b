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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final
from urllib.parse import unquote, urldefrag, urljoin, urlsplit, uses_relative

__all__ = ["SchemaProblem", "find_reference_problem", "iter_schema_objects"]

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


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """Why a schema is refused: a stable ``code``, the ``location`` of the offending keyword
    inside the schema (keys and indexes) and a message that names no outside content."""

    code: str
    location: Location
    message: str


def iter_schema_objects(root: Any, start: Location = (), *, unknown_keywords: bool = True
                        ) -> Iterator[tuple[Location, dict[str, Any]]]:
    """Every object of ``root`` that may be read as a schema, with its location, in document
    order: members of the name maps are schemas (their names are not keywords), data keywords'
    values never are, and unknown keywords' values are when ``unknown_keywords`` (a pointer can
    make them schemas) and not otherwise (where they are schemas only if referenced)."""
    stack: list[tuple[Location, Any]] = [(start, root)]
    while stack:
        location, node = stack.pop()
        children: list[tuple[Location, Any]] = []
        if isinstance(node, dict):
            yield location, node
            for key, value in node.items():
                if key in _DATA or not (unknown_keywords or key in _SCHEMA_VALUED
                                        or key in _NAME_MAPS):
                    continue
                if key in _NAME_MAPS and isinstance(value, dict):
                    children.extend(((*location, key, name), member)
                                    for name, member in value.items())
                else:
                    children.append(((*location, key), value))
        elif isinstance(node, list):
            children.extend(((*location, index), item) for index, item in enumerate(node))
        stack.extend(reversed(children))


def find_reference_problem(schema: Any) -> SchemaProblem | None:
    """The first reason (in document order) that ``schema`` is not self-contained, or None."""
    return _Document(schema).check()


@dataclass(frozen=True, slots=True)
class _Ref:
    location: Location  # of the reference keyword
    value: str
    base: str


class _Document:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.resources: dict[str, Location] = {}
        self.anchors: dict[tuple[str, str], Location] = {}
        self.refs: dict[Location, _Ref] = {}  # by the location of the reference keyword
        self.walked: set[Location] = set()

    def check(self) -> SchemaProblem | None:
        pending: list[tuple[Location, str]] = [((), DEFAULT_BASE)]
        targets: dict[Location, Location] = {}  # reference keyword -> target object
        while pending:
            self._walk(*pending.pop())
            for at in sorted(self.refs.keys() - targets.keys(), key=_order):
                target = self._resolve(self.refs[at])
                if isinstance(target, SchemaProblem):
                    return target
                targets[at] = target
                if target not in self.walked:
                    pending.append((target, self._base_at(target[:-1])))
        return self._find_cycle(targets)

    def _walk(self, start: Location, outer: str) -> None:
        """Record the resources, anchors and references of the schema at ``start`` (``outer``:
        the base URI around it) that are not recorded yet."""
        bases: dict[Location, str] = {}
        for location, node in iter_schema_objects(_at(self.root, start), start):
            parent = next((bases[location[:n]] for n in range(len(location) - 1, len(start) - 1,
                                                              -1) if location[:n] in bases), outer)
            here = bases[location] = _base_of(node, parent)
            if location in self.walked:
                continue
            self.walked.add(location)
            if here != parent or not location:
                self.resources.setdefault(_normal(here), location)
            for keyword in ("$anchor", "$dynamicAnchor"):
                anchor = node.get(keyword)
                if isinstance(anchor, str):
                    self.anchors.setdefault((_normal(here), anchor), location)
            for keyword in REF_KEYWORDS:
                value = node.get(keyword)
                if isinstance(value, str):
                    self.refs[(*location, keyword)] = _Ref((*location, keyword), value, here)

    def _base_at(self, location: Location) -> str:
        """The base URI in force at ``location`` (every ``$id`` on the way applied)."""
        base = _base_of(self.root, DEFAULT_BASE)
        node = self.root
        for part in location:
            node = node[part]
            base = _base_of(node, base)
        return base

    def _resolve(self, ref: _Ref) -> Location | SchemaProblem:
        uri, fragment = _split(ref.value, ref.base)
        resource = self.resources.get(_normal(uri)) if uri is not None else None
        if uri is None or resource is None:
            return SchemaProblem("schema.ref_external", ref.location,
                                 f"{ref.value!r} is outside the document: a contract is "
                                 "self-contained, only references into it resolve")
        fragment = unquote(fragment)
        if fragment.startswith("/") or not fragment:
            target = _pointer(self.root, resource, fragment)
        else:
            target = self.anchors.get((_normal(uri), fragment))
        if target is None:
            return SchemaProblem("schema.ref_unresolved", ref.location,
                                 f"{ref.value!r} points at nothing in the document")
        return target

    def _find_cycle(self, targets: dict[Location, Location]) -> SchemaProblem | None:
        """The reference closing the first loop of in-place steps found by a depth-first
        search from every schema object in document order."""
        done: set[Location] = set()
        for start in sorted(self.walked, key=_order):
            trail: list[Location | None] = []  # the reference taken into each object on it
            on_trail: dict[Location, int] = {}
            stack: list[tuple[Location, Location | None, bool]] = [(start, None, False)]
            while stack:
                node, via, leaving = stack.pop()
                if leaving:
                    del on_trail[node]
                    trail.pop()
                    done.add(node)
                elif node in on_trail:
                    loop = [*trail[on_trail[node] + 1:], via]
                    closing = next(r for r in reversed(loop) if r is not None)
                    return SchemaProblem("schema.ref_cycle", closing,
                                         "references loop back to the same schema without "
                                         "descending into the instance")
                elif node not in done:
                    on_trail[node] = len(trail)
                    trail.append(via)
                    stack.append((node, via, True))
                    stack.extend((step, ref, False)
                                 for step, ref in reversed(list(self._in_place(node, targets))))
        return None

    def _in_place(self, location: Location, targets: dict[Location, Location]
                  ) -> Iterator[tuple[Location, Location | None]]:
        """Where evaluation goes next on the same instance: (object, reference taken or None)."""
        node = _at(self.root, location)
        if not isinstance(node, dict):
            return
        for keyword in REF_KEYWORDS:
            if (*location, keyword) in targets:
                yield targets[(*location, keyword)], (*location, keyword)
        for keyword in _IN_PLACE_ONE:
            if isinstance(node.get(keyword), dict):
                yield (*location, keyword), None
        for keyword in _IN_PLACE_MANY:
            value = node.get(keyword)
            if isinstance(value, list):
                yield from (((*location, keyword, i), None) for i in range(len(value)))
        dependent = node.get("dependentSchemas")
        if isinstance(dependent, dict):
            yield from (((*location, "dependentSchemas", name), None) for name in dependent)


def _order(location: Location) -> tuple[tuple[int, str], ...]:
    return tuple((0, f"{part:020d}") if isinstance(part, int) else (1, part)
                 for part in location)


def _at(root: Any, location: Location) -> Any:
    node = root
    for part in location:
        node = node[part]
    return node


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
    """A URI compared as the validator does: scheme and host case-insensitive, dot segments
    removed, an empty path is ``/``."""
    parts = urlsplit(uri)
    segments: list[str] = []
    for segment in parts.path.split("/"):
        if segment == "..":
            if len(segments) > 1:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    path = "/".join(segments) or "/"
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}" + (
        f"?{parts.query}" if parts.query else "")


def _pointer(root: Any, resource: Location, fragment: str) -> Location | None:
    """The location a JSON pointer names inside the resource at ``resource``, or None."""
    node = _at(root, resource)
    location = list(resource)
    for raw in fragment.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
            location.append(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            location.append(int(part))
        else:
            return None
    return tuple(location)
