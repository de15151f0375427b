"""The attested decision (issue 23): the gate's decision as an in-toto Statement in a DSSE
envelope, signed with Ed25519 or (labelled internal) HMAC-SHA-256; it verifies offline with the
signer's key alone, names both subjects, the policy and every input by digest, and fails to
verify when any byte of it changes."""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from decision_kit import TRUSTED, evidence, make
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.attestation import (
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    sign_decision,
    verify_envelope,
)
from toolkeeper.gate.decision import decide
from toolkeeper.gate.rollback import ED25519, HMAC_SHA256

_ED_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


@dataclass(frozen=True)
class _Hmac:
    key_id: str = "gate-internal"
    algorithm: str = HMAC_SHA256
    secret: bytes = b"g" * 32

    def sign(self, data: bytes) -> bytes:
        return hmac.new(self.secret, data, hashlib.sha256).digest()


@dataclass(frozen=True)
class _Ed:
    key_id: str = "gate-release"
    algorithm: str = ED25519

    def sign(self, data: bytes) -> bytes:
        return _ED_KEY.sign(data)


def _envelope(signer: Any = None) -> dict[str, Any]:
    made = make()
    return sign_decision(decide(made, TRUSTED), evidence()["policy"], signer or _Ed())


def _ed_trusted() -> dict[str, Any]:
    return {"gate-release": _ED_KEY.public_key()}


def test_the_statement_names_the_subjects_the_policy_and_every_input() -> None:
    envelope = _envelope()
    assert envelope["payloadType"] == PAYLOAD_TYPE
    statement, refusals = verify_envelope(envelope, _ed_trusted())
    assert refusals == []
    made = make()
    assert statement["_type"] == STATEMENT_TYPE
    assert statement["predicateType"] == PREDICATE_TYPE
    assert [s["name"] for s in statement["subject"]] == [
        "candidate:payments.lookup@4.1.0", "rollback-target:payments.lookup@4.0.0"]
    assert statement["subject"][1]["digest"] == {"sha256": "4" * 64}
    predicate = statement["predicate"]
    assert predicate["outcome"] == "promote"
    assert predicate["evidenceDigest"] == made["digest"]
    assert predicate["inputs"] == {n: s["digest"] for n, s in made["sections"].items()}
    assert predicate["policy"]["digest"] == made["sections"]["policy"]["digest"]
    assert predicate["signer"] == {"keyid": "gate-release", "algorithm": ED25519,
                                   "internal": False}
    assert predicate["gate"]["name"] == "toolkeeper"


def test_an_hmac_attestation_is_labelled_internal_and_needs_the_shared_key() -> None:
    envelope = _envelope(_Hmac())
    statement, refusals = verify_envelope(envelope, {"gate-internal": b"g" * 32})
    assert refusals == [] and statement["predicate"]["signer"]["internal"] is True
    assert verify_envelope(envelope, {"gate-internal": b"x" * 32})[1] == [
        {"code": "attestation.bad_signature", "path": "$.signatures[0].sig"}]
    # an Ed25519 key under the same id never verifies an HMAC envelope
    assert verify_envelope(envelope, {"gate-internal": _ED_KEY.public_key()})[1] == [
        {"code": "attestation.bad_signature", "path": "$.signatures[0].sig"}]


def test_an_untrusted_signer_is_refused() -> None:
    assert verify_envelope(_envelope(), {"someone": _ED_KEY.public_key()})[1] == [
        {"code": "attestation.untrusted_signer", "path": "$.signatures[0].keyid"}]


def test_the_same_decision_signs_to_the_same_envelope() -> None:
    assert json.dumps(_envelope()) == json.dumps(_envelope())


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_changed_byte_of_the_payload_fails_verification(data: st.DataObject) -> None:
    envelope = _envelope()
    payload = bytearray(base64.b64decode(envelope["payload"]))
    at = data.draw(st.integers(0, len(payload) - 1))
    payload[at] ^= data.draw(st.integers(1, 255))
    changed = {**envelope, "payload": base64.b64encode(bytes(payload)).decode()}
    # the signature is checked before the payload is read: whatever the change broke
    assert verify_envelope(changed, _ed_trusted())[1] == [
        {"code": "attestation.bad_signature", "path": "$.signatures[0].sig"}]


def test_a_changed_payload_type_or_signature_fails_verification() -> None:
    envelope = _envelope()
    assert verify_envelope({**envelope, "payloadType": "application/json"}, _ed_trusted())[1] \
        == [{"code": "attestation.bad_signature", "path": "$.signatures[0].sig"}]
    sig = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
    sig[0] ^= 1
    forged = copy.deepcopy(envelope)
    forged["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    assert verify_envelope(forged, _ed_trusted())[1] == [
        {"code": "attestation.bad_signature", "path": "$.signatures[0].sig"}]


@pytest.mark.parametrize("value", [
    pytest.param([], id="not-an-object"),
    pytest.param({"payload": "", "payloadType": PAYLOAD_TYPE, "signatures": []},
                 id="no-signature"),
    pytest.param({"payload": "!!", "payloadType": PAYLOAD_TYPE,
                  "signatures": [{"keyid": "k", "sig": "AA=="}]}, id="not-base64"),
    pytest.param({"payload": "e30=", "payloadType": PAYLOAD_TYPE,
                  "signatures": [{"keyid": "k", "sig": 7}]}, id="sig-not-a-string"),
])
def test_what_is_not_an_envelope_is_malformed(value: Any) -> None:
    with pytest.raises(ToolkeeperError) as caught:
        verify_envelope(value, _ed_trusted())
    assert caught.value.code == "attestation.malformed"


def test_a_signed_payload_that_is_not_a_statement_is_malformed() -> None:
    from securesystemslib.dsse import Envelope

    envelope = Envelope(b'{"_type": "x"}', PAYLOAD_TYPE, {})
    sig = _ED_KEY.sign(envelope.pae())
    value = {"payload": base64.b64encode(envelope.payload).decode(), "payloadType": PAYLOAD_TYPE,
             "signatures": [{"keyid": "gate-release", "sig": base64.b64encode(sig).decode()}]}
    with pytest.raises(ToolkeeperError) as caught:
        verify_envelope(value, _ed_trusted())
    assert caught.value.code == "attestation.malformed"


def test_a_subject_without_a_digest_is_refused() -> None:
    made = evidence()
    del made["healthWindows"]["candidate"]["descriptorSha256"]
    from toolkeeper.gate.evidence import bundle

    with pytest.raises(ToolkeeperError) as caught:
        sign_decision(decide(bundle(made), TRUSTED), made["policy"], _Ed())
    assert caught.value.code == "gate.no_subject_digest"
