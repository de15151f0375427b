"""The strict-integer policy of validation (SPEC 1.2): ``integer`` rejects floats.

JSON Schema says ``5.0`` is an integer, but a tool that declared ``integer`` gets a Python ``int``
or nothing. :func:`strictify` copies a schema with the custom keyword :data:`STRICT_INT` beside
every integer-only ``type``; :class:`StrictInteger` is that keyword's check, registered with
jsonschema-rs by :class:`~toolkeeper.contracts.validate.CompiledSchema`.
"""

from __future__ import annotations

import math
from typing import Any

from toolkeeper.errors import SchemaError

__all__ = ["STRICT_INT", "StrictInteger", "strictify"]

STRICT_INT = "x-toolkeeper-strict-integer"
# Keywords of a schema object whose values are data or names, never schemas: copied as they are.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples", "dependentRequired"})
# Keywords of a schema object whose values map names to schemas: the names are not keywords
# (a property may be called ``enum``), the values are schemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                          "dependentSchemas"})
# Containers (objects and arrays) a schema may nest; jsonschema-rs refuses past 255 anyway, and
# the bound keeps the Python walk far from the interpreter's recursion limit.
_MAX_SCHEMA_DEPTH = 256


class StrictInteger:
    """Custom keyword: a float never satisfies a schema whose types include integer but not number.
    (A non-finite float already fails the ``type`` itself, with its own message.)"""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.message = f"expected type {value}, got number"

    def validate(self, instance: Any) -> None:
        if type(instance) is float and math.isfinite(instance):
            raise ValueError(self.message)


def strictify(node: Any, depth: int = 0) -> Any:
    """Copy of a schema with the strict-integer keyword beside every integer-only ``type``. Data
    keywords are copied untouched; names in ``properties`` and the other schema maps are
    names, not keywords. Nesting past :data:`_MAX_SCHEMA_DEPTH` is a :class:`SchemaError`.
    Plain loops, not comprehensions: one interpreter frame per level."""
    if depth > _MAX_SCHEMA_DEPTH:
        raise SchemaError(
            f"not a valid JSON Schema 2020-12: nested deeper than {_MAX_SCHEMA_DEPTH} levels")
    if isinstance(node, list):
        items = []
        for item in node:
            items.append(strictify(item, depth + 1))
        return items
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DATA_KEYWORDS:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            members: dict[str, Any] = {}
            for name, member in value.items():
                members[name] = strictify(member, depth + 2)
            out[key] = members
        else:
            out[key] = strictify(value, depth + 1)
    declared = node.get("type")
    types = [declared] if isinstance(declared, str) else declared
    if isinstance(types, list) and "integer" in types and "number" not in types:
        out[STRICT_INT] = " or ".join(sorted(types))
    return out
