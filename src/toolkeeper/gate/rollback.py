"""Rollback evidence (seed 004, SPEC 6): what makes a rollback target safe to return to, and its
verification.

The evidence names the exact version to return to and what proves it: the digest of its
admission record, the SHA-256 of its artifact and of its descriptor, its registry status, its
health (``healthy``, a boolean) and the route-restore procedure. It is signed: ``attestation``
holds the signer's key id, the algorithm and the signature (``proofValue``, hex) over the
canonical JSON of every other field (:func:`payload_bytes`), so no byte of it can change unseen.
The signature is not named ``signature`` because redaction masks a key of that name wherever it
stands, and the evidence bundle keeps its sections redacted.

:func:`verify` refuses, each with its own code, and all the refusals it finds, sorted: a field
missing, of the wrong type or unknown (``rollback.field_invalid``: ``healthy: "yes"`` is not a
boolean), a SHA-256 field that is not 64 lowercase hex digits (``rollback.digest_invalid``), a
status other than ``active`` (``rollback.not_active``), a target not healthy
(``rollback.unhealthy``), a signer not among the trusted keys (``rollback.untrusted_signer``),
and a signature that does not verify (``rollback.bad_signature``: a wrong key, or a payload
changed after signing). Two algorithms: ``hmac-sha256``, the release controller's own (a shared
key, compared in constant time), and ``ed25519`` (``cryptography``), for whoever verifies outside
the release controller with its public key only. A trusted key is used for its own algorithm
only: an HMAC key never verifies an ``ed25519`` attestation, nor the reverse.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from toolkeeper.contracts.canonical import canonical_json

__all__ = ["DIGEST_FIELDS", "ED25519", "FIELDS", "HMAC_SHA256", "TrustedKey", "payload_bytes",
           "sign_ed25519", "sign_hmac", "signature_holds", "verify"]

HMAC_SHA256: Final = "hmac-sha256"
ED25519: Final = "ed25519"
TrustedKey = bytes | Ed25519PublicKey
"""An HMAC key, or an Ed25519 public key."""
DIGEST_FIELDS: Final = ("admissionDigest", "artifactSha256", "descriptorSha256")
FIELDS: Final[Mapping[str, type]] = {
    "tool": str, "version": str, "admissionDigest": str, "artifactSha256": str,
    "descriptorSha256": str, "registryStatus": str, "healthy": bool, "routeRestore": str,
}
"""Every payload field and its exact type (``bool`` is not an ``int`` here, nor the reverse)."""
_SHA256: Final = re.compile(r"[0-9a-f]{64}")


def payload_bytes(evidence: Mapping[str, Any]) -> bytes:
    """The canonical JSON of every field but ``attestation``: what is signed."""
    return canonical_json({k: v for k, v in evidence.items() if k != "attestation"})


def sign_hmac(payload: Mapping[str, Any], key_id: str, key: bytes) -> dict[str, Any]:
    """``payload`` with its HMAC-SHA-256 ``attestation`` by ``key_id``."""
    signature = hmac.new(key, payload_bytes(payload), hashlib.sha256).hexdigest()
    return {**payload, "attestation": {"signer": key_id, "algorithm": HMAC_SHA256,
                                       "proofValue": signature}}


def sign_ed25519(payload: Mapping[str, Any], key_id: str, key: Ed25519PrivateKey
                 ) -> dict[str, Any]:
    """``payload`` with its Ed25519 ``attestation`` by ``key_id`` (the signature in hex)."""
    return {**payload, "attestation": {"signer": key_id, "algorithm": ED25519,
                                       "proofValue": key.sign(payload_bytes(payload)).hex()}}


def signature_holds(key: TrustedKey, algorithm: str, payload: bytes, signature: str) -> bool:
    """Whether ``signature`` (hex) of ``payload`` holds under ``key`` for ``algorithm``."""
    if algorithm == HMAC_SHA256 and isinstance(key, bytes):
        expected = hmac.new(key, payload, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, signature)
    if algorithm == ED25519 and isinstance(key, Ed25519PublicKey):
        try:
            key.verify(bytes.fromhex(signature), payload)
        except (InvalidSignature, ValueError):
            return False
        return True
    return False  # a key of the other algorithm


def _fields(evidence: Mapping[str, Any]) -> list[tuple[str, str]]:
    refusals = []
    for name, kind in FIELDS.items():
        value = evidence.get(name)
        if type(value) is not kind:
            refusals.append(("rollback.field_invalid", f"$.{name}"))
    refusals += [("rollback.field_invalid", f"$.{name}") for name in evidence
                 if name not in FIELDS and name != "attestation"]
    for name in DIGEST_FIELDS:
        value = evidence.get(name)
        if isinstance(value, str) and not _SHA256.fullmatch(value):
            refusals.append(("rollback.digest_invalid", f"$.{name}"))
    if isinstance(evidence.get("registryStatus"), str) and evidence["registryStatus"] != "active":
        refusals.append(("rollback.not_active", "$.registryStatus"))
    if evidence.get("healthy") is False:
        refusals.append(("rollback.unhealthy", "$.healthy"))
    return refusals


def _attestation(evidence: Mapping[str, Any], trusted: Mapping[str, TrustedKey]
                 ) -> list[tuple[str, str]]:
    attestation = evidence.get("attestation")
    if not isinstance(attestation, dict) or set(attestation) != {"signer", "algorithm",
                                                                  "proofValue"} or not all(
            type(attestation[k]) is str for k in attestation):
        return [("rollback.field_invalid", "$.attestation")]
    if attestation["algorithm"] not in (HMAC_SHA256, ED25519):
        return [("rollback.field_invalid", "$.attestation.algorithm")]
    key = trusted.get(attestation["signer"])
    if key is None:
        return [("rollback.untrusted_signer", "$.attestation.signer")]
    if not signature_holds(key, attestation["algorithm"], payload_bytes(evidence),
                            attestation["proofValue"]):
        return [("rollback.bad_signature", "$.attestation.proofValue")]
    return []


def verify(evidence: Any, trusted: Mapping[str, TrustedKey]) -> list[dict[str, str]]:
    """Every refusal of ``evidence`` under the ``trusted`` keys (key id -> key), sorted by
    path then code; empty: it verifies."""
    if not isinstance(evidence, dict):
        return [{"code": "rollback.field_invalid", "path": "$"}]
    found = set(_fields(evidence)) | set(_attestation(evidence, trusted))
    return [{"code": code, "path": path} for code, path in sorted(found, key=lambda r: (r[1], r[0]))]
