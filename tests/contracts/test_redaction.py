"""Redaction (SPEC 5.6): denied keys by canonical form, secret value shapes anywhere, benign
keys untouched, evidence as (path, rule) without the value, input unchanged."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from toolkeeper.contracts.redaction import DENYLIST, REDACTED, canonical_key, redact

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize("key", [
    "Authorization", "cookie", "Set-Cookie", "x_api_key", "X-API-KEY", "accessToken",
    "access_token", "ACCESS.TOKEN", "client secret", "registrationAccessToken", "token",
    "Password", "api_key", "apiKey",
])
def test_a_denied_key_in_any_spelling_has_its_whole_value_redacted(key: str) -> None:
    redacted, evidence = redact({key: {"nested": "value"}, "other": 1})
    assert redacted == {key: REDACTED, "other": 1}
    assert evidence == [(f"$.{key}", "key.denylist")]


@pytest.mark.parametrize("key", ["max_tokens", "maxTokens", "token_count", "tokens", "author",
                                 "secretary", "password_hint_shown"])
def test_benign_keys_that_only_contain_a_denied_word_are_kept(key: str) -> None:
    assert redact({key: "v"}) == ({key: "v"}, [])


@pytest.mark.parametrize(("text", "rule"), [
    (f"token is {JWT} ok", "value.jwt"),
    ("Authorization: Bearer abcdef0123456789", "value.bearer"),
    (PEM, "value.private_key"),
    ("key sk-proj-abcdefghijklmnop1234", "value.provider_key"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123", "value.provider_key"),
    ("AKIAABCDEFGHIJKLMNOP", "value.provider_key"),
])
def test_secret_shapes_are_masked_wherever_they_appear(text: str, rule: str) -> None:
    redacted, evidence = redact({"query": ["plain", {"note": text}]})
    masked = redacted["query"][1]["note"]
    assert REDACTED in masked
    assert evidence == [("$.query[1].note", rule)]
    for secret in (JWT, "abcdef0123456789", "MIIEowIBAAKCAQEA", "abcdefghijklmnop1234",
                   "abcdefghijklmnopqrstuvwxyz0123", "ABCDEFGHIJKLMNOP"):
        assert secret not in masked


def test_ordinary_values_and_the_input_are_left_as_they_are() -> None:
    value: dict[str, Any] = {"reference": "PMT-771", "n": 2**70, "ok": True, "none": None,
                             "list": [1.5, "Bearer"], "password": "hunter2"}
    before = copy.deepcopy(value)
    redacted, evidence = redact(value)
    assert value == before
    assert redacted == {**before, "password": REDACTED}
    assert [rule for _, rule in evidence] == ["key.denylist"]


def test_the_denylist_is_in_canonical_form() -> None:
    assert all(canonical_key(key) == key for key in DENYLIST)
    assert canonical_key("Set-Cookie") == canonical_key("set_cookie") == "setcookie"
