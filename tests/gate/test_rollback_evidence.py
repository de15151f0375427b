"""Rollback evidence verification: signed evidence of an active, healthy target verifies; each
refusal has its code and path: ``healthy: "yes"``, a missing or malformed SHA-256 field, a status
other than active, an unhealthy target, an unknown field, an untrusted signer, a bad HMAC and a
payload changed after signing (any change of any field, a property)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolkeeper.gate.rollback import FIELDS, sign_hmac, verify

KEY = b"fixture key: not a secret, labelled so"
TRUSTED = {"release-controller": KEY}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


PAYLOAD: dict[str, Any] = {
    "tool": "payments.lookup", "version": "4.0.0", "admissionDigest": _digest("admission"),
    "artifactSha256": _digest("artifact"), "descriptorSha256": _digest("descriptor"),
    "registryStatus": "active", "healthy": True,
    "routeRestore": "toolkeeper release abort payments.lookup"}


def _signed(**changes: Any) -> dict[str, Any]:
    return sign_hmac({**PAYLOAD, **changes}, "release-controller", KEY)


def _codes(evidence: Any) -> list[tuple[str, str]]:
    return [(r["code"], r["path"]) for r in verify(evidence, TRUSTED)]


def test_signed_evidence_of_an_active_healthy_target_verifies() -> None:
    assert verify(_signed(), TRUSTED) == []


@pytest.mark.parametrize(("changes", "refusal"), [
    ({"healthy": "yes"}, ("rollback.field_invalid", "$.healthy")),
    ({"healthy": 1}, ("rollback.field_invalid", "$.healthy")),
    ({"artifactSha256": "abc"}, ("rollback.digest_invalid", "$.artifactSha256")),
    ({"descriptorSha256": _digest("d").upper()}, ("rollback.digest_invalid", "$.descriptorSha256")),
    ({"admissionDigest": None}, ("rollback.field_invalid", "$.admissionDigest")),
    ({"registryStatus": "deprecated"}, ("rollback.not_active", "$.registryStatus")),
    ({"healthy": False}, ("rollback.unhealthy", "$.healthy")),
    ({"trustMe": True}, ("rollback.field_invalid", "$.trustMe")),
])
def test_each_refusal_has_its_code_and_path(changes: dict[str, Any],
                                             refusal: tuple[str, str]) -> None:
    assert _codes(_signed(**changes)) == [refusal]  # signed as it is: only the field refuses


def test_a_missing_digest_field_is_refused() -> None:
    evidence = _signed()
    del evidence["artifactSha256"]
    assert ("rollback.field_invalid", "$.artifactSha256") in _codes(evidence)


def test_an_untrusted_signer_and_a_bad_hmac_are_refused() -> None:
    other = sign_hmac(PAYLOAD, "someone-else", KEY)
    assert _codes(other) == [("rollback.untrusted_signer", "$.attestation.signer")]
    forged = sign_hmac(PAYLOAD, "release-controller", b"a guessed key")
    assert _codes(forged) == [("rollback.bad_signature", "$.attestation.proofValue")]
    unsigned = dict(PAYLOAD)
    assert _codes(unsigned) == [("rollback.field_invalid", "$.attestation")]
    assert _codes(["not", "an", "object"]) == [("rollback.field_invalid", "$")]


@given(st.sampled_from(sorted(FIELDS)), st.data())
def test_a_payload_changed_after_signing_is_refused(field: str, data: st.DataObject) -> None:
    evidence = _signed()
    value = evidence[field]
    if isinstance(value, bool):
        changed: Any = not value
    else:
        index = data.draw(st.integers(0, len(value) - 1))
        replacement = data.draw(st.sampled_from("0123456789abcdef.-x").filter(
            lambda c: c != value[index]))
        changed = value[:index] + replacement + value[index + 1:]
    evidence[field] = changed
    assert ("rollback.bad_signature", "$.attestation.proofValue") in _codes(evidence)


def test_ed25519_evidence_verifies_with_the_public_key_alone() -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from toolkeeper.gate.rollback import sign_ed25519

    private = Ed25519PrivateKey.generate()
    evidence = sign_ed25519(PAYLOAD, "controller-ed", private)
    assert verify(evidence, {"controller-ed": private.public_key()}) == []
    stranger = Ed25519PrivateKey.generate().public_key()
    assert _codes_with(evidence, {"controller-ed": stranger}) == [
        ("rollback.bad_signature", "$.attestation.proofValue")]
    evidence["version"] = "4.0.1"  # changed after signing
    assert _codes_with(evidence, {"controller-ed": private.public_key()}) == [
        ("rollback.bad_signature", "$.attestation.proofValue")]


def test_a_key_verifies_only_its_own_algorithm() -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from toolkeeper.gate.rollback import sign_ed25519

    private = Ed25519PrivateKey.generate()
    ed_signed = sign_ed25519(PAYLOAD, "release-controller", private)
    assert _codes(ed_signed) == [("rollback.bad_signature", "$.attestation.proofValue")]
    hmac_signed = _signed()
    assert _codes_with(hmac_signed, {"release-controller": private.public_key()}) == [
        ("rollback.bad_signature", "$.attestation.proofValue")]
    other = {**hmac_signed, "attestation": {**hmac_signed["attestation"], "algorithm": "none"}}
    assert _codes(other) == [("rollback.field_invalid", "$.attestation.algorithm")]


def _codes_with(evidence: Any, trusted: Any) -> list[tuple[str, str]]:
    return [(r["code"], r["path"]) for r in verify(evidence, trusted)]
