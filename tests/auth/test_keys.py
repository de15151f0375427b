"""API keys: what the store keeps, and what KeyAuthenticator accepts, caches and refuses
(memory, SQLite and PostgreSQL stores behind the one KeyStore seam)."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.auth.keys import (
    KeyAuthenticator,
    KeySettings,
    issue_key,
    key_authenticator,
    parse_expiry,
    revoke_key,
)
from toolkeeper.contracts.spec import DataClassification
from toolkeeper.errors import AuthenticationError, NotFoundError, StoreError, ToolkeeperError
from toolkeeper.registry import Registry, open_store
from toolkeeper.registry.apikeys import ApiKeyRecord, KeyStore, key_store


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyStore]:
    url = {"memory": "memory:", "sqlite": f"sqlite://{tmp_path / 'registry.db'}"}.get(
        request.param) or request.getfixturevalue("pg_url")
    opened = open_store(url)
    yield key_store(opened)
    opened.close()


class Clock:
    """A hand-driven clock (monotonic and wall) for the cache's time rules."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.wall = dt.datetime.now(dt.UTC).timestamp()

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.wall += seconds


class CountingStore:
    """A KeyStore that counts the reads KeyAuthenticator makes."""

    def __init__(self, inner: KeyStore) -> None:
        self.inner = inner
        self.finds = 0
        self.generations = 0

    def add_key(self, record: ApiKeyRecord) -> None:
        self.inner.add_key(record)

    def find_key(self, key_id: str) -> ApiKeyRecord | None:
        self.finds += 1
        return self.inner.find_key(key_id)

    def list_keys(self) -> tuple[ApiKeyRecord, ...]:
        return self.inner.list_keys()

    def revoke_key(self, key_id: str, at: str) -> ApiKeyRecord | None:
        return self.inner.revoke_key(key_id, at)

    def key_revocations(self) -> int:
        self.generations += 1
        return self.inner.key_revocations()


def authenticator(store: KeyStore, clock: Clock, **settings: Any) -> KeyAuthenticator:
    return KeyAuthenticator(store, settings=KeySettings(**settings), clock=lambda: clock.now,
                            wall=lambda: clock.wall)


def reason(auth: KeyAuthenticator, token: Any) -> str:
    with pytest.raises(AuthenticationError) as caught:
        auth.authenticate(token)
    return caught.value.reason


def test_a_key_authenticates_as_its_principal_with_the_key_id_as_credential(
        store: KeyStore) -> None:
    issued = issue_key(store, tenant="acme", scopes=["b", "a"], clearance="internal")
    principal = KeyAuthenticator(store).authenticate(issued.token)
    assert (principal.tenant, principal.scopes, principal.clearance, principal.credential) == (
        "acme", frozenset({"a", "b"}), DataClassification.INTERNAL, issued.record.id)
    assert issued.token == f"tk_{issued.record.id}_{issued.token.split('_', 2)[2]}"


def test_only_a_salted_hmac_of_the_secret_is_stored(tmp_path: Path) -> None:
    opened = open_store(f"sqlite://{tmp_path / 'registry.db'}")
    first = issue_key(key_store(opened), tenant="acme", scopes=[], clearance="public")
    second = issue_key(key_store(opened), tenant="acme", scopes=[], clearance="public")
    opened.close()  # checkpoints the WAL into the file
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    for issued in (first, second):
        secret = issued.token.split("_", 2)[2]
        assert secret.encode() not in stored
        assert issued.token.encode() not in stored
        record = issued.record
        assert record.hash == hmac.new(bytes.fromhex(record.salt), secret.encode(),
                                       hashlib.sha256).hexdigest()
        assert record.hash.encode() in stored
    assert first.record.salt != second.record.salt
    with sqlite3.connect(tmp_path / "registry.db") as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(api_keys)")]
    assert columns == ["id", "salt", "hash", "tenant", "scopes", "clearance", "name", "created",
                       "expires", "revoked_at"]


def test_a_wrong_secret_for_a_valid_id_is_refused_as_an_unknown_key(store: KeyStore) -> None:
    issued = issue_key(store, tenant="acme", scopes=[], clearance="public")
    other = issue_key(store, tenant="acme", scopes=[], clearance="public")
    auth = KeyAuthenticator(store)
    forged = f"tk_{issued.record.id}_{other.token.split('_', 2)[2]}"
    assert reason(auth, forged) == "unknown_key"
    assert reason(auth, f"tk_{'0' * 12}_{other.token.split('_', 2)[2]}") == "unknown_key"
    assert auth.authenticate(issued.token).credential == issued.record.id


