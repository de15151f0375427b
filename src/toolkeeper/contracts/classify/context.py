"""The change classifier's context: one per comparison, the one thing every keyword handler takes.

A :class:`Ctx` holds a comparison's direction, both documents, the changes found and the memos;
:meth:`Ctx.compare` resolves local references (each document against its own root), memoizes
reference pairs so a recursive schema terminates (a pair is compared once per instance location;
the memo is keyed by object identities that :class:`SchemaDocument` keeps stable), skips pairs
that are equal, and hands the rest to the walk's step, which runs the keyword handlers of its
table (:mod:`toolkeeper.contracts.classify.walk`). Handlers import this module, never the walk.

Some handlers ask the classifier a question in a scratch context (``not`` in the opposite
direction, ``oneOf`` to see every change inside it, the member probes "does this schema accept
every value of that one"). Scratch contexts share the set of questions in progress, so one that
reaches a pair its ancestors are still comparing (a recursive schema) assumes it instead of
recursing forever: the ancestor reports that pair's changes. Unless that pair is equal but for
annotations (so it accepts the same values), it also marks itself ``assumed``: a ``oneOf``,
whose verdict depends on whether anything inside changed at all, then fails closed unless its
branches are provably disjoint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolkeeper.contracts.changes import Change
from toolkeeper.contracts.classify.location import Location, location_of
from toolkeeper.contracts.classify.refs import (
    DOC_KEYWORDS,
    SchemaDocument,
    Unresolvable,
    child_path,
    ref_keyword,
    same_schema,
)
from toolkeeper.contracts.classify.rules import RULES

__all__ = ["Ctx", "Handler", "HandlerTable", "Step"]

#: A keyword handler: ``(ctx, before, after, path)`` for one resolved pair of schema objects.
Handler = Callable[["Ctx", dict[str, Any], dict[str, Any], str], None]
#: The handler table: the keywords each handler owns, in the order changes are found in.
HandlerTable = tuple[tuple[frozenset[str], Handler], ...]
#: The walk's comparison of one resolved pair (booleans and non-schemas included).
Step = Callable[["Ctx", Any, Any, str], None]

_FLIP = {"input": "output", "output": "input"}
#: Keywords that constrain no value: a pair differing only in these accepts the same values.
_ANNOTATIONS = frozenset(DOC_KEYWORDS) | {"default"}


@dataclass
class Ctx:
    """One comparison: direction (``input`` contravariant, ``output`` covariant), both documents,
    whether each side asserts formats, the changes found, the reference-pair memo, the
    questions (pair, location, direction) in progress (shared with every scratch context made
    from it), and the before schema at the root of the instance location being compared."""
    # A scratch context that assumes a question in progress does not see that pair's changes:
    # what it concludes from an absence of changes (a oneOf's exclusivity) must not rely on it.

    direction: str
    before: SchemaDocument
    after: SchemaDocument
    assert_formats: tuple[bool, bool]
    #: The walk's comparison of one resolved pair (it reads the handler table), given by the
    #: walk that made the root context: the context compares, the walk owns the keywords.
    step: Step
    changes: list[Change] = field(default_factory=list)
    visited: set[tuple[int, int, int]] = field(default_factory=set)
    _same: dict[tuple[int, int], bool] = field(default_factory=dict)
    active: set[tuple[int, int, int, str]] = field(default_factory=set)
    location_root: Any = None
    locations: dict[int, Location] = field(default_factory=dict)
    #: Whether this context assumed a pair an outer comparison is still comparing (a pair
    #: that differs: its changes are reported out there, not seen here).
    assumed: bool = False

    def emit(self, path: str, suffix: str, reason: str) -> None:
        row = RULES[f"{self.direction}.{suffix}"]
        self.changes.append(Change(path, row.id, row.bump, reason))

    def same(self, b: Any, a: Any) -> bool:
        if not isinstance(b, (dict, list)) or not isinstance(a, (dict, list)):
            return same_schema(self.before, b, self.after, a)
        key = (id(b), id(a))  # containers of the documents: alive, so ids are stable
        if key not in self._same:
            self._same[key] = same_schema(self.before, b, self.after, a)
        return self._same[key]

    def unchanged(self, b: Any, a: Any) -> bool:
        """Whether ``b`` and ``a`` accept the same values: equal (:meth:`same`), and no format
        in them starts or stops asserting. Handlers that cannot compare a subschema (it is not
        monotone) decide with this, never with :meth:`same` alone."""
        return self.same(b, a) and (self.assert_formats[0] == self.assert_formats[1]
                                    or not self.before.mentions("format", b))

    def equivalent(self, b: Any, a: Any) -> bool:
        """Whether ``b`` and ``a`` accept the same values for certain: equal but for annotations
        (titles, descriptions, examples, ...), and no format in them starts or stops asserting."""
        return same_schema(self.before, b, self.after, a, ignore=_ANNOTATIONS) and (
            self.assert_formats[0] == self.assert_formats[1]
            or not self.before.mentions("format", b))

    def compare(self, b: Any, a: Any, path: str, *, in_place: bool = False) -> None:
        """Compare the schemas ``b`` (before) and ``a`` (after) found at ``path``; ``in_place``
        when they apply to the same instance location as the schema being compared (a
        combinator's subschemas), else they start a new location (a property value, an item)."""
        rb, ra = self.before.resolve(b), self.after.resolve(a)
        bad = rb if isinstance(rb, Unresolvable) else ra
        if isinstance(bad, Unresolvable):
            # Format assertion switched: what it cannot see may hold a format.
            flipped = self.assert_formats[0] != self.assert_formats[1]
            if rb != ra or not self.same(b, a) or flipped:
                keyword = ref_keyword(b if rb is bad else a) or "$ref"
                self.emit(child_path(path, keyword), "unanalysable",
                          f"{bad.reason}{' (format assertion switched)' if flipped else ''}: "
                          "cannot be analysed, fails closed")
            return
        root = self.location_root if in_place else rb
        # Compare a pair of schemas once per location: a recursive schema terminates, and a
        # change inside a shared definition is reported where it is first reached. Outside
        # references every pair is reached once anyway (documents are trees).
        pair = (id(rb), id(ra), id(root))
        if pair in self.visited:
            return
        self.visited.add(pair)
        if self.unchanged(rb, ra):
            return  # equal schemas, unless format assertion flipped and a format is reachable
        # A scratch context (oneOf, not, the member probes) that reaches a pair already being
        # compared further out in the same direction is inside a recursive schema: the outer
        # comparison reports that pair (assuming it on revisit is what makes recursion finite).
        question = (*pair, self.direction)
        if question in self.active:
            # Only a pair that may accept other values can hide a change that matters here.
            self.assumed = self.assumed or not self.equivalent(rb, ra)
            return
        self.active.add(question)
        outer, self.location_root = self.location_root, root
        try:
            self.step(self, rb, ra, path)
        finally:
            self.active.discard(question)
            self.location_root = outer

    def location(self) -> Location:
        """What the before side declares at the instance location being compared."""
        root = self.location_root
        if id(root) not in self.locations:
            self.locations[id(root)] = location_of(self.before, root)
        return self.locations[id(root)]

    def scratch(self, *, flip: bool = False) -> Ctx:
        """A scratch context (own changes, own memo) at the same location, in the opposite
        direction with ``flip``: for ``not``, for a ``oneOf`` that must see every change inside
        it, and for the member probes."""
        direction = _FLIP[self.direction] if flip else self.direction
        return Ctx(direction, self.before, self.after, self.assert_formats, self.step,
                   active=self.active, location_root=self.location_root,
                   locations=self.locations)

    def resolve_before(self, node: Any) -> Any:
        return self.before.resolve(node)

    def resolve_after(self, node: Any) -> Any:
        return self.after.resolve(node)
