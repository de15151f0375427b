"""Member names as the validator reads them: whether a ``patternProperties`` regex matches a
name, a cheap proof that two regexes share no name, and how open an object is to names it does
not declare. The member handlers and the location walk both ask these questions.

Regexes follow the validator (jsonschema-rs, ECMA 262): a pattern it cannot compile matches
``None`` (unknown), never ``False``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from toolkeeper.contracts.classify.refs import DOC_KEYWORDS
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.errors import SchemaError

__all__ = ["openness", "pattern_matches", "patterns_disjoint"]

_ANNOTATION_ONLY = frozenset(DOC_KEYWORDS) | {"default", "$defs", "definitions", "$anchor"}
# Regex syntax that ends a literal prefix (ECMA 262).
_META = frozenset("\\.^$*+?()[]{}|")
# Quantifiers that make the character before them optional.
_OPTIONAL = ("?", "*", "{")


@lru_cache(maxsize=4096)
def pattern_matches(pattern: str, name: str) -> bool | None:
    """Whether the regex matches the name as the validator reads it; None when it cannot compile."""
    try:
        return compile_schema({"pattern": pattern}).is_valid(name)
    except SchemaError:
        return None


def _anchored_prefix(pattern: str) -> str | None:
    """The literal text every match starts with, for a pattern anchored at the start without
    alternation; None otherwise."""
    if not pattern.startswith("^") or "|" in pattern:
        return None
    prefix: list[str] = []
    for char in pattern[1:]:
        if char in _META:
            break
        prefix.append(char)
    if prefix and pattern[1 + len(prefix):].startswith(_OPTIONAL):
        prefix.pop()
    return "".join(prefix)


def patterns_disjoint(p: str, q: str) -> bool:
    """A cheap proof that no name matches both regexes: their anchored literal prefixes diverge."""
    x, y = _anchored_prefix(p), _anchored_prefix(q)
    return x is not None and y is not None and not x.startswith(y) and not y.startswith(x)


def openness(resolved: Any) -> str:
    """How an object with this (resolved) additionalProperties treats undeclared keys: ``open``
    (anything), ``closed`` (nothing), or ``schema`` (the schema constrains them)."""
    if resolved is False:
        return "closed"
    if resolved is True or (isinstance(resolved, dict) and not set(resolved) - _ANNOTATION_ONLY):
        return "open"
    return "schema"
