"""The attested decision: the gate's decision as an in-toto Statement (v1) in a DSSE envelope,
verifiable offline with the signer's key and nothing else.

The Statement's subjects are the candidate (its descriptor SHA-256) and the rollback target
(its descriptor SHA-256, as its rollback evidence names it); its predicate
(:data:`PREDICATE_TYPE`) names the gate and its version, the policy and its digest, every
input's digest, the evidence digest, the outcome, the reasons and their counts, and the signer
(its key id and algorithm). The envelope (securesystemslib's DSSE ``Envelope``: the payload
and its type, base64, and the signatures over the DSSE pre-authentication encoding) is signed
with Ed25519 or, labelled ``internal`` in the predicate because only a holder of the shared key
can check it, HMAC-SHA-256.

:func:`verify_envelope` checks the signature before it reads the payload, and refuses, each
with its code: a signer not among the trusted keys (``attestation.untrusted_signer``), a
signature that does not verify (``attestation.bad_signature``: any byte of the payload or its
type changed, or another key), a signer the predicate names otherwise than the envelope and
its key (``attestation.signer_mismatch``), and an envelope that is not one, or whose signed
payload is not a Statement of this predicate type (``attestation.malformed``).
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping
from typing import Any, Final, Protocol

from securesystemslib.dsse import Envelope
from securesystemslib.signer import Signature

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.decision import Decision, gate_identity
from toolkeeper.gate.rollback import ED25519, HMAC_SHA256, TrustedKey, signature_holds

__all__ = ["PAYLOAD_TYPE", "PREDICATE_TYPE", "STATEMENT_TYPE", "Signer", "sign_decision",
           "statement", "verify_envelope"]

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
PREDICATE_TYPE: Final = "https://toolkeeper.dev/attestations/release-decision/v1"


class Signer(Protocol):
    """What signs: a key id, its algorithm, and the raw signature of bytes
    (:class:`toolkeeper.gate.keys.SigningKey` is one)."""

    @property
    def key_id(self) -> str: ...

    @property
    def algorithm(self) -> str: ...

    def sign(self, data: bytes) -> bytes: ...


def _subject(role: str, party: Mapping[str, Any]) -> dict[str, Any]:
    digest = party.get("descriptorSha256")
    if not isinstance(digest, str):
        raise ToolkeeperError(f"the {role}'s descriptor SHA-256 is not in the evidence: an "
                              "attestation names both subjects by digest",
                              code="gate.no_subject_digest", data={"subject": role})
    return {"name": f"{role}:{party['tool']}@{party['version']}", "digest": {"sha256": digest}}


def statement(decision: Decision, policy: Any, signer: Signer) -> dict[str, Any]:
    """The in-toto Statement of ``decision`` (``policy``: the bundle's policy section)."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [_subject("candidate", decision.candidate),
                    _subject("rollback-target", decision.rollback_target)],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "gate": gate_identity(),
            "policy": {"digest": decision.sections["policy"], "content": policy},
            "inputs": dict(sorted(decision.sections.items())),
            "evidenceDigest": decision.evidence_digest,
            "outcome": decision.outcome,
            "reasons": [r.to_dict() for r in decision.reasons],
            "counts": decision.counts(),
            "signer": {"keyid": signer.key_id, "algorithm": signer.algorithm,
                       "internal": signer.algorithm == HMAC_SHA256},
        },
    }


def sign_decision(decision: Decision, policy: Any, signer: Signer) -> dict[str, Any]:
    """The DSSE envelope (its JSON form) of ``decision``'s Statement, signed by ``signer``."""
    envelope = Envelope(canonical_json(statement(decision, policy, signer)), PAYLOAD_TYPE, {})
    envelope.signatures[signer.key_id] = Signature(signer.key_id, signer.sign(envelope.pae()).hex())
    out: dict[str, Any] = envelope.to_dict()
    return out


def _malformed(why: str) -> ToolkeeperError:
    return ToolkeeperError(f"not an attested decision: {why}", code="attestation.malformed",
                           data={"reason": why})


def _envelope(value: Any) -> Envelope:
    if not isinstance(value, dict) or set(value) != {"payload", "payloadType", "signatures"} \
            or not isinstance(value["payloadType"], str) \
            or not isinstance(value["signatures"], list) or len(value["signatures"]) != 1 \
            or not isinstance(value["signatures"][0], dict) \
            or set(value["signatures"][0]) != {"keyid", "sig"} \
            or not all(isinstance(v, str) for v in value["signatures"][0].values()):
        raise _malformed("a DSSE envelope with exactly one signature (keyid, sig)")
    try:
        return Envelope.from_dict(json.loads(json.dumps(value)))  # from_dict edits its input
    except (KeyError, ValueError, TypeError, binascii.Error):
        raise _malformed("its payload or signature is not base64") from None


def _statement(envelope: Envelope) -> dict[str, Any] | None:
    """The payload as a Statement of this predicate, or None."""
    try:
        body = json.loads(envelope.payload)
    except ValueError:
        return None
    if envelope.payload_type != PAYLOAD_TYPE or not isinstance(body, dict) or body.get(
            "_type") != STATEMENT_TYPE or body.get("predicateType") != PREDICATE_TYPE \
            or not isinstance(body.get("predicate"), dict):
        return None
    return body


def _algorithm(key: TrustedKey) -> str:
    return HMAC_SHA256 if isinstance(key, bytes) else ED25519


def verify_envelope(value: Any, trusted: Mapping[str, TrustedKey]
                    ) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The Statement of ``value`` and every refusal of it under ``trusted``, sorted (empty:
    it verifies). The signature is checked first, over the envelope's pre-authentication
    encoding of the payload as it stands, so a changed byte of the payload or of its type is
    ``attestation.bad_signature`` whatever it did to the payload; only a payload whose
    signature holds is read. An envelope that cannot be read, or whose signed payload is not
    a Statement of this predicate, is ToolkeeperError ``attestation.malformed``. The
    Statement is empty when the signature does not hold and the payload is not one."""
    envelope = _envelope(value)
    (signature,) = envelope.signatures.values()
    key = trusted.get(signature.keyid)
    if key is None:
        return _statement(envelope) or {}, [
            {"code": "attestation.untrusted_signer", "path": "$.signatures[0].keyid"}]
    if not signature_holds(key, _algorithm(key), envelope.pae(), signature.signature):
        return _statement(envelope) or {}, [
            {"code": "attestation.bad_signature", "path": "$.signatures[0].sig"}]
    body = _statement(envelope)
    if body is None:
        raise _malformed(f"its signed payload is not an in-toto Statement of {PREDICATE_TYPE}")
    named = body["predicate"].get("signer")
    if not isinstance(named, dict) or named.get("keyid") != signature.keyid \
            or named.get("algorithm") != _algorithm(key):
        return body, [{"code": "attestation.signer_mismatch",
                       "path": "$.payload.predicate.signer"}]
    return body, []
