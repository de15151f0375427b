"""The tool contract (``ToolSpec``, SPEC 1.1) and its closed vocabularies.

A contract file is JSON (or YAML) with camelCase keys; :func:`spec_from_mapping` turns it into a
:class:`ToolSpec` and refuses unknown keys and bad values with the JSON path and a stable code.
Python attributes are snake_case; the camelCase names appear only at this boundary.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.headers import find_invalid_x_mcp_header
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.errors import ContractError, SchemaError, SemverError

__all__ = [
    "RETRYABLE",
    "DataClassification",
    "SideEffect",
    "Status",
    "ToolSpec",
    "classification_rank",
    "spec_from_mapping",
    "spec_to_mapping",
]

# MCP tool-name rules (2025-11-25 and 2026-07-28): 1 to 128 of A-Z a-z 0-9 _ - .
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


class DataClassification(enum.Enum):
    """Ordered sensitivity labels; compare through :func:`classification_rank`."""

    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"


_RANK: Mapping[DataClassification, int] = MappingProxyType(
    {c: i for i, c in enumerate(DataClassification)}
)


def classification_rank(value: DataClassification | str) -> int:
    """The rank of a classification (public=0 .. restricted=3). Unknown names raise, never default."""
    if isinstance(value, str):
        try:
            value = DataClassification(value)
        except ValueError:
            raise ContractError(
                f"unknown data classification {value!r}",
                code="contract.classification_unknown",
            ) from None
    return _RANK[value]


class SideEffect(enum.Enum):
    """What calling the tool does to the world, mildest first."""

    READ = "read"
    IDEMPOTENT_WRITE = "idempotent_write"
    WRITE = "write"
    DESTRUCTIVE = "destructive"


SIDE_EFFECT_RANK: Mapping[SideEffect, int] = MappingProxyType(
    {s: i for i, s in enumerate(SideEffect)}
)

#: Whether an automatic retry of a failed call is safe, for every SideEffect (invariant 10).
RETRYABLE: Mapping[SideEffect, bool] = MappingProxyType(
    {
        SideEffect.READ: True,
        SideEffect.IDEMPOTENT_WRITE: True,
        SideEffect.WRITE: False,
        SideEffect.DESTRUCTIVE: False,
    }
)

# MCP annotations derived from the side effect (SPEC 1.1): (readOnly, idempotent, destructive).
_ANNOTATIONS: Mapping[SideEffect, tuple[bool, bool, bool]] = MappingProxyType(
    {
        SideEffect.READ: (True, True, False),
        SideEffect.IDEMPOTENT_WRITE: (False, True, False),
        SideEffect.WRITE: (False, False, False),
        SideEffect.DESTRUCTIVE: (False, False, True),
    }
)


class Status(enum.Enum):
    """Lifecycle status; ``retired`` is terminal."""

    ACTIVE = "active"
    DEPRECATED = "deprecated"
    RETIRED = "retired"


@dataclass(frozen=True)
class ToolSpec:
    """One version of a tool contract, plus its registry lifecycle fields.

    The *content* (everything :meth:`content_digest` covers) is immutable once published; the
    lifecycle fields (status, deprecation, publisher, publish time) are the registry's to set.
    Schemas are plain JSON values and must not be mutated by callers.
    """

    name: str
    version: Version
    title: str
    description: str
    input_schema: dict[str, Any]
    data_classification: DataClassification
    side_effect: SideEffect
    output_schema: dict[str, Any] | None = None
    tenants: frozenset[str] = frozenset()
    required_scopes: frozenset[str] = frozenset()
    assert_formats: bool = False
    status: Status = Status.ACTIVE
    deprecation_message: str | None = None
    successor: Version | None = None
    publisher: str | None = None
    published_at: str | None = None

    @property
    def key(self) -> tuple[str, Version]:
        return (self.name, self.version)

    def content_mapping(self) -> dict[str, Any]:
        """The contract's content in file form (camelCase), without lifecycle fields."""
        return spec_to_mapping(self, lifecycle=False)

    @cached_property
    def content_digest(self) -> str:
        """SHA-256 of the canonical JSON of the content: equal digests mean identical contracts."""
        return hashlib.sha256(canonical_json(self.content_mapping())).hexdigest()

    def with_lifecycle(self, **changes: Any) -> ToolSpec:
        """A copy with lifecycle fields changed (status, deprecation_message, successor, ...)."""
        allowed = {"status", "deprecation_message", "successor", "publisher", "published_at"}
        bad = set(changes) - allowed
        if bad:
            raise ValueError(f"not lifecycle fields: {sorted(bad)}")
        return replace(self, **changes)

    def to_mcp(self) -> dict[str, Any]:
        """The MCP tool descriptor: exactly name, title, description, inputSchema, _meta, plus
        outputSchema and annotations when defined. Policy fields never appear (invariant 4)."""
        read_only, idempotent, destructive = _ANNOTATIONS[self.side_effect]
        out: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "readOnlyHint": read_only,
                "idempotentHint": idempotent,
                "destructiveHint": destructive,
            },
            "_meta": {"schemaVersion": str(self.version)},
        }
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        return out


