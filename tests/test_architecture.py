"""Module layout (STYLE.md): dependencies point one way, and the public surface is pinned."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import toolkeeper

SRC = Path(toolkeeper.__file__).resolve().parent


def _imports(package: str) -> set[str]:
    found: set[str] = set()
    for path in (SRC / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    return found


# Which of our packages each package may import (besides itself and ``toolkeeper.errors``):
# dependencies point one way, contracts and protocol are leaves, cli sits on top.
ALLOWED: dict[str, set[str]] = {
    "contracts": set(),
    "protocol": {"contracts"},
    "registry": {"contracts"},
    "transports": {"contracts", "protocol"},
    "server": {"contracts", "protocol", "registry", "transports"},
    "auth": {"contracts", "protocol", "registry", "server", "observability"},
    "demo": {"contracts", "registry", "server"},
    "config": {"contracts", "server", "observability"},
    "observability": {"contracts", "registry", "server"},
    "conformance": {"contracts", "protocol", "config", "client"},
    "client": {"contracts", "protocol", "config"},
    "upstreams": {"contracts", "protocol", "registry", "server", "client"},
    "gate": {"contracts", "registry"},
    "cli": {"contracts", "protocol", "registry", "server", "transports", "demo", "config", "auth",
            "observability", "client", "conformance", "upstreams", "gate"},
}


def test_every_package_has_a_layering_rule() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(ALLOWED)


def test_dependencies_point_one_way() -> None:
    for package, allowed in ALLOWED.items():
        used = {m.split(".")[1] for m in _imports(package)
                if m.startswith("toolkeeper.") and m != "toolkeeper.errors"}
        assert used - {package} <= allowed, (package, sorted(used - {package} - allowed))


def test_contracts_imports_nothing_else_of_the_package() -> None:
    ours = {m for m in _imports("contracts") if m.startswith("toolkeeper")}
    assert all(m == "toolkeeper.errors" or m.startswith("toolkeeper.contracts") for m in ours), ours


def _module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package rooted at ``root``, by dotted name (a package by its own)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def _import_targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
                    known: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: from the module's own package, one level up per extra dot
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[:len(parts) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    # ``from package import name`` imports the submodule when there is one, else the package.
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
            for alias in node.names]


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Which modules of the package each module imports: every import statement counts, at
    the top of the file, inside a function or under ``TYPE_CHECKING``; an import names the
    module file it loads (``a.b.c``), not the packages above it."""
    known = _module_files(root, package)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for module, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _import_targets(node, module, path.name == "__init__.py", known):
                while target not in known and "." in target:  # an attribute of a module
                    target = target.rsplit(".", 1)[0]
                if target in known and target != module:
                    graph[module].add(target)
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of two or more modules that import each other, directly or round a loop
    (the strongly connected components of the graph, Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(circles)


def test_no_module_imports_itself_round_a_circle() -> None:
    assert import_circles(import_graph(SRC, "toolkeeper")) == []


MAX_MODULE_LINES = 450
"""STYLE.md practice 9: about 400 lines per module is where to split; past 450 is too far."""


def test_no_module_is_longer_than_450_lines() -> None:
    lengths = {str(path.relative_to(SRC)): len(path.read_text().splitlines())
               for path in sorted(SRC.rglob("*.py"))}
    assert {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES} == {}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(("files", "circles"), [
    pytest.param({"__init__.py": "", "room/__init__.py": "",
                  "room/a.py": "from pkg.room.b import B\n",
                  "room/b.py": "from pkg.room.a import A\n"},
                 [["pkg.room.a", "pkg.room.b"]], id="two-files-at-the-top"),
    pytest.param({"__init__.py": "", "room/__init__.py": "",
                  "room/a.py": "import pkg.room.b\n",
                  "room/b.py": "def f():\n    from pkg.room import c\n",
                  "room/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    from pkg.room.a import A\n"},
                 [["pkg.room.a", "pkg.room.b", "pkg.room.c"]],
                 id="three-files-through-a-function-and-type-checking"),
    pytest.param({"__init__.py": "", "room/__init__.py": "", "room/sub/__init__.py": "",
                  "room/a.py": "from .sub import x\n",
                  "room/sub/x.py": "from ..a import A\n"},
                 [["pkg.room.a", "pkg.room.sub.x"]], id="relative-imports"),
    pytest.param({"__init__.py": "", "room/__init__.py": "from pkg.room.a import A\n",
                  "room/a.py": "from pkg.room import b\n", "room/b.py": "import os\n"},
                 [], id="a-package-re-exporting-its-modules-is-no-circle"),
])
def test_the_circle_check_finds_circles_in_a_constructed_tree(
        tmp_path: Path, files: dict[str, str], circles: list[list[str]]) -> None:
    root = _tree(tmp_path / "pkg", files)
    assert import_circles(import_graph(root, "pkg")) == circles


def test_public_api_is_pinned() -> None:
    assert sorted(toolkeeper.__all__) == sorted([
        "RETRYABLE", "Bump", "Change", "ContractError", "DataClassification", "Issue",
        "JsonRpcError", "LifecycleError", "NotFoundError", "PrincipalError", "PublishRefusedError",
        "Repair", "RepairResult", "RegistryError", "SchemaError", "SemverError", "SideEffect",
        "Status", "StoreError", "ToolSpec", "ToolkeeperError", "Verdict", "Version", "classify",
        "classify_schemas", "compile_schema", "repair", "repair_arguments", "spec_from_mapping",
        "spec_to_mapping", "validate",
    ])
    for name in toolkeeper.__all__:
        assert hasattr(toolkeeper, name), name


def test_every_error_derives_from_the_one_root() -> None:
    from toolkeeper import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.ToolkeeperError), name


def test_client_public_surface_is_pinned() -> None:
    from toolkeeper import client

    assert sorted(client.__all__) == sorted([
        "ERA_MODES", "CallReply", "ClientAuthenticationError", "ClientConnectionError",
        "ClientError", "ClientSession", "ClientTimeoutError", "ClientTimeouts", "Era",
        "EraChoice", "EraDecision", "EraSelectionError", "Exchange", "LegacyEvidence",
        "ModernObservation", "ProbeOutcome", "ProtocolViolationError", "RequestRefusedError",
        "SelectionMode", "ServerUnavailableError", "Target", "TargetKind", "ToolListing",
        "Transport", "connect", "probe_legacy", "probe_modern", "select_era",
        # the kernel's surface
        "CachedTool", "CallOutcome", "Incompatibility", "Kernel", "Model", "ModelTurn",
        "RetryPolicy", "ScriptedModel", "SharedListings", "is_relist_refusal", "render_prompt",
        "side_effect_of",
    ])
    for name in client.__all__:
        assert hasattr(client, name), name