@pytest.mark.parametrize("token", [
    "", "tk_", "tk__", "Bearer tk_", "sk_0123456789ab_" + "A" * 43,
    "tk_0123456789AB_" + "A" * 43,            # the id is lower-case hex
    "tk_0123456789a_" + "A" * 43,             # an id one digit short
    "tk_0123456789ab_" + "A" * 42,            # a secret one character short
    "tk_0123456789ab_" + "A" * 44,            # ... and one long
    "tk_0123456789ab_" + "A" * 42 + "=",      # padding is not base64url's alphabet here
    "tk_0123456789ab_" + "A" * 43 + "\n",     # a trailing newline
    "tk_0123456789ab_" + "A" * 42 + "é",      # non-ASCII
    "tk_0123456789ab " + "A" * 43,
], ids=repr)
def test_a_token_not_shaped_like_a_key_is_refused_as_malformed(store: KeyStore,
                                                               token: str) -> None:
    assert reason(KeyAuthenticator(store), token) == "malformed"


def test_a_non_string_token_is_refused_as_malformed(store: KeyStore) -> None:
    assert reason(KeyAuthenticator(store), None) == "malformed"


def test_an_expired_key_is_refused_even_from_the_cache(store: KeyStore) -> None:
    clock = Clock()
    expires = dt.datetime.fromtimestamp(clock.wall + 60, dt.UTC).isoformat()
    issued = issue_key(store, tenant="acme", scopes=[], clearance="public", expires=expires)
    auth = authenticator(store, clock, recheck_s=3600)
    assert auth.authenticate(issued.token).tenant == "acme"
    clock.advance(60)
    assert reason(auth, issued.token) == "expired"
    assert reason(authenticator(store, clock), issued.token) == "expired"  # first verification


def test_a_revoked_key_is_refused_once_the_generation_is_rechecked(store: KeyStore) -> None:
    clock = Clock()
    issued = issue_key(store, tenant="acme", scopes=[], clearance="public")
    counting = CountingStore(store)
    auth = authenticator(counting, clock, recheck_s=0.5)
    auth.authenticate(issued.token)
    revoke_key(store, issued.record.id)
    clock.advance(0.5)
    assert reason(auth, issued.token) == "revoked"
    assert reason(KeyAuthenticator(store), issued.token) == "revoked"


def test_a_cached_token_costs_no_store_read_until_the_recheck_interval(store: KeyStore) -> None:
    clock = Clock()
    issued = issue_key(store, tenant="acme", scopes=[], clearance="public")
    counting = CountingStore(store)
    auth = authenticator(counting, clock, recheck_s=0.5)
    auth.authenticate(issued.token)
    reads = (counting.finds, counting.generations)
    for _ in range(100):
        clock.advance(0.004)
        auth.authenticate(issued.token)
    assert (counting.finds, counting.generations) == reads
    clock.advance(0.1)  # past the interval: one generation read, no key read (none revoked)
    auth.authenticate(issued.token)
    auth.authenticate(issued.token)
    assert (counting.finds, counting.generations) == (reads[0], reads[1] + 1)


def test_the_cache_is_bounded_and_forgets_the_oldest_token_first(store: KeyStore) -> None:
    tokens = [issue_key(store, tenant="acme", scopes=[], clearance="public").token
              for _ in range(3)]
    counting = CountingStore(store)
    auth = authenticator(counting, Clock(), cache_size=2, recheck_s=3600)
    for token in tokens:
        auth.authenticate(token)
    assert counting.finds == 3
    auth.authenticate(tokens[2])
    assert counting.finds == 3
    auth.authenticate(tokens[0])
    assert counting.finds == 4


def test_an_unknown_id_costs_one_store_read_per_interval_and_a_new_key_works_after_it(
        store: KeyStore) -> None:
    clock = Clock()
    counting = CountingStore(store)
    auth = authenticator(counting, clock, recheck_s=0.5)
    made_up = [f"tk_{index:012x}_{'A' * 43}" for index in range(3)]
    for _ in range(50):
        for token in made_up:
            assert reason(auth, token) == "unknown_key"
    assert counting.finds == 3  # one per id, not one per request
    issued = issue_key(store, tenant="acme", scopes=[], clearance="public")
    real_id = issued.record.id
    assert reason(auth, f"tk_{real_id}_{'A' * 43}") == "unknown_key"  # a wrong secret
    clock.advance(0.5)
    assert reason(auth, made_up[0]) == "unknown_key"
    assert counting.finds == 5  # the interval passed: that id is asked about again
    assert auth.authenticate(issued.token).credential == real_id


def test_the_unknown_ids_remembered_are_bounded(store: KeyStore) -> None:
    counting = CountingStore(store)
    auth = authenticator(counting, Clock(), cache_size=2, recheck_s=3600)
    made_up = [f"tk_{index:012x}_{'A' * 43}" for index in range(3)]
    for token in made_up:
        reason(auth, token)
    reason(auth, made_up[2])
    assert counting.finds == 3  # the newest id is remembered
    reason(auth, made_up[0])
    assert counting.finds == 4  # the oldest was forgotten


