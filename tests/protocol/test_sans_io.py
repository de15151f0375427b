"""The protocol core does no I/O (STYLE.md practice 1): it imports no event loop, socket, HTTP
framework, server or database driver, and nothing of ours but contracts and errors."""

from __future__ import annotations

import ast
from pathlib import Path

import toolkeeper.protocol

PROTOCOL = Path(toolkeeper.protocol.__file__).resolve().parent
FORBIDDEN = ("asyncio", "anyio", "trio", "socket", "selectors", "ssl", "http", "urllib",
             "httpx", "h11", "uvicorn", "starlette", "fastapi", "sse_starlette", "mcp",
             "sqlite3", "psycopg", "psycopg2", "threading", "subprocess", "multiprocessing")


def _imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(PROTOCOL.rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[path.name] = names
    return found


def test_protocol_imports_no_io_framework_or_driver() -> None:
    offenders = {
        module: sorted(n for n in names if n.split(".")[0] in FORBIDDEN)
        for module, names in _imports().items()
    }
    assert {m: v for m, v in offenders.items() if v} == {}


def test_protocol_depends_only_on_contracts_and_errors_of_the_package() -> None:
    ours = {n for names in _imports().values() for n in names if n.startswith("toolkeeper")}
    allowed = ("toolkeeper.protocol", "toolkeeper.contracts", "toolkeeper.errors")
    assert sorted(n for n in ours if not n.startswith(allowed)) == []


def test_every_protocol_module_declares_its_public_surface() -> None:
    for path in sorted(PROTOCOL.glob("*.py")):
        tree = ast.parse(path.read_text())
        assert any(isinstance(node, ast.Assign)
                   and any(getattr(t, "id", None) == "__all__" for t in node.targets)
                   for node in tree.body), path.name
