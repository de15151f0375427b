"""Contract builders shared by the registry tests (importable by spawned worker processes)."""

from __future__ import annotations

from typing import Any

from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping

__all__ = ["make_spec", "spec_mapping"]


def spec_mapping(name: str = "payments.lookup", version: str = "1.0.0", **fields: Any
                 ) -> dict[str, Any]:
    """A valid contract mapping; ``fields`` override or add camelCase keys."""
    data: dict[str, Any] = {
        "name": name,
        "version": version,
        "title": "Look up a payment",
        "description": "Returns the status of a payment by reference.",
        "inputSchema": {
            "type": "object",
            "properties": {"reference": {"type": "string"}},
            "required": ["reference"],
        },
        "dataClassification": "internal",
        "sideEffect": "read",
    }
    data.update(fields)
    return data


def make_spec(name: str = "payments.lookup", version: str = "1.0.0", **fields: Any) -> ToolSpec:
    return spec_from_mapping(spec_mapping(name, version, **fields))
