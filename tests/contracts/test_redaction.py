"""Redaction (SPEC 5.6): denied keys by canonical form and by the words in them, secret value
shapes anywhere, benign keys untouched, evidence as (path, rule) without the value, input
unchanged; and the text form the logs use, over the whole corpus."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from redaction_kit import CORPUS, Case, leaks, render
from toolkeeper.contracts.redaction import (
    DENYLIST,
    REDACTED,
    canonical_key,
    denied_key,
    redact,
    redact_text,
)
from toolkeeper.contracts.redaction_rules import SHAPES

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


@pytest.mark.parametrize("key", [
    # a word that is a secret wherever it stands, in any case and separator style
    "db_password", "dbPassword", "DB-PASSWORD", "new.password", "password_hint_shown",
    "passphrase", "gpg_passphrase", "user_passwd", "aws_secret_access_key", "webhookSecret",
    "credentials", "session_cookie", "Proxy-Authorization", "ssh_private_key",
    # a word that is a secret as the head of the name
    "session_token", "x-auth-token", "X-Auth-Token", "githubToken", "csrf_token", "x-api-key",
    "stripeApiKey", "aws_access_key", "jwt_signing_key", "basic_auth", "oauth", "db_pwd",
    "X-Amz-Signature", "sig", "sealing_key", "sealing_keys", "TOOLKEEPER_SEALING_KEYS",
])
def test_a_key_containing_a_denied_word_is_denied(key: str) -> None:
    assert denied_key(key)
    assert redact({key: "v"}) == ({key: REDACTED}, [(f"$.{key}", "key.denylist")])


@pytest.mark.parametrize("key", [
    "max_tokens", "maxTokens", "token_count", "tokenCount", "token_type", "tokens", "tokenizer",
    "author", "authors", "authored_by", "secretary", "secretariat", "primary_key", "sort_key",
    "public_key", "key", "monkey", "page_token", "nextPageToken", "signer", "keyword",
])
def test_benign_keys_that_only_contain_a_denied_word_are_kept(key: str) -> None:
    assert not denied_key(key)
    assert redact({key: "v"}) == ({key: "v"}, [])


@pytest.mark.parametrize(("text", "rule"), [
    (f"token is {JWT} ok", "value.jwt"),
    ("Authorization: Bearer abcdef0123456789", "value.bearer"),
    (PEM, "value.private_key"),
    ("key sk-proj-abcdefghijklmnop1234", "value.provider_key"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123", "value.provider_key"),
    ("AKIAABCDEFGHIJKLMNOP", "value.provider_key"),
    ("header was BEARER abcdef0123456789", "value.bearer"),
    ("sent Basic YWRhOmFiY2RlZjAxMjM0NTY3ODk= upstream", "value.basic"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nMIIEowIBAAKCAQEA\n-----END PGP PRIVATE KEY BLOCK-----",
     "value.private_key"),
    ("charge sk_live_abcdefghijklmnop1234", "value.provider_key"),
    (f"key=tk_0123456789ab_{'abcdefghijklmnop1234' * 2}xyz rejected", "value.gateway_key"),
    ("postgres://app:abcdefghijklmnop1234@db:5432/prod", "value.url_password"),
    ("https://h/cb?state=1&access_token=abcdefghijklmnop1234", "value.query_secret"),
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


@pytest.mark.parametrize("text", [
    "Basic tutorial for beginners", "a basic sentence", "bearer of bad news",
    "https://example.com/search?q=hello&page=2", "https://example.com:8443/path",
    "ask-me-anything-about-it-please", "task_live_streaming_session", "PMT-771",
])
def test_ordinary_text_near_a_secret_shape_is_not_masked(text: str) -> None:
    assert redact({"note": text}) == ({"note": text}, [])


def test_every_shape_search_starts_with_a_literal_character() -> None:
    """What keeps the one search over all shapes cheap on the call path: it can skip to the
    characters that start a row's search (see redaction_rules.ANY_SHAPE)."""
    assert all(re.match(r"(?:[A-Za-z0-9_:-]|\\[?&#])", shape.find) for shape in SHAPES)


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_log_text_carrying_a_corpus_secret_in_any_rendering_keeps_none_of_it(case: Case) -> None:
    assert leaks(redact_text(render(case.arguments())), case) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("ValueError: password=hunter2", f"ValueError: password={REDACTED}"),
    ("{'db_password': 'it\\'s', 'n': 1}", f"{{'db_password': '{REDACTED}', 'n': 1}}"),
    ('{"apiKey": "k1", "user": "ada"}', f'{{"apiKey": "{REDACTED}", "user": "ada"}}'),
    ("Authorization: Token abc123 more", f"Authorization: {REDACTED} more"),
    ("Cookie: sid=abc; csrf=def", f"Cookie: {REDACTED}"),
    ("author=ada tokenizer: bpe", "author=ada tokenizer: bpe"),
    ('"POST /mcp?access_token=abc&x=1&flag HTTP/1.1" 200',
     f'"POST /mcp?access_token={REDACTED}&x={REDACTED}&{REDACTED} HTTP/1.1" 200'),
    # a bearer token is masked once, as the header's whole value
    ("Authorization: Bearer abcdef0123456789 sent", f"Authorization: {REDACTED} sent"),
    # every parameter of a Digest credential, the response among them
    ('Authorization: Digest username="ada", realm="api", uri="/x", response="6629fae4" sent',
     f"Authorization: {REDACTED} sent"),
    # a quoted name with a space, and two bare words
    ('{"api key": "k1", "user": "ada"}', f'{{"api key": "{REDACTED}", "user": "ada"}}'),
    ("api key: k1", f"api key: {REDACTED}"),
    ("page token=abc", f"page token={REDACTED}"),
    # header pairs written as tuples (ASGI's scope headers)
    ("[(b'host', b'h'), (b'x-api-key', b'k1')]", f"[(b'host', b'h'), (b'x-api-key', b'{REDACTED}')]"),
    ('[["authorization", "Basic YWRhOnB3"]]', f'[["authorization", "{REDACTED}"]]'),
    # a URL password with an unencoded @: masked to the last @
    ("postgresql://u:hun@ter2@h/db", f"postgresql://u:{REDACTED}@h/db"),
    # an unclosed quote: the value runs to the end of the line
    ("password='hunter2 and more\nnext", f"password='{REDACTED}\nnext"),
])
def test_log_text_masks_denied_names_values_and_every_query_value(text: str,
                                                                  expected: str) -> None:
    assert redact_text(text) == expected
