"""Contract builders shared by the registry tests (importable by spawned worker processes)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping

__all__ = ["evolved", "make_spec", "spec_mapping", "v"]


def v(text: str) -> Version:
    return Version.parse(text)


def spec_mapping(name: str = "payments.lookup", version: str = "1.0.0", *,
                 required: Iterable[str] = ("reference",), optional: Iterable[str] = (),
                 **fields: Any) -> dict[str, Any]:
    """A valid contract mapping: string properties ``required`` (all required) and
    ``optional``; ``fields`` override or add camelCase keys."""
    required = list(required)
    props = {p: {"type": "string"} for p in [*required, *optional]}
    data: dict[str, Any] = {
        "name": name,
        "version": version,
        "title": "Look up a payment",
        "description": "Returns the status of a payment by reference.",
        "inputSchema": {"type": "object", "properties": props, "required": required},
        "dataClassification": "internal",
        "sideEffect": "read",
    }
    data.update(fields)
    return data


def make_spec(name: str = "payments.lookup", version: str = "1.0.0", **fields: Any) -> ToolSpec:
    return spec_from_mapping(spec_mapping(name, version, **fields))


def evolved(name: str, version: str, *, shape: str | None = None, **fields: Any) -> ToolSpec:
    """The contract whose shape follows a version (``shape``, default ``version``), so
    consecutive versions differ exactly by the bump they name: one required property per major,
    one optional property per minor, the description per patch."""
    parsed = v(shape or version)
    return make_spec(
        name, version,
        required=[f"r{i}" for i in range(parsed.major + 1)],
        optional=[f"o{i}" for i in range(parsed.minor)],
        description=f"patch level {parsed.patch}",
        **fields,
    )
