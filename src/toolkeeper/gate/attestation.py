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

:func:`verify_envelope` refuses, each with its code: an envelope that is not one, or whose
payload is not a Statement of this predicate type (``attestation.malformed``), a signer not
among the trusted keys (``attestation.untrusted_signer``), a signature that does not verify
(``attestation.bad_signature``: any byte of the payload or its type changed, or another key),
and a signer in the envelope that is not the one the predicate names
(``attestation.signer_mismatch``).
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


def _parse(value: Any) -> tuple[Envelope, dict[str, Any]]:
    if not isinstance(value, dict) or set(value) != {"payload", "payloadType", "signatures"} \
            or not isinstance(value["signatures"], list) or len(value["signatures"]) != 1 \
            or not isinstance(value["signatures"][0], dict) \
            or set(value["signatures"][0]) != {"keyid", "sig"}:
        raise _malformed("a DSSE envelope with exactly one signature (keyid, sig)")
    try:
        envelope = Envelope.from_dict(json.loads(json.dumps(value)))  # from_dict edits its input
        body = json.loads(envelope.payload)
    except (KeyError, ValueError, TypeError, binascii.Error) as exc:
        raise _malformed(f"its payload or signature does not decode ({type(exc).__name__})") \
            from None
    if envelope.payload_type != PAYLOAD_TYPE or not isinstance(body, dict) or body.get(
            "_type") != STATEMENT_TYPE or body.get("predicateType") != PREDICATE_TYPE \
            or not isinstance(body.get("predicate"), dict):
        raise _malformed(f"its payload is not an in-toto Statement of {PREDICATE_TYPE}")
    return envelope, body


def verify_envelope(value: Any, trusted: Mapping[str, TrustedKey]
                    ) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The Statement of ``value`` and every refusal of it under ``trusted``, sorted (empty:
    it verifies); an envelope that cannot be read is ToolkeeperError
    ``attestation.malformed``."""
    envelope, body = _parse(value)
    (signature,) = envelope.signatures.values()
    named = body["predicate"].get("signer")
    algorithm = named.get("algorithm") if isinstance(named, dict) else None
    found: list[tuple[str, str]] = []
    if not isinstance(named, dict) or named.get("keyid") != signature.keyid or algorithm not in (
            HMAC_SHA256, ED25519):
        found.append(("$.payload.predicate.signer", "attestation.signer_mismatch"))
    key = trusted.get(signature.keyid)
    if key is None:
        found.append(("$.signatures[0].keyid", "attestation.untrusted_signer"))
    elif not signature_holds(key, str(algorithm), envelope.pae(), signature.signature):
        found.append(("$.signatures[0].sig", "attestation.bad_signature"))
    return body, [{"code": code, "path": path} for path, code in sorted(found)]