def test_keys_are_listed_and_revoked_once_keeping_the_first_time(store: KeyStore) -> None:
    first = issue_key(store, tenant="acme", scopes=["x"], clearance="internal", name="ci")
    second = issue_key(store, tenant="beta", scopes=[], clearance="public")
    assert [r.id for r in store.list_keys()] == [first.record.id, second.record.id]
    revoked = revoke_key(store, first.record.id)
    assert revoked.revoked_at is not None
    assert revoke_key(store, first.record.id).revoked_at == revoked.revoked_at
    assert [r.revoked_at is None for r in store.list_keys()] == [False, True]
    assert store.key_revocations() == 1


def test_revoking_an_unknown_id_is_keys_not_found(store: KeyStore) -> None:
    with pytest.raises(NotFoundError) as caught:
        revoke_key(store, "0123456789ab")
    assert caught.value.code == "keys.not_found"


def test_a_key_for_an_invalid_principal_is_refused_before_it_is_stored(store: KeyStore) -> None:
    with pytest.raises(ToolkeeperError) as caught:
        issue_key(store, tenant="acme", scopes=[], clearance="secret")
    assert caught.value.code == "principal.clearance_unknown"
    assert store.list_keys() == ()


def test_the_key_authenticator_reads_the_registrys_own_store(tmp_path: Path) -> None:
    with Registry.open(f"sqlite://{tmp_path / 'registry.db'}") as registry:
        issued = issue_key(key_store(registry.store), tenant="acme", scopes=[],
                           clearance="public")
        assert key_authenticator(registry).authenticate(issued.token).tenant == "acme"


def test_a_store_without_keys_is_refused_as_unsupported() -> None:
    with pytest.raises(StoreError) as caught:
        key_store(object())
    assert caught.value.code == "registry.keys_unsupported"


@pytest.mark.parametrize("sql", ["DELETE FROM api_keys", "UPDATE api_keys SET tenant = 'evil'",
                                 "UPDATE api_keys SET revoked_at = NULL"])
def test_the_sqlite_store_keeps_keys_and_changes_them_only_by_revoking(
        tmp_path: Path, sql: str) -> None:
    opened = open_store(f"sqlite://{tmp_path / 'registry.db'}")
    issued = issue_key(key_store(opened), tenant="acme", scopes=[], clearance="public")
    revoke_key(key_store(opened), issued.record.id)
    opened.close()
    with sqlite3.connect(tmp_path / "registry.db") as conn, pytest.raises(sqlite3.Error):
        conn.execute(sql)


NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("30d", "2030-01-31T00:00:00.000000Z"),
    ("1w2d", "2030-01-10T00:00:00.000000Z"),
    ("12h", "2030-01-01T12:00:00.000000Z"),
    ("90m", "2030-01-01T01:30:00.000000Z"),
    ("P30D", "2030-01-31T00:00:00.000000Z"),
    ("PT1H30M", "2030-01-01T01:30:00.000000Z"),
    ("2030-06-01", "2030-06-01T00:00:00.000000Z"),
    ("2030-06-01T12:00:00+02:00", "2030-06-01T10:00:00.000000Z"),
    ("2030-06-01T12:00:00Z", "2030-06-01T12:00:00.000000Z"),
])
def test_an_expiry_is_an_iso_time_or_a_duration_from_now(text: str, expected: str) -> None:
    assert parse_expiry(text, now=NOW) == expected


@pytest.mark.parametrize(("text", "code"), [
    ("soon", "keys.expires_invalid"), ("P", "keys.expires_invalid"),
    ("PT", "keys.expires_invalid"), ("30x", "keys.expires_invalid"),
    ("0d", "keys.expires_past"), ("2029-12-31", "keys.expires_past"),
])
def test_an_unreadable_or_past_expiry_is_refused_with_its_code(text: str, code: str) -> None:
    with pytest.raises(ToolkeeperError) as caught:
        parse_expiry(text, now=NOW)
    assert caught.value.code == code


@pytest.mark.postgres
@pytest.mark.parametrize("sql", ["DELETE FROM api_keys", "UPDATE api_keys SET hash = 'x'",
                                 "UPDATE api_keys SET revoked_at = NULL",
                                 "UPDATE api_keys SET revoked_at = 'later'"])
def test_the_postgres_store_keeps_keys_and_changes_them_only_by_revoking(
        pg_url: str, sql: str) -> None:
    import psycopg

    opened = open_store(pg_url)
    issued = issue_key(key_store(opened), tenant="acme", scopes=[], clearance="public")
    revoke_key(key_store(opened), issued.record.id)
    opened.close()
    with psycopg.connect(pg_url, autocommit=True) as conn, pytest.raises(
            psycopg.errors.IntegrityConstraintViolation):
        conn.execute(sql)
