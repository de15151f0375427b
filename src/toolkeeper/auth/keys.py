"""API keys: ``tk_<id>_<secret>`` bearer tokens kept in the registry store as salted hashes.

How A wires me: when ``auth.methods`` holds ``"keys"``, build one authenticator per process with
``key_authenticator(registry)`` (optionally ``KeySettings(...)``; the defaults are right for a
gateway) and hand it to C's resolver, which calls :meth:`KeyAuthenticator.authenticate` for a
bearer token that :func:`looks_like_key`. Keys live in the registry's own store (SQLite file or
PostgreSQL), so every replica on that registry sees the same keys and revocations; nothing else is
configured. ``toolkeeper keys add|list|revoke`` (:mod:`toolkeeper.cli.keys_cmd`) manages them.

A key is ``tk_`` + a 12-hex-digit public id + ``_`` + 32 random bytes from :mod:`secrets` in
unpadded URL-safe base64 (43 characters; the id holds no ``_``, so the split is unambiguous). The
store keeps the id, a 16-byte random salt and ``HMAC-SHA256(key=salt, msg=secret)``, never the
secret. Why a salted HMAC and not a slow KDF (scrypt, argon2): a slow hash protects *guessable*
secrets (passwords) from offline search; a 256-bit random secret cannot be searched at any hash
speed, so the cost of scrypt would buy nothing and would make every unknown token (an attacker's
flood) burn CPU. The salt makes equal secrets hash differently and rules out precomputed tables;
the HMAC construction avoids length-extension questions. Hashes compare with
:func:`hmac.compare_digest` (constant time).

Verification is cached per token: a repeated token costs a dictionary lookup, a clock read and,
for a key with an expiry, a second clock read. Revocation reaches every process within one
second: each entry carries the store's *revocation generation* (the number of revoked keys; see
:mod:`toolkeeper.registry.apikeys`) seen before the key was read, and the authenticator re-reads
that generation at most every ``recheck_s`` (0.5 s: half the one-second promise, leaving the other
half for the query and the request in flight), one cheap query per process, never per request
(on SQLite in WAL mode not even that while the WAL index reads as it did: nothing committed). An
entry from an older generation is verified afresh against its row. An id the store does not hold
is remembered as unknown for ``recheck_s`` too (a bounded table, oldest forgotten first), so a
flood of made-up keys costs at most one store query per id per interval, and a key created
meanwhile works within that interval. When the store cannot be read
the error propagates (a :class:`~toolkeeper.errors.StoreError`): a key whose revocation cannot be
checked is not trusted. Refusals (:class:`~toolkeeper.errors.AuthenticationError` reasons):
``malformed`` (not a key's shape), ``unknown_key`` (no such id, *or* a wrong secret: the two are
indistinguishable so ids cannot be probed), ``revoked``, ``expired``; the last two only after the
secret verified.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import hmac
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from toolkeeper.errors import AuthenticationError, NotFoundError, ToolkeeperError
from toolkeeper.registry.apikeys import ApiKeyRecord, KeyStore, key_store
from toolkeeper.registry.principal import Principal
from toolkeeper.registry.registry import Registry
from toolkeeper.registry.store import utc_now

__all__ = [
    "KEY_PREFIX",
    "IssuedKey",
    "KeyAuthenticator",
    "KeySettings",
    "hash_secret",
    "issue_key",
    "key_authenticator",
    "looks_like_key",
    "parse_expiry",
    "revoke_key",
]

KEY_PREFIX = "tk_"
_ID_BYTES = 6
_SECRET_BYTES = 32
_SALT_BYTES = 16
_TOKEN = re.compile(r"tk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")
_DUMMY_SALT = bytes(_SALT_BYTES)


@dataclass(frozen=True, slots=True)
class KeySettings:
    """Tuning of :class:`KeyAuthenticator` (no configuration file keys: the defaults serve)."""

    recheck_s: float = 0.5
    """How often (seconds) a process re-reads the revocation generation; keep it under 1."""
    cache_size: int = 10_000
    """How many verified tokens, and how many unknown ids, are remembered (the oldest is
    forgotten first)."""


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A new key: ``token`` is shown once and never stored; ``record`` is what was stored."""

    token: str
    record: ApiKeyRecord


