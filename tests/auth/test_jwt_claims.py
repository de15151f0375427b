"""JWT claims as RFC 7519 writes them: time claims that are not JSON numbers, a lifetime over
the configured maximum, a member named twice and a tenant the issuer may not name are each
refused with their own stable reason, after the signature verified; on the wire each is the
same 401 as every other refusal."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jwt_kit import (
    RESOURCE,
    Auth,
    Issuer,
    legacy_initialize,
    mint,
    modern,
    public_pem,
    raw_claims,
    rsa_key,
    served,
    signed_raw,
)

from toolkeeper.auth import REASONS, build_jwt, metadata_url
from toolkeeper.auth.jwt import JwtAuthenticator
from toolkeeper.config.loader import parse_config
from toolkeeper.errors import AuthenticationError, ConfigError

KEY = rsa_key()
DAY = 86_400
CHALLENGE = f'Bearer error="invalid_token", resource_metadata="{metadata_url(RESOURCE)}"'
BODY = {"error": "invalid_token", "error_description": "Authentication required"}


@pytest.fixture(scope="module")
def pem(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("pem") / "rsa.pem"
    path.write_bytes(public_pem(KEY))
    return str(path)


def _now() -> int:
    return int(time.time())


# case -> (token maker, the reason it is refused for)
LENIENT: dict[str, tuple[Callable[[], str], str]] = {
    "exp_numeric_string": (lambda: signed_raw(KEY, raw_claims(exp=f'"{_now() + 600}"')),
                           "bad_time_claim"),
    "exp_true": (lambda: signed_raw(KEY, raw_claims(exp="true")), "bad_time_claim"),
    "exp_object": (lambda: signed_raw(KEY, raw_claims(exp='{"n": 1}')), "bad_time_claim"),
    "exp_beyond_a_double": (lambda: signed_raw(KEY, raw_claims(exp="1e400")),
                            "bad_time_claim"),
    "exp_infinity": (lambda: signed_raw(KEY, raw_claims(exp="Infinity")), "malformed"),
    "nbf_numeric_string": (lambda: signed_raw(KEY, raw_claims(nbf='"0"')), "bad_time_claim"),
    "nbf_false": (lambda: signed_raw(KEY, raw_claims(nbf="false")), "bad_time_claim"),
    "iat_numeric_string": (lambda: signed_raw(KEY, raw_claims(iat=f'"{_now()}"')),
                           "bad_time_claim"),
    "exp_10_to_the_30": (lambda: mint(KEY, exp=10**30), "lifetime_too_long"),
    "exp_10_to_the_400": (lambda: signed_raw(KEY, raw_claims(exp="1" + "0" * 400)),
                          "lifetime_too_long"),
    "lifetime_a_day_and_a_second": (lambda: mint(KEY, iat=_now(), exp=_now() + DAY + 1),
                                    "lifetime_too_long"),
    "no_iat_exp_two_days_away": (lambda: mint(KEY, iat=None, exp=_now() + 2 * DAY),
                                 "lifetime_too_long"),
    "duplicate_tenant": (lambda: signed_raw(KEY, raw_claims(tenant='"acme", "tenant": "beta"')),
                         "duplicate_claim"),
    "duplicate_nested_member": (lambda: signed_raw(KEY, raw_claims(
        ext='{"a": 1, "a": 2}')), "duplicate_claim"),
    "duplicate_exp": (lambda: signed_raw(KEY, raw_claims(
        exp=f'{_now() + 600}, "exp": {_now() + 10**9}')), "duplicate_claim"),
}


@pytest.fixture(scope="module")
def authenticator(pem: str) -> JwtAuthenticator:
    return build_jwt([Issuer(public_key_file=pem)], RESOURCE)


@pytest.mark.parametrize("case", sorted(LENIENT))
def test_a_lenient_signed_token_is_refused_with_its_reason(
        authenticator: JwtAuthenticator, case: str) -> None:
    make, reason = LENIENT[case]
    with pytest.raises(AuthenticationError) as refused:
        authenticator.authenticate(make())
    assert (refused.value.reason, refused.value.code) == (reason, f"auth.{reason}")
    assert reason in REASONS


def test_the_same_claims_written_as_json_numbers_are_accepted(
        authenticator: JwtAuthenticator) -> None:
    now = _now()
    for token in (signed_raw(KEY, raw_claims(exp=f"{now + 600}.5", nbf=f"{now - 5}.25",
                                             iat=f"{now}")),
                  mint(KEY, iat=now, exp=now + DAY),
                  mint(KEY, iat=None, exp=now + DAY)):
        assert authenticator.authenticate(token).tenant == "acme"


def test_an_issuer_s_own_lifetime_replaces_the_global_one(pem: str) -> None:
    now = _now()
    short = build_jwt([Issuer(public_key_file=pem, max_token_lifetime_s=600)], RESOURCE,
                      max_lifetime_s=7 * DAY)
    assert short.authenticate(mint(KEY, iat=now, exp=now + 600)).tenant == "acme"
    with pytest.raises(AuthenticationError) as refused:
        short.authenticate(mint(KEY, iat=now, exp=now + 601))
    assert refused.value.reason == "lifetime_too_long"
    week = build_jwt([Issuer(public_key_file=pem)], RESOURCE, max_lifetime_s=7 * DAY)
    assert week.authenticate(mint(KEY, iat=now, exp=now + 7 * DAY)).tenant == "acme"


def test_an_issuer_limited_to_tenant_a_cannot_name_tenant_b(pem: str) -> None:
    authenticator = build_jwt([
        Issuer(issuer="https://idp-a.test", public_key_file=pem, tenants=("acme",)),
        Issuer(issuer="https://idp-any.test", public_key_file=pem)], RESOURCE)
    assert authenticator.authenticate(
        mint(KEY, iss="https://idp-a.test", tenant="acme")).tenant == "acme"
    with pytest.raises(AuthenticationError) as refused:
        authenticator.authenticate(mint(KEY, iss="https://idp-a.test", tenant="beta"))
    assert (refused.value.reason, refused.value.code) == ("tenant_not_allowed",
                                                          "auth.tenant_not_allowed")
    # Without the list an issuer names any tenant, as before.
    assert authenticator.authenticate(
        mint(KEY, iss="https://idp-any.test", tenant="beta")).tenant == "beta"


def test_several_issuers_without_tenants_are_each_warned_of_once_at_build(
        pem: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolkeeper.auth"):
        build_jwt([Issuer(issuer="https://a.test", public_key_file=pem, tenants=("acme",)),
                   Issuer(issuer="https://b.test", public_key_file=pem),
                   Issuer(issuer="https://c.test", public_key_file=pem)], RESOURCE)
        build_jwt([Issuer(public_key_file=pem)], RESOURCE)  # one issuer: nothing to say
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == ["auth.jwt.issuers[1].tenants is not set: its tokens may name any tenant",
                      "auth.jwt.issuers[2].tenants is not set: its tokens may name any tenant"]


def test_an_empty_tenants_list_is_refused_at_build_naming_its_key(pem: str) -> None:
    with pytest.raises(ConfigError) as refused:
        build_jwt([Issuer(public_key_file=pem, tenants=())], RESOURCE)
    assert refused.value.code == "config.bad_value"
    assert refused.value.data == {"key": "auth.jwt.issuers[0].tenants"}


def test_the_configuration_file_sets_the_lifetimes_and_the_tenants(tmp_path: Path,
                                                                    pem: str) -> None:
    config = parse_config(f"""