# --- file format ---------------------------------------------------------------------------

_REQUIRED = (
    "name", "version", "title", "description", "inputSchema", "dataClassification", "sideEffect",
)
_OPTIONAL = ("outputSchema", "tenants", "requiredScopes", "assertFormats")
_LIFECYCLE = ("status", "deprecationMessage", "successor", "publisher", "publishedAt")
_KNOWN = frozenset(_REQUIRED) | frozenset(_OPTIONAL)
_KNOWN_WITH_LIFECYCLE = _KNOWN | frozenset(_LIFECYCLE)


#: A schema's refusal as a contract's: the reference and format rules keep their own codes
#: (:mod:`~toolkeeper.contracts.references`, :mod:`~toolkeeper.contracts.formats`), with the
#: path of the offending keyword inside the contract; anything else is ``contract.schema``.
_SCHEMA_CODES: Mapping[str, str] = MappingProxyType({
    "schema.ref_external": "contract.schema_ref_external",
    "schema.ref_unresolved": "contract.schema_ref_unresolved",
    "schema.ref_cycle": "contract.schema_ref_cycle",
    "schema.format_unknown": "contract.schema_format_unknown",
})


def _fail(path: str, message: str, code: str = "contract.invalid") -> ContractError:
    return ContractError(f"{path}: {message}", code=code, path=path)