def looks_like_key(token: str) -> bool:
    """Whether a bearer token is meant as an API key (and not, say, a JWT)."""
    return token.startswith(KEY_PREFIX)


def hash_secret(salt: bytes, secret: str) -> str:
    """``HMAC-SHA256(key=salt, msg=secret)`` in hex (the module docstring says why)."""
    return hmac.new(salt, secret.encode("ascii"), hashlib.sha256).hexdigest()


def _to_iso(moment: _dt.datetime) -> str:
    return moment.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _epoch(iso: str) -> float:
    return _dt.datetime.fromisoformat(iso).timestamp()


_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(?:\d+[wdhms])+")
_ISO_DURATION = re.compile(
    r"P(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?")


def _duration_seconds(text: str) -> int | None:
    if _DURATION.fullmatch(text):
        return sum(int(n) * _UNITS[u] for n, u in re.findall(r"(\d+)([wdhms])", text))
    found = _ISO_DURATION.fullmatch(text.upper())
    if found and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
        return sum(int(v) * _UNITS[u] for u, v in found.groupdict().items() if v)
    return None


def parse_expiry(text: str, *, now: _dt.datetime | None = None) -> str:
    """When a key given ``--expires TEXT`` expires, as ISO-8601 UTC: an ISO-8601 time (without
    an offset it is UTC; a bare date is its midnight UTC), or a duration from ``now``: ``30d``,
    ``12h``, ``1w2d``, ``90m``, ``3600s`` or ISO-8601 ``P30D``/``PT12H``. Unreadable is
    ``keys.expires_invalid``; not in the future, ``keys.expires_past``."""
    now = now or _dt.datetime.now(_dt.UTC)
    seconds = _duration_seconds(text.strip())
    if seconds is not None:
        moment = now + _dt.timedelta(seconds=seconds)
    else:
        try:
            moment = _dt.datetime.fromisoformat(text.strip())
        except ValueError:
            raise ToolkeeperError(
                f"--expires {text!r} is neither an ISO-8601 time nor a duration like 30d",
                code="keys.expires_invalid", data={"expires": text}) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=_dt.UTC)
    if moment <= now:
        raise ToolkeeperError(f"--expires {text!r} is not in the future",
                              code="keys.expires_past", data={"expires": text})
    return _to_iso(moment)


def issue_key(store: KeyStore, *, tenant: str, scopes: Iterable[str], clearance: str,
              name: str | None = None, expires: str | None = None) -> IssuedKey:
    """Make and store a new key for that principal (validated as :meth:`Principal.parse` does:
    ``principal.*`` errors); ``expires`` is ISO-8601 UTC (:func:`parse_expiry`) or None."""
    principal = Principal.parse(tenant, scopes, clearance)
    key_id = secrets.token_hex(_ID_BYTES)
    secret = base64.urlsafe_b64encode(secrets.token_bytes(_SECRET_BYTES)).rstrip(b"=").decode()
    salt = secrets.token_bytes(_SALT_BYTES)
    record = ApiKeyRecord(key_id, salt.hex(), hash_secret(salt, secret), principal.tenant,
                          tuple(sorted(principal.scopes)), principal.clearance.value, name,
                          utc_now(), expires)
    store.add_key(record)
    return IssuedKey(f"{KEY_PREFIX}{key_id}_{secret}", record)


def revoke_key(store: KeyStore, key_id: str) -> ApiKeyRecord:
    """Revoke a key now (a key already revoked keeps its first time); no such key is
    ``keys.not_found``."""
    record = store.revoke_key(key_id, utc_now())
    if record is None:
        raise NotFoundError(f"no API key {key_id!r}", code="keys.not_found", data={"id": key_id})
    return record


