"""The sealer: what it seals opens only for the same purpose, binding, key set and time, and
every refusal carries the module's stable reason."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkeeper.errors import ToolkeeperError
from toolkeeper.protocol.sealing import KEY_BYTES, MAX_TOKEN_CHARS, Sealer, SealError

KEY_A = bytes(range(KEY_BYTES))
KEY_B = bytes(range(1, KEY_BYTES + 1))
BINDING = {"principal": "alice", "tool": "db.query", "version": "3.0.0", "arguments": "ab12"}
PAYLOAD: Any = {"round": 2, "answers": [{"ok": True}, None, 2**70, "ü"]}
NOW = 1_000_000.0


def _seal(sealer: Sealer, **overrides: Any) -> str:
    args: dict[str, Any] = {"purpose": "tools/call", "binding": BINDING, "payload": PAYLOAD,
                            "ttl_s": 60.0, "now": NOW}
    args.update(overrides)
    return sealer.seal(args["purpose"], args["binding"], args["payload"],
                       ttl_s=args["ttl_s"], now=args["now"])


def _reason(sealer: Sealer, token: Any, purpose: str = "tools/call",
            binding: dict[str, str] | None = None, now: float = NOW + 1) -> str:
    with pytest.raises(SealError) as caught:
        sealer.open(token, purpose, BINDING if binding is None else binding, now=now)
    return caught.value.reason


def _raw(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def test_sealed_payload_opens_to_the_same_json_value() -> None:
    sealer = Sealer([KEY_A])
    assert sealer.open(_seal(sealer), "tools/call", BINDING, now=NOW + 59.9) == PAYLOAD


def test_token_is_url_safe_text_without_padding() -> None:
    token = _seal(Sealer([KEY_A]))
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_two_seals_of_the_same_value_differ_only_by_nonce() -> None:
    sealer = Sealer([KEY_A])
    first, second = _seal(sealer), _seal(sealer)
    assert first != second
    assert len(first) == len(second)


def test_seal_error_is_a_toolkeeper_error_with_a_stable_code_and_data() -> None:
    error = SealError("expired")
    assert isinstance(error, ToolkeeperError)
    assert (error.code, error.data) == ("seal.expired", {"reason": "expired"})


@pytest.mark.parametrize("token", [
    "", "not a token!", "abc", "====", "A" * 40 + "*", "é" * 50, 17, None,
    "A" * (MAX_TOKEN_CHARS + 1),
], ids=["empty", "space", "short", "padding", "alphabet", "non-ascii", "int", "none", "huge"])
def test_text_that_is_not_a_token_is_malformed(token: Any) -> None:
    assert _reason(Sealer([KEY_A]), token) == "malformed"


def test_an_unknown_format_version_is_malformed() -> None:
    raw = _raw(_seal(Sealer([KEY_A])))
    assert _reason(Sealer([KEY_A]), _text(b"\x02" + raw[1:])) == "malformed"


def test_a_noncanonical_spelling_of_the_same_bytes_is_malformed() -> None:
    token = _seal(Sealer([KEY_A]))
    # a spare low bit in the last character decodes to the same bytes leniently
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    spare_bits = {2: 0b1111, 3: 0b11}.get(len(token) % 4)
    assert spare_bits is not None  # the token's length leaves spare bits to abuse
    twin = token[:-1] + alphabet[alphabet.index(token[-1]) ^ 1]
    assert twin != token and _raw(twin) == _raw(token)
    assert _reason(Sealer([KEY_A]), twin) == "malformed"


def test_a_flipped_ciphertext_byte_is_unsealable() -> None:
    raw = bytearray(_raw(_seal(Sealer([KEY_A]))))
    raw[20] ^= 0x01
    assert _reason(Sealer([KEY_A]), _text(bytes(raw))) == "unsealable"


def test_a_truncated_token_is_unsealable() -> None:
    raw = _raw(_seal(Sealer([KEY_A])))
    assert _reason(Sealer([KEY_A]), _text(raw[:-1])) == "unsealable"


def test_a_token_sealed_with_another_key_is_unsealable() -> None:
    assert _reason(Sealer([KEY_B]), _seal(Sealer([KEY_A]))) == "unsealable"


def test_a_token_from_an_ephemeral_sealer_opens_on_no_other_sealer() -> None:
    first, second = Sealer.ephemeral(), Sealer.ephemeral()
    assert first.ephemeral_key and not Sealer([KEY_A]).ephemeral_key
    assert _reason(second, _seal(first)) == "unsealable"


def test_a_token_for_another_purpose_is_a_purpose_mismatch() -> None:
    sealer = Sealer([KEY_A])
    assert _reason(sealer, _seal(sealer), purpose="tools/list") == "purpose_mismatch"


@pytest.mark.parametrize("key", sorted(BINDING))
def test_each_differing_binding_key_is_named_in_the_reason(key: str) -> None:
    sealer = Sealer([KEY_A])
    assert _reason(sealer, _seal(sealer), binding={**BINDING, key: "other"}) == f"{key}_mismatch"


def test_a_binding_key_present_on_one_side_only_is_a_mismatch() -> None:
    sealer = Sealer([KEY_A])
    assert _reason(sealer, _seal(sealer), binding={**BINDING, "tenant": "t1"}) == "tenant_mismatch"
    narrower = {k: v for k, v in BINDING.items() if k != "tool"}
    assert _reason(sealer, _seal(sealer), binding=narrower) == "tool_mismatch"


def test_binding_keys_are_compared_in_sorted_order() -> None:
    sealer = Sealer([KEY_A])
    both = {**BINDING, "tool": "other", "principal": "mallory"}
    assert _reason(sealer, _seal(sealer), binding=both) == "principal_mismatch"


def test_a_token_at_or_after_its_expiry_is_expired() -> None:
    sealer = Sealer([KEY_A])
    token = _seal(sealer, ttl_s=60.0)
    assert _reason(sealer, token, now=NOW + 60.0) == "expired"
    assert sealer.open(token, "tools/call", BINDING, now=NOW + 59.999) == PAYLOAD


def test_binding_and_purpose_are_judged_before_expiry() -> None:
    sealer = Sealer([KEY_A])
    token = _seal(sealer, ttl_s=1.0)
    late = NOW + 10
    assert _reason(sealer, token, binding={**BINDING, "tool": "x"}, now=late) == "tool_mismatch"
    assert _reason(sealer, token, purpose="tools/list", now=late) == "purpose_mismatch"


def test_rotation_seals_with_the_first_key_and_opens_with_any() -> None:
    old, rotated = Sealer([KEY_A]), Sealer([KEY_B, KEY_A])
    assert rotated.open(_seal(old), "tools/call", BINDING, now=NOW) == PAYLOAD
    assert _reason(old, _seal(rotated)) == "unsealable"
    assert Sealer([KEY_B]).open(_seal(rotated), "tools/call", BINDING, now=NOW) == PAYLOAD


@pytest.mark.parametrize("keys", [[], [b"short"], [KEY_A, b"x" * 31], ["a" * 32]],
                         ids=["none", "short", "second-short", "text"])
def test_keys_that_are_not_32_bytes_are_refused(keys: list[Any]) -> None:
    with pytest.raises(ValueError):
        Sealer(keys)


@pytest.mark.parametrize("binding", [{"Tool": "x"}, {"tool-id": "x"}, {"tool": 3}],
                         ids=["upper", "dash", "not-text"])
def test_binding_keys_must_be_identifiers_with_text_values(binding: Any) -> None:
    with pytest.raises(ValueError):
        _seal(Sealer([KEY_A]), binding=binding)


@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(position=st.integers(min_value=0), mask=st.integers(min_value=1, max_value=255),
       payload=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                            lambda inner: st.lists(inner, max_size=3)
                            | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                            max_leaves=8))
def test_a_token_with_any_flipped_byte_never_opens(position: int, mask: int, payload: Any) -> None:
    sealer = Sealer([KEY_A])
    raw = bytearray(_raw(_seal(sealer, payload=payload)))
    assert sealer.open(_text(bytes(raw)), "tools/call", BINDING, now=NOW) == payload
    raw[position % len(raw)] ^= mask
    assert _reason(sealer, _text(bytes(raw))) in {"malformed", "unsealable"}
