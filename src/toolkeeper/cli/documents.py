"""Reading the files commands take: a contract, or a bare JSON Schema.

A mapping with any of the keys ``name``, ``version``, ``inputSchema`` is a contract and must be
a complete, valid one (a contract missing its version is refused, never read as an
unconstrained bare schema); any other mapping is a bare schema and must compile.
"""

from __future__ import annotations

from typing import Any

from toolkeeper.cli.output import read_document
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.errors import ToolkeeperError

__all__ = ["CONTRACT_KEYS", "load_contract_or_schema"]

CONTRACT_KEYS = ("name", "version", "inputSchema")


def load_contract_or_schema(path: str) -> ToolSpec | dict[str, Any]:
    """A contract (any contract key present) or a bare schema (compiled to prove it is one).

    Errors name the file: ToolkeeperError with the underlying code, path and data.
    """
    try:
        document = read_document(path)
        if isinstance(document, dict) and any(key in document for key in CONTRACT_KEYS):
            return spec_from_mapping(document)
        if not isinstance(document, dict):
            raise ToolkeeperError("a schema or contract must be a JSON object",
                                  code="schema.invalid", path="$")
        compile_schema(document)
        return document
    except ToolkeeperError as exc:
        message = exc.message if path in exc.message else f"{path}: {exc.message}"
        raise ToolkeeperError(message, code=exc.code, path=exc.path, data=exc.data) from None