[auth]
methods = ["jwt"]
resource = "{RESOURCE}"
[auth.jwt]
max_token_lifetime_s = 3600
[[auth.jwt.issuers]]
issuer = "https://idp.test"
algorithms = ["RS256"]
public_key_file = {json.dumps(pem)}
tenants = ["acme"]
max_token_lifetime_s = 60
[[auth.jwt.issuers]]
issuer = "https://other.test"
algorithms = ["RS256"]
public_key_file = {json.dumps(pem)}
""", base=tmp_path)
    auth = config.auth
    assert auth.jwt_max_token_lifetime_s == 3600
    first, second = auth.jwt_issuers
    assert (first.tenants, first.max_token_lifetime_s) == (("acme",), 60)
    assert (second.tenants, second.max_token_lifetime_s) == (None, None)
    assert parse_config("").auth.jwt_max_token_lifetime_s == DAY


@pytest.fixture(scope="module")
def gateway_url(pem: str) -> Iterator[str]:
    with served(Auth(jwt_issuers=(Issuer(public_key_file=pem, tenants=("acme",)),))) as url:
        yield url


WIRE: dict[str, Callable[[], str]] = {
    "exp_numeric_string": LENIENT["exp_numeric_string"][0],
    "exp_10_to_the_30": LENIENT["exp_10_to_the_30"][0],
    "duplicate_tenant": LENIENT["duplicate_tenant"][0],
    "tenant_not_allowed": lambda: mint(KEY, tenant="beta"),
}


@pytest.mark.parametrize("case", sorted(WIRE))
def test_on_the_wire_each_is_the_same_401_as_any_refusal(gateway_url: str, case: str) -> None:
    token = WIRE[case]()
    with httpx.Client(timeout=10) as client:
        assert modern(client, gateway_url, "tools/list", mint(KEY)).status_code == 200
        for response in (modern(client, gateway_url, "tools/list", token),
                         modern(client, gateway_url, "tools/call", token, "ledger"),
                         legacy_initialize(client, gateway_url, token)):
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == CHALLENGE
            body: Any = response.json()
            assert body == BODY