@dataclass(frozen=True, slots=True)
class _Verified:
    principal: Principal
    expires_at: float | None  # epoch seconds
    generation: int  # the revocation generation read before the key's row was


class KeyAuthenticator:
    """Tokens to principals, cached per token; see the module docstring for the guarantees."""

    def __init__(self, store: KeyStore, *, settings: KeySettings | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        settings = settings or KeySettings()
        self._store = store
        self._recheck_s = settings.recheck_s
        self._cache_size = max(1, settings.cache_size)
        self._clock = clock
        self._wall = wall
        self._cache: dict[str, _Verified] = {}
        self._unknown: dict[str, float] = {}  # key id -> when to ask the store again
        self._lock = threading.Lock()  # the slow path's cache writes (eviction iterates)
        self._generation = 0
        self._recheck_at = 0.0
        self._refresh_generation()

    def _refresh_generation(self) -> None:
        now = self._clock()
        self._generation = self._store.key_revocations()  # a StoreError propagates: fail closed
        self._recheck_at = now + self._recheck_s

    def authenticate(self, token: str) -> Principal:
        """The principal ``token`` speaks for (``credential`` is the key id), or
        :class:`AuthenticationError`."""
        if self._clock() >= self._recheck_at:
            self._refresh_generation()
        entry = self._cache.get(token)
        if entry is None or entry.generation != self._generation:
            entry = self._verify(token)
        if entry.expires_at is not None and self._wall() >= entry.expires_at:
            self._cache.pop(token, None)
            raise AuthenticationError("expired", credential=entry.principal.credential)
        return entry.principal

    def _verify(self, token: str) -> _Verified:
        found = _TOKEN.fullmatch(token) if isinstance(token, str) else None
        if found is None:
            raise AuthenticationError("malformed")
        key_id, secret = found.groups()
        generation = self._generation  # before the read: a later revocation moves it
        record = None if self._known_unknown(key_id) else self._store.find_key(key_id)
        if record is None:
            self._remember_unknown(key_id)
            hmac.compare_digest(hash_secret(_DUMMY_SALT, secret), "0" * 64)  # same work
            raise AuthenticationError("unknown_key")
        if not hmac.compare_digest(hash_secret(bytes.fromhex(record.salt), secret), record.hash):
            # A stored key's id with a wrong secret: the id is recorded, never the secret.
            raise AuthenticationError("unknown_key", credential=record.id)
        if record.revoked_at is not None:
            self._cache.pop(token, None)
            raise AuthenticationError("revoked", credential=record.id)
        principal = Principal.parse(record.tenant, record.scopes, record.clearance,
                                    credential=record.id)
        entry = _Verified(principal, _epoch(record.expires) if record.expires else None,
                          generation)
        with self._lock:
            if token not in self._cache and len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)), None)
            self._cache[token] = entry
        return entry

    def _known_unknown(self, key_id: str) -> bool:
        until = self._unknown.get(key_id)
        return until is not None and self._clock() < until

    def _remember_unknown(self, key_id: str) -> None:
        with self._lock:
            unknown = self._unknown
            if key_id not in unknown and len(unknown) >= self._cache_size:
                unknown.pop(next(iter(unknown)), None)
            unknown.pop(key_id, None)  # re-inserted last: the newest
            unknown[key_id] = self._clock() + self._recheck_s


def key_authenticator(registry: Registry | KeyStore,
                      settings: KeySettings | None = None) -> KeyAuthenticator:
    """The authenticator over ``registry``'s store (or a key store given directly);
    a store that keeps no keys is ``registry.keys_unsupported``."""
    store = key_store(registry.store if isinstance(registry, Registry) else registry)
    return KeyAuthenticator(store, settings=settings)
