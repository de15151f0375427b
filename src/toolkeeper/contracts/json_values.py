"""Which parts of a Python value are not JSON data.

JSON text decoded by a strict decoder (the gateway's msgspec) holds only objects with string keys,
arrays, Unicode strings, integers, finite numbers, booleans and null. Values built in Python, or
decoded by lenient decoders (the standard library's ``json.loads`` accepts ``NaN`` and lone
surrogate escapes; YAML has dates, sets and binary), can hold more, and an encoder then either
fails or writes something else (msgspec writes NaN as ``null``). Validation treats every such
part as an error at its path rather than as a value the schema speaks about.
"""

from __future__ import annotations

import math
from typing import Any, Final

__all__ = ["NOT_JSON_MESSAGES", "Link", "find_not_json", "has_lone_surrogate", "has_non_finite",
           "is_json_data", "link_parts"]

Location = tuple[str | int, ...]

Link = tuple[Any, str | int] | None
"""A location as a parent link: ``(parent link, key or index)``, None for the root (built as
a walk goes down, turned into a path only for what it reports)."""

NOT_JSON_MESSAGES: Final = {
    "not_finite": "expected a JSON value, got a non-finite number",
    "lone_surrogate": "expected a JSON value, got a string holding a lone surrogate",
    "key_not_string": "expected a JSON value, got an object with a key that is not a string",
    "not_json": "expected a JSON value, got a value JSON cannot hold",
}
"""Each reason :func:`find_not_json` gives, and the message validation reports for it."""

_SCALARS: Final = (bool, int, type(None))


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (it cannot be written as UTF-8, nor as JSON)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def has_non_finite(value: Any) -> bool:
    """Whether a NaN or an infinity sits anywhere in ``value``'s dicts, lists and tuples (what
    msgspec's encoder writes as ``null``, so callers ask only when its output holds one)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float):
            if not math.isfinite(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return False


def is_json_data(value: Any) -> bool:
    """Whether ``value`` is JSON data (:func:`find_not_json` finds nothing), answered by a walk
    that builds no locations and stops at the first problem; a container met twice (shared, or
    a cycle) hands the answer to :func:`find_not_json`."""
    seen: set[int] = set()
    stack = [value]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        node = pop()
        kind = type(node)
        if kind is str:
            if not node.isascii() and has_lone_surrogate(node):
                return False
        elif kind is dict or kind is list:
            if id(node) in seen:
                return not find_not_json(value)
            seen.add(id(node))
            if kind is list:
                extend(node)
                continue
            for key, item in node.items():
                if type(key) is not str or (not key.isascii() and has_lone_surrogate(key)):
                    return False
                push(item)
        elif kind is float:
            if not math.isfinite(node):
                return False
        elif kind is not int and kind is not bool and node is not None:
            return not find_not_json(node)  # subclasses, tuples: the exact walk decides
    return True


def find_not_json(value: Any) -> list[tuple[Location, str]]:
    """Every part of ``value`` that is not JSON data, as (location, reason), in walk order;
    ``[]`` for JSON data. Reasons are the keys of :data:`NOT_JSON_MESSAGES`. Iterative, so any
    depth is walked (locations are parent links until one is reported: linear in the depth);
    a container inside itself (a cycle) is ``not_json`` where it recurs."""
    found: list[tuple[Link, str]] = []
    active: set[int] = set()  # the containers on the path being walked
    stack: list[tuple[Link, Any] | int] = [(None, value)]
    while stack:
        entry = stack.pop()
        if type(entry) is int:  # leaving a container
            active.discard(entry)
            continue
        assert isinstance(entry, tuple)
        link, node = entry
        kind = type(node)
        if kind is str or isinstance(node, str):  # str and float subclasses (enums) are data
            if has_lone_surrogate(node):
                found.append((link, "lone_surrogate"))
        elif isinstance(node, float):
            if not math.isfinite(node):
                found.append((link, "not_finite"))
        elif isinstance(node, _SCALARS):
            continue
        elif isinstance(node, dict | list | tuple):
            if id(node) in active:
                found.append((link, "not_json"))
                continue
            active.add(id(node))
            stack.append(id(node))
            if isinstance(node, dict):
                for key, item in node.items():
                    if type(key) is not str:
                        found.append((link, "key_not_string"))
                    elif has_lone_surrogate(key):
                        found.append(((link, key), "lone_surrogate"))
                    else:
                        stack.append(((link, key), item))
            else:
                stack.extend(((link, index), item) for index, item in enumerate(node))
        else:
            found.append((link, "not_json"))
    return [(link_parts(link), reason) for link, reason in found]


def link_parts(link: Link) -> Location:
    """The path a :data:`Link` stands for, root first."""
    parts: list[str | int] = []
    while link is not None:
        link, part = link
        parts.append(part)
    return tuple(reversed(parts))
