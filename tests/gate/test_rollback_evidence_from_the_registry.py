"""Rollback evidence built from a real SQLite registry: a native demo tool's (its handler
module's SHA-256) and an upstream tool's (its descriptor digest) verify; a deprecated target is
refused as not active (exit 1) and names the command that restores its route; a version without
an admission record, an unknown version and a missing key are refused (exit 2) with their
codes; the health comes from the call log under a policy or from a `gate window --json` file."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.cli.gate_rollback_cmd import rollback_evidence_cmd
from toolkeeper.contracts.canonical import loads_json
from toolkeeper.demo import handlers as demo_handlers_module
from toolkeeper.demo import install_demo
from toolkeeper.errors import NotFoundError, ToolkeeperError
from toolkeeper.gate.keys import DEMO_KEY
from toolkeeper.gate.rollback import verify
from toolkeeper.gate.rollback_evidence import build_evidence, evidence_payload
from toolkeeper.registry import Registry
from toolkeeper.upstreams.descriptor import descriptor_digest
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition

HEX_KEY = "00112233445566778899aabbccddeeff" * 2
DEMO_MODULE_SHA = hashlib.sha256(Path(demo_handlers_module.__file__).read_bytes()).hexdigest()
TRUSTED = {DEMO_KEY.key_id: DEMO_KEY.trusted()}


def _demo_artifact(spec: Any) -> str:
    return DEMO_MODULE_SHA


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite://{tmp_path / 'registry.db'}"
    with Registry.open(url) as registry:
        install_demo(registry)
    yield url


@pytest.fixture
def key_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "gate.key").write_text(HEX_KEY + "\n")
    return {"TOOLKEEPER_GATE_KEY_ID": "release-controller",
            "TOOLKEEPER_GATE_KEY_FILE": str(tmp_path / "gate.key"),
            "TOOLKEEPER_GATE_TRUSTED_KEYS": ""}


@pytest.fixture
def healthy_file(tmp_path: Path) -> str:
    path = tmp_path / "window.json"
    path.write_text('{"status": "healthy", "samples": 500, "errors": 0}')
    return str(path)


def _run(args: list[str], env: dict[str, str]) -> Any:
    return CliRunner().invoke(rollback_evidence_cmd, args, env=env,
                              prog_name="toolkeeper gate rollback-evidence")


def test_a_native_demo_tools_evidence_is_read_from_the_store_and_verifies(url: str) -> None:
    with Registry.open(url) as registry:
        evidence = build_evidence(registry, "payments.lookup", "1.0.0", DEMO_KEY, healthy=True,
                                  artifact=_demo_artifact)
        spec = registry.get("payments.lookup", "1.0.0")
        admission = registry.admission("payments.lookup", "1.0.0")
    assert spec is not None and admission is not None
    assert verify(evidence, TRUSTED) == []
    assert evidence["admissionDigest"] == admission.digest
    assert evidence["descriptorSha256"] == spec.content_digest == admission.contract_digest
    assert evidence["artifactSha256"] == DEMO_MODULE_SHA
    assert (evidence["registryStatus"], evidence["routeRestore"]) == ("active", "")


def test_an_upstream_tools_artifact_is_its_descriptor_digest(url: str) -> None:
    tool = {"name": "search", "description": "search the files.",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}},
                            "required": ["q"]}}
    with Registry.open(url) as registry:
        upstreams = Upstreams(registry)
        upstreams.add(UpstreamDefinition(name="files", command=("files-server",), prefix="f."),
                      origin="cli", actor="ops")
        upstreams.apply_listing("files", [tool], actor="sync")
        evidence = build_evidence(registry, "f.search", "1.0.0", DEMO_KEY, healthy=True)
    assert evidence["artifactSha256"] == descriptor_digest(tool)
    assert verify(evidence, TRUSTED) == []


def test_a_deprecated_target_is_refused_as_not_active_and_names_the_restore_command(
        url: str, key_env: dict[str, str], healthy_file: str) -> None:
    result = _run(["db.query", "--version", "3.0.0", "--registry", url, "--window",
                   healthy_file, "--demo", "--json"], key_env)
    assert result.exit_code == 1, result.output
    evidence = loads_json(result.stdout)
    assert evidence["registryStatus"] == "retired"
    assert evidence["routeRestore"] == "toolkeeper deprecate db.query 4.0.0 --successor 3.0.0"
    assert "rollback.not_active at $.registryStatus" in result.stderr
    trusted = {"release-controller": bytes.fromhex(HEX_KEY)}
    assert [r["code"] for r in verify(evidence, trusted)] == ["rollback.not_active"]


def test_an_active_healthy_demo_version_exits_0_and_its_evidence_verifies(
        url: str, key_env: dict[str, str], healthy_file: str) -> None:
    result = _run(["payments.lookup", "--version", "1.0.0", "--registry", url, "--window",
                   healthy_file, "--demo", "--json"], key_env)
    assert result.exit_code == 0, result.output
    evidence = loads_json(result.stdout)
    assert evidence["artifactSha256"] == DEMO_MODULE_SHA
    assert verify(evidence, {"release-controller": bytes.fromhex(HEX_KEY)}) == []
    human = _run(["payments.lookup", "--version", "1.0.0", "--registry", url, "--window",
                  healthy_file, "--demo"], key_env)
    assert human.exit_code == 0 and "payments.lookup 1.0.0 (active, healthy)" in human.stdout


def test_a_window_from_an_empty_call_log_is_not_healthy(
        url: str, key_env: dict[str, str], tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text('{"minSamples": 10, "maxErrorRate": 0.01}')
    result = _run(["payments.lookup", "--version", "1.0.0", "--registry", url, "--policy",
                   str(policy), "--since", "1h", "--demo", "--json"], key_env)
    assert result.exit_code == 1, result.output
    assert loads_json(result.stdout)["healthy"] is False
    assert "rollback.unhealthy at $.healthy" in result.stderr


def test_a_version_without_an_admission_record_is_refused(url: str) -> None:
    path = url.removeprefix("sqlite://")
    with sqlite3.connect(path) as conn:  # as if published before the store kept records:
        conn.execute("DROP TRIGGER admissions_no_delete")  # (the trigger forbids it otherwise)
        conn.execute("DELETE FROM admissions WHERE name = 'payments.lookup'")
    with Registry.open(url) as registry, pytest.raises(ToolkeeperError) as info:
        evidence_payload(registry, "payments.lookup", "1.0.0", healthy=True,
                         artifact=_demo_artifact)
    assert info.value.code == "gate.no_admission_record"
    assert info.value.data == {"tool": "payments.lookup", "version": "1.0.0"}


def test_unknown_versions_and_missing_keys_are_bad_input(
        url: str, key_env: dict[str, str], healthy_file: str) -> None:
    with Registry.open(url) as registry, pytest.raises(NotFoundError) as info:
        evidence_payload(registry, "db.query", "9.0.0", healthy=True)
    assert info.value.code == "registry.not_found"
    unknown = _run(["db.query", "--version", "9.0.0", "--registry", url, "--window",
                    healthy_file, "--json"], key_env)
    assert unknown.exit_code == 2
    assert loads_json(unknown.stdout)["error"]["code"] == "registry.not_found"
    no_key = _run(["payments.lookup", "--version", "1.0.0", "--registry", url, "--window",
                   healthy_file, "--demo", "--json"], {})
    assert no_key.exit_code == 2
    error = loads_json(no_key.stdout)["error"]
    assert error["code"] == "gate.no_signing_key"
    assert error["data"]["variables"] == ["TOOLKEEPER_GATE_KEY_ID", "TOOLKEEPER_GATE_KEY_FILE"]
    no_artifact = _run(["payments.lookup", "--version", "1.0.0", "--registry", url, "--window",
                        healthy_file, "--json"], key_env)
    assert no_artifact.exit_code == 2
    assert loads_json(no_artifact.stdout)["error"]["code"] == "gate.no_artifact"


def test_a_bad_key_file_is_refused_without_its_content(
        url: str, tmp_path: Path, healthy_file: str) -> None:
    secret = "deadbeef" * 4  # 16 bytes: too short to be an HMAC secret
    (tmp_path / "short.key").write_text(secret)
    env = {"TOOLKEEPER_GATE_KEY_ID": "rc", "TOOLKEEPER_GATE_KEY_FILE": str(tmp_path / "short.key")}
    result = _run(["payments.lookup", "--version", "1.0.0", "--registry", url, "--window",
                   healthy_file, "--demo", "--json"], env)
    assert result.exit_code == 2
    error = loads_json(result.stdout)["error"]
    assert (error["code"], error["data"]) == ("gate.key_invalid",
                                              {"path": str(tmp_path / "short.key")})
    assert secret not in result.output


def test_a_window_file_that_is_not_a_window_result_is_refused(
        url: str, key_env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text('{"healthy": true}')
    result = _run(["payments.lookup", "--version", "1.0.0", "--registry", url, "--window",
                   str(tmp_path / "w.json"), "--demo", "--json"], key_env)
    assert result.exit_code == 2
    assert loads_json(result.stdout)["error"]["code"] == "gate.window_invalid"
