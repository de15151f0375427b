"""Normalization of volatile answer fields, and matching an answer against a pattern.

A transcript names volatile fields by JSON path with a rule (:data:`RULES`): the observed
value there is replaced by ``"<rule>"`` when it satisfies the rule (and left as it is when it
does not, so the comparison fails on it). A pattern then matches the normalized answer:
objects by the keys the pattern lists (``"<absent>"`` says the key must be missing), arrays
element by element and of equal length, scalars equal in value *and* JSON type (``1`` is not
``1.0``, ``true`` is not ``1``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from toolkeeper.contracts.canonical import json_type_name
from toolkeeper.contracts.redaction import REDACTED, denied_key, redact, redact_text

__all__ = ["ABSENT_MARK", "RULES", "matches", "normalized"]

ABSENT_MARK: Final = "<absent>"

RULES: Final[Mapping[str, Callable[[Any], bool]]] = MappingProxyType({
    "present": lambda value: True,
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: json_type_name(value) == "integer",
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
})

_STEP: Final = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    if not path.startswith("$"):
        return []
    return [int(index) if index else key for key, index in _STEP.findall(path[1:])]


def normalized(value: Any, rules: Mapping[str, str]) -> Any:
    """A copy of ``value`` with each ruled path's value replaced by ``"<rule>"``."""
    if not rules:
        return value
    out = copy.deepcopy(value)
    for path, rule in sorted(rules.items()):
        steps = _steps(path)
        if not steps:
            continue
        parent: Any = out
        for step in steps[:-1]:
            parent = _child(parent, step)
        last = steps[-1]
        current = _child(parent, last)
        if current is not _MISSING and RULES[rule](current):
            parent[last] = f"<{rule}>"
    return out


_MISSING: Final = object()


def _child(parent: Any, step: str | int) -> Any:
    if isinstance(step, int):
        return parent[step] if isinstance(parent, list) and step < len(parent) else _MISSING
    return parent.get(step, _MISSING) if isinstance(parent, dict) else _MISSING


def _type(value: Any) -> str:
    return json_type_name(value)


def matches(pattern: Any, value: Any, at: str) -> str | None:
    """The first place where ``value`` does not match ``pattern`` (None when it matches)."""
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return f"{at}: {_type(value)} where the case expects an object"
        for key, want in sorted(pattern.items()):
            if want == ABSENT_MARK:
                if key in value:
                    return f"{at}.{key}: present where the case expects it absent"
                continue
            if key not in value:
                return f"{at}.{key}: missing"
            problem = matches(want, value[key], f"{at}.{key}")
            if problem is not None:
                return problem
        return None
    if isinstance(pattern, list):
        if not isinstance(value, list) or len(value) != len(pattern):
            got = f"{len(value)} items" if isinstance(value, list) else _type(value)
            return f"{at}: {got} where the case expects {len(pattern)} items"
        for index, (want, got) in enumerate(zip(pattern, value, strict=True)):
            problem = matches(want, got, f"{at}[{index}]")
            if problem is not None:
                return problem
        return None
    if _type(pattern) != _type(value) or pattern != value:
        return f"{at}: {_quoted(value, at)} where the case expects {_quoted(pattern, at)}"
    return None


def _quoted(value: Any, at: str) -> str:
    """A short quotation of a value for a finding, redacted *before* it is shortened (a cut
    secret no longer has the shape that masks it); a value under a denied key (``password``,
    ``token``, ...) is never quoted."""
    if any(isinstance(step, str) and denied_key(step) for step in _steps(at)):
        return REDACTED
    text = redact_text(repr(redact(value)[0]))
    return text if len(text) <= 60 else text[:57] + "..."
