"""Module layout (STYLE.md): dependencies point one way, and the public surface is pinned."""

from __future__ import annotations

import ast
from pathlib import Path

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
    "cli": {"contracts", "protocol", "registry", "server", "transports", "demo", "config", "auth",
            "observability", "client", "conformance"},
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
