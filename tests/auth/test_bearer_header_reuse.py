"""The bearer resolver reuses its reading of the header it saw last, never its verdict: the
authenticator judges a repeated header afresh on every request."""

from __future__ import annotations

import pytest

from toolkeeper.auth.keys import KeyAuthenticator, KeySettings, issue_key, revoke_key
from toolkeeper.auth.resolver import BearerResolver
from toolkeeper.errors import AuthenticationError
from toolkeeper.protocol import TransportFacts
from toolkeeper.protocol.headers import HeaderView
from toolkeeper.registry import open_store
from toolkeeper.registry.apikeys import KeyStore, key_store

RESOURCE = "https://gw.test/mcp"


class Clock:
    now = 1_000.0


@pytest.fixture
def store() -> KeyStore:
    return key_store(open_store("memory:"))


def facts(header: str) -> TransportFacts:
    pairs = [(b"content-type", b"application/json"), (b"authorization", header.encode())]
    return TransportFacts("http", HeaderView.deferred(pairs, dict(pairs)))


def refusal(resolver: BearerResolver, header: str) -> AuthenticationError:
    with pytest.raises(AuthenticationError) as caught:
        resolver(facts(header))
    return caught.value


def test_a_repeated_header_is_refused_once_its_key_is_revoked(store: KeyStore) -> None:
    clock = Clock()
    keys = KeyAuthenticator(store, settings=KeySettings(recheck_s=0.5), clock=lambda: clock.now)
    resolver = BearerResolver(RESOURCE, keys=keys)
    issued = issue_key(store, tenant="acme", scopes=[], clearance="public")
    header = f"Bearer {issued.token}"
    assert resolver(facts(header)).credential == issued.record.id
    assert resolver(facts(header)).credential == issued.record.id
    revoke_key(store, issued.record.id)
    clock.now += 0.5
    refused = refusal(resolver, header)
    assert refused.reason == "revoked"
    assert refused.challenge is not None and 'error="invalid_token"' in refused.challenge


def test_alternating_headers_each_authenticate_as_their_own_key(store: KeyStore) -> None:
    resolver = BearerResolver(RESOURCE, keys=KeyAuthenticator(store))
    first = issue_key(store, tenant="acme", scopes=[], clearance="public")
    second = issue_key(store, tenant="beta", scopes=[], clearance="public")
    for issued in (first, second, first, first, second):
        principal = resolver(facts(f"bearer {issued.token}"))
        assert (principal.tenant, principal.credential) == (
            issued.record.tenant, issued.record.id)


@pytest.mark.parametrize("bad", ["", "Bearer", "Basic abc", "Bearer tk_0_x", "Bearer a b",
                                 "Bearer eyJhbGciOiJub25lIn0.e30."])
def test_a_malformed_header_after_a_good_one_is_still_refused(store: KeyStore, bad: str) -> None:
    resolver = BearerResolver(RESOURCE, keys=KeyAuthenticator(store))
    issued = issue_key(store, tenant="acme", scopes=[], clearance="public")
    assert resolver(facts(f"Bearer {issued.token}")).tenant == "acme"
    assert refusal(resolver, bad).reason == "malformed"
    assert resolver(facts(f"Bearer {issued.token}")).tenant == "acme"
