"""The gate's keys: an Ed25519 or HMAC signing key from the [gate] configuration or from the
environment, trusted keys from both (the configuration's kept on a clash), evidence signed by
an Ed25519 key verified with its public half alone; a bad key file is ``gate.key_invalid`` with
its path and never its content; the demo key is labelled a fixture."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from toolkeeper.config import parse_config
from toolkeeper.errors import ConfigError, ToolkeeperError
from toolkeeper.gate.keys import (
    DEMO_KEY,
    load_signing_key,
    load_trusted_key,
    signing_key_from,
    trusted_keys_from,
)
from toolkeeper.gate.rollback import ED25519, HMAC_SHA256, verify

HEX_KEY = "0123456789abcdef" * 4
PAYLOAD = {"tool": "payments.lookup", "version": "1.0.0", "admissionDigest": "a" * 64,
           "artifactSha256": "b" * 64, "descriptorSha256": "c" * 64, "registryStatus": "active",
           "healthy": True, "routeRestore": ""}


@pytest.fixture
def ed25519_files(tmp_path: Path) -> tuple[Path, Path]:
    private = Ed25519PrivateKey.generate()
    (tmp_path / "signing.pem").write_bytes(private.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    (tmp_path / "public.pem").write_bytes(private.public_key().public_bytes(
        Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    return tmp_path / "signing.pem", tmp_path / "public.pem"


def test_a_configured_ed25519_key_signs_what_its_public_key_alone_verifies(
        tmp_path: Path, ed25519_files: tuple[Path, Path]) -> None:
    config = parse_config(
        '[gate]\nsigning_key_id = "release-controller"\nsigning_key_file = "signing.pem"\n'
        '[[gate.trusted_keys]]\nid = "release-controller"\nfile = "public.pem"\n'
        'algorithm = "ed25519"\n', base=tmp_path)
    key = signing_key_from(config.gate, {})
    assert key is not None and (key.key_id, key.algorithm) == ("release-controller", ED25519)
    trusted = trusted_keys_from(config.gate, {})
    evidence = key.sign_evidence(PAYLOAD)
    assert evidence["attestation"]["algorithm"] == ED25519
    assert verify(evidence, trusted) == []


def test_the_environment_names_the_key_when_the_configuration_does_not(
        tmp_path: Path, ed25519_files: tuple[Path, Path]) -> None:
    (tmp_path / "hmac.key").write_text(f"  {HEX_KEY}\n")
    env = {"TOOLKEEPER_GATE_KEY_ID": "ci", "TOOLKEEPER_GATE_KEY_FILE": str(tmp_path / "hmac.key"),
           "TOOLKEEPER_GATE_TRUSTED_KEYS": f"ext={ed25519_files[1]}, ci={tmp_path / 'hmac.key'}"}
    key = signing_key_from(parse_config("").gate, env)
    assert key is not None and (key.key_id, key.algorithm) == ("ci", HMAC_SHA256)
    assert key.trusted() == bytes.fromhex(HEX_KEY)
    assert sorted(trusted_keys_from(None, env)) == ["ci", "ext"]
    assert verify(key.sign_evidence(PAYLOAD), trusted_keys_from(None, env)) == []
    assert signing_key_from(None, {}) is None


def test_a_configured_trusted_key_is_kept_over_the_environments_of_the_same_id(
        tmp_path: Path, ed25519_files: tuple[Path, Path]) -> None:
    (tmp_path / "hmac.key").write_text(HEX_KEY)
    config = parse_config('[[gate.trusted_keys]]\nid = "rc"\nfile = "hmac.key"\n', base=tmp_path)
    trusted = trusted_keys_from(config.gate, {"TOOLKEEPER_GATE_TRUSTED_KEYS":
                                              f"rc={ed25519_files[1]}"})
    assert trusted == {"rc": bytes.fromhex(HEX_KEY)}


@pytest.mark.parametrize(("content", "why"), [
    ("deadbeef" * 4, "too short"),
    ("not hex at all, but a secret-ish phrase", "not hex"),
    ("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n", "bad PEM"),
])
def test_a_bad_signing_key_file_is_key_invalid_without_its_content(
        tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "bad.key"
    path.write_text(content)
    with pytest.raises(ToolkeeperError) as info:
        load_signing_key("rc", path)
    assert (info.value.code, info.value.data) == ("gate.key_invalid", {"path": str(path)}), why
    assert content.strip() not in str(info.value)


def test_a_trusted_key_of_another_algorithm_or_missing_file_is_key_invalid(
        tmp_path: Path, ed25519_files: tuple[Path, Path]) -> None:
    with pytest.raises(ToolkeeperError) as info:
        load_trusted_key(HMAC_SHA256, ed25519_files[1])
    assert info.value.code == "gate.key_invalid"
    with pytest.raises(ToolkeeperError) as info:
        load_trusted_key(None, ed25519_files[0])  # a private key is not a public one
    assert info.value.code == "gate.key_invalid"
    with pytest.raises(ToolkeeperError) as info:
        load_trusted_key(None, tmp_path / "absent.key")
    assert info.value.data == {"path": str(tmp_path / "absent.key")}


def test_half_a_key_in_the_environment_or_configuration_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolkeeperError) as info:
        signing_key_from(None, {"TOOLKEEPER_GATE_KEY_ID": "rc"})
    assert (info.value.code, info.value.data) == ("gate.key_invalid",
                                                  {"variable": "TOOLKEEPER_GATE_KEY_FILE"})
    with pytest.raises(ToolkeeperError) as info:
        trusted_keys_from(None, {"TOOLKEEPER_GATE_TRUSTED_KEYS": "just-a-path"})
    assert info.value.data == {"variable": "TOOLKEEPER_GATE_TRUSTED_KEYS"}
    (tmp_path / "hmac.key").write_text(HEX_KEY)
    with pytest.raises(ConfigError) as config_info:
        parse_config('[gate]\nsigning_key_file = "hmac.key"\n', base=tmp_path)
    assert (config_info.value.code, config_info.value.data["key"]) == (
        "config.missing_key", "gate.signing_key_id")


def test_the_demo_key_is_a_labelled_fixture_and_no_key_shows_its_secret() -> None:
    assert DEMO_KEY.key_id == "toolkeeper-demo-fixture"
    assert DEMO_KEY.label is not None and "not a secret" in DEMO_KEY.label
    assert verify(DEMO_KEY.sign_evidence(PAYLOAD), {DEMO_KEY.key_id: DEMO_KEY.trusted()}) == []
    secret = DEMO_KEY.secret
    assert isinstance(secret, bytes) and secret.decode() not in repr(DEMO_KEY)
    assert len(DEMO_KEY.sign(b"data")) == 32
