"""Schemas closed to unknown properties: what a call that declared no version is validated
against (SPEC 3.4: fail closed), and what a typed handler's derived contract declares unless
it is bound with ``closed=False``. The routes and the typed-handler derivation both use it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["closed_schema"]

_COMPOSITION = ("allOf", "anyOf", "oneOf", "if", "$ref", "$dynamicRef", "dependentSchemas")


def _close_node(schema: dict[str, Any], *, root: bool) -> dict[str, Any]:
    """One object schema closed to unknown properties, unless it already says what extra
    properties may be (``additionalProperties``, ``unevaluatedProperties``, or, below the root,
    ``patternProperties``) or, below the root, declares no ``properties`` (a free-form map)."""
    if "additionalProperties" in schema or "unevaluatedProperties" in schema:
        return schema
    composed = any(key in schema for key in _COMPOSITION)
    if not root and ("properties" not in schema or "patternProperties" in schema):
        return schema
    if "properties" not in schema or composed:
        return {**schema, "unevaluatedProperties": False}
    return {**schema, "additionalProperties": False}


def _close(node: Any, *, root: bool = False) -> Any:
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in ("properties", "$defs", "definitions"):
        members = node.get(key)
        if isinstance(members, dict):
            out[key] = {name: _close(sub) for name, sub in members.items()}
    if isinstance(node.get("items"), dict):
        out["items"] = _close(node["items"])
    if isinstance(node.get("prefixItems"), list):
        out["prefixItems"] = [_close(sub) for sub in node["prefixItems"]]
    declared = node.get("type")
    is_object = declared == "object" or (isinstance(declared, list) and "object" in declared) \
        or "properties" in node
    return _close_node(out, root=root) if is_object or root else out


def closed_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema closed to unknown properties, for a call that declared no version (SPEC 3.4:
    fail closed): the root, and every record-like object below it reached through
    ``properties``, ``items``, ``prefixItems`` or ``$defs`` that does not say what extra
    properties may be. ``additionalProperties: false`` where the object declares its
    properties plainly; ``unevaluatedProperties: false`` where it composes subschemas (so
    properties declared in ``allOf`` branches stay allowed) or, at the root, declares none (the
    validator reports that case at the offending property's path). Free-form maps below the
    root (no ``properties``) stay open."""
    closed: dict[str, Any] = _close(schema, root=True)
    return closed