def _string(data: Mapping[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise _fail(f"$.{key}", f"must be a string, got {type(value).__name__}", "contract.type")
    if not allow_empty and not value.strip():
        raise _fail(f"$.{key}", "must not be empty", "contract.empty")
    return value


def _string_set(data: Mapping[str, Any], key: str) -> frozenset[str]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise _fail(f"$.{key}", "must be a list of strings", "contract.type")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise _fail(f"$.{key}[{i}]", "must be a non-empty string", "contract.type")
    if len(set(value)) != len(value):
        raise _fail(f"$.{key}", "has duplicate entries", "contract.duplicate")
    return frozenset(value)


def _enum(data: Mapping[str, Any], key: str, kind: type[enum.Enum], default: Any = None) -> Any:
    if key not in data:
        return default
    value = data[key]
    try:
        return kind(value)
    except (ValueError, TypeError):
        allowed = ", ".join(m.value for m in kind)
        raise _fail(f"$.{key}", f"must be one of {allowed}, got {value!r}",
                    "contract.enum") from None


def _schema(data: Mapping[str, Any], key: str, *, assert_formats: bool, trusted: bool = False
            ) -> dict[str, Any]:
    value = data[key]
    path = f"$.{key}"
    if not isinstance(value, dict):
        raise _fail(path, "must be a JSON Schema object", "contract.schema")
    if key == "inputSchema" and value.get("type") != "object":
        raise _fail(path, 'must have "type": "object" at its root (MCP)', "contract.schema_root")
    if trusted:
        return value
    try:
        compile_schema(value, assert_formats=assert_formats)
    except SchemaError as exc:
        at = path + exc.path[1:] if exc.path else path
        raise _fail(at, exc.message.removeprefix(f"{exc.path}: "),
                    _SCHEMA_CODES.get(exc.code, "contract.schema")) from None
    if key == "inputSchema":
        bad = find_invalid_x_mcp_header(value)
        if bad is not None:
            raise _fail(f"{path}{bad[0]}", bad[1], "contract.x_mcp_header")
    return value


def spec_from_mapping(data: object, *, lifecycle: bool = False, trusted: bool = False) -> ToolSpec:
    """Build a ToolSpec from a contract mapping (camelCase keys).

    Unknown keys and bad values raise :class:`ContractError` with the JSON path. With
    ``lifecycle=True`` the registry's own fields (status, publisher, ...) are accepted too.
    ``trusted=True`` is for records a registry validated when they were published: the shape is
    still checked, but schemas are not compiled and ``x-mcp-header`` is not re-scanned (compiling
    happens lazily when a version is first served). Never use it for outside input.
    """
    if not isinstance(data, Mapping):
        raise _fail("$", "a contract must be a JSON object", "contract.type")
    unknown = data.keys() - (_KNOWN_WITH_LIFECYCLE if lifecycle else _KNOWN)
    if unknown:
        raise _fail(f"$.{min(unknown)}", "unknown key", "contract.unknown_key")
    for key in _REQUIRED:
        if key not in data:
            raise _fail(f"$.{key}", "is required", "contract.missing_key")
    name = _string(data, "name")
    if not _TOOL_NAME.fullmatch(name):
        raise _fail("$.name", "must be 1 to 128 of A-Z a-z 0-9 _ - . (MCP tool names)",
                    "contract.name")
    try:
        version = Version.parse(data["version"])
    except SemverError as exc:
        raise _fail("$.version", exc.message, "contract.version") from None
    assert_formats = data.get("assertFormats", False)
    if not isinstance(assert_formats, bool):
        raise _fail("$.assertFormats", "must be a boolean", "contract.type")
    output = _schema(data, "outputSchema", assert_formats=assert_formats, trusted=trusted) \
        if data.get("outputSchema") is not None else None
    content: dict[str, Any] = {
        "name": name,
        "version": version,
        "title": _string(data, "title"),
        "description": _string(data, "description"),
        "input_schema": _schema(data, "inputSchema", assert_formats=assert_formats,
                                trusted=trusted),
        "output_schema": output,
        "tenants": _string_set(data, "tenants"),
        "data_classification": _enum(data, "dataClassification", DataClassification),
        "required_scopes": _string_set(data, "requiredScopes"),
        "side_effect": _enum(data, "sideEffect", SideEffect),
        "assert_formats": assert_formats,
    }
    if lifecycle:  # built in one go: a copy through with_lifecycle costs as much again
        successor = data.get("successor")
        content.update(
            status=_enum(data, "status", Status, Status.ACTIVE),
            deprecation_message=data.get("deprecationMessage"),
            successor=Version.parse(successor) if successor is not None else None,
            publisher=data.get("publisher"),
            published_at=data.get("publishedAt"),
        )
    return ToolSpec(**content)


def spec_to_mapping(spec: ToolSpec, *, lifecycle: bool = True) -> dict[str, Any]:
    """The file form of a spec (camelCase keys, sorted lists); lifecycle fields optional."""
    out: dict[str, Any] = {
        "name": spec.name,
        "version": str(spec.version),
        "title": spec.title,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "tenants": sorted(spec.tenants),
        "dataClassification": spec.data_classification.value,
        "requiredScopes": sorted(spec.required_scopes),
        "sideEffect": spec.side_effect.value,
    }
    if spec.output_schema is not None:
        out["outputSchema"] = spec.output_schema
    if spec.assert_formats:
        out["assertFormats"] = True
    if lifecycle:
        out["status"] = spec.status.value
        if spec.deprecation_message is not None:
            out["deprecationMessage"] = spec.deprecation_message
        if spec.successor is not None:
            out["successor"] = str(spec.successor)
        if spec.publisher is not None:
            out["publisher"] = spec.publisher
        if spec.published_at is not None:
            out["publishedAt"] = spec.published_at
    return out
