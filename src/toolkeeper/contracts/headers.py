"""``x-mcp-header`` annotation rules (mcp-wire 4.3): which input-schema properties may be mirrored
into ``Mcp-Param-*`` headers. A registry refuses a contract that breaks them, as clients must
drop such tools."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["find_invalid_x_mcp_header", "iter_x_mcp_headers"]

_KEY = "x-mcp-header"
# RFC 9110 token: 1*tchar.
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_ALLOWED_TYPES = frozenset({"string", "integer", "boolean"})


def iter_x_mcp_headers(schema: dict[str, Any]) -> list[tuple[str, tuple[str, ...], str]]:
    """Every valid annotation as (token, property path from the root, declared type)."""
    out: list[tuple[str, tuple[str, ...], str]] = []

    def walk(node: Any, chain: tuple[str, ...]) -> None:
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict):
            return
        for name in sorted(props):
            sub = props[name]
            if isinstance(sub, dict):
                token = sub.get(_KEY)
                if isinstance(token, str):
                    out.append((token, (*chain, name), str(sub.get("type"))))
                walk(sub, (*chain, name))

    walk(schema, ())
    return out


_Found = tuple[str, bool, Any, Any]


def _annotations_anywhere(node: Any, path: str, on_chain: bool, found: list[_Found]) -> None:
    if isinstance(node, dict):
        if _KEY in node:
            found.append((path, on_chain, node[_KEY], node.get("type")))
        for key in sorted(node):
            if key in ("const", "enum", "default", "examples"):
                continue
            value = node[key]
            if key == "properties" and isinstance(value, dict):
                for name in sorted(value):
                    _annotations_anywhere(value[name], f"{path}.properties.{name}",
                                          on_chain, found)
            else:
                _annotations_anywhere(value, f"{path}.{key}", False, found)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            _annotations_anywhere(item, f"{path}[{i}]", False, found)


def find_invalid_x_mcp_header(schema: dict[str, Any]) -> tuple[str, str] | None:
    """The first invalid annotation as (schema path, reason), or None when all are valid."""
    found: list[_Found] = []
    _annotations_anywhere(schema, "", True, found)
    seen: set[str] = set()
    for where, on_chain, token, declared in found:
        if not on_chain or where == "":
            return where, "x-mcp-header is allowed only on properties reached through 'properties'"
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            return where, "x-mcp-header must be a non-empty RFC 9110 token"
        if declared not in _ALLOWED_TYPES:
            return where, "x-mcp-header property must have type string, integer or boolean"
        if token.lower() in seen:
            return where, "x-mcp-header tokens must be unique (case-insensitive)"
        seen.add(token.lower())
    return None
