"""Dependencies point one way: transports know the protocol only; the server never imports
the CLI; the protocol never imports the layers above it."""

from __future__ import annotations

import ast
from pathlib import Path

import toolkeeper

SRC = Path(toolkeeper.__file__).resolve().parent


def _ours(package: str) -> set[str]:
    found: set[str] = set()
    for path in (SRC / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    return {m for m in found if m.startswith("toolkeeper")}


def test_transports_depend_only_on_the_protocol() -> None:
    assert {m for m in _ours("transports")
            if not m.startswith(("toolkeeper.transports", "toolkeeper.protocol"))} == set()


def test_the_server_does_not_reach_up_into_the_cli() -> None:
    assert {m for m in _ours("server") if m.startswith("toolkeeper.cli")} == set()
