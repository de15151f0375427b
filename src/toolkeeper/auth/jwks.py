"""Where a JWT issuer's verification keys come from, and which algorithm each key may verify.

Algorithms are pinned per key type, never chosen by the token (RFC 8725 3.1, algorithm
confusion): an RSA key verifies RS256 only, a P-256 key ES256, an Ed25519/Ed448 key EdDSA, and
only a shared secret verifies HS256; a JWK that names its ``alg`` narrows that further. So an
HS256 token signed with the bytes of an RSA public key's PEM has no key to be checked against.

Sources: a shared secret file (HS256), a PEM public key file, or a JWKS (a file, or a URL
fetched with a timeout). Verification only ever reads the JWKS source's current snapshot: it
never reads a file or the network, so a slow or hostile JWKS server cannot stall a request (or
the event loop it runs on). The set is read once when the source is built (start-up may wait
for it), then by one background daemon thread (:meth:`JwksSource.start`): every
``jwks_refresh_s``, and earlier when a token names a ``kid`` the set does not hold (a rotated
key), at most once per that interval, so a flood of tokens with made-up ``kid`` values cannot
make the gateway hammer the issuer. One read runs at a time (:meth:`JwksSource.refresh_now`,
single-flight). A failed read keeps the keys last read (logged). A JWKS URL that cannot be read
at start does not stop the gateway: it starts with no keys for that issuer, refuses its tokens
(``unknown_key``) and retries every :data:`FIRST_LOAD_RETRY_S` seconds until a read succeeds
(an issuer briefly down must not take the gateway, and its API keys, down with it). Each change
of the set bumps :attr:`JwksSource.generation`, so verdicts cached under an older set (a key
since removed) are dropped (:mod:`toolkeeper.auth.jwt`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from jwt import PyJWK

from toolkeeper.errors import AuthenticationError, ConfigError

__all__ = [
    "FIRST_LOAD_RETRY_S",
    "JWKS_FETCH_TIMEOUT_S",
    "MIN_SECRET_BYTES",
    "JwksSource",
    "KeySource",
    "StaticKeys",
    "VerificationKey",
    "algorithms_for",
    "fetch_url",
]

_log = logging.getLogger(__name__)  # not toolkeeper.auth: see protocol/challenge.py

JWKS_FETCH_TIMEOUT_S: Final = 5.0
_MAX_JWKS_BYTES: Final = 1 << 20
MIN_SECRET_BYTES: Final = 32
"""The shortest HS256 secret accepted (RFC 7518 3.2: a key at least as long as the hash)."""
FIRST_LOAD_RETRY_S: Final = 5.0
"""Seconds between reads of a JWKS that has never been read successfully."""


@dataclass(frozen=True, slots=True)
class VerificationKey:
    """A key and the algorithms it may verify (already narrowed by the issuer's list)."""

    key: Any
    algorithms: frozenset[str]


def algorithms_for(key: Any) -> frozenset[str]:
    """The one algorithm family a key type verifies (see the module docstring)."""
    if isinstance(key, bytes):
        return frozenset({"HS256"})
    if isinstance(key, rsa.RSAPublicKey):
        return frozenset({"RS256"})
    if isinstance(key, ec.EllipticCurvePublicKey):
        return frozenset({"ES256"}) if isinstance(key.curve, ec.SECP256R1) else frozenset()
    if isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return frozenset({"EdDSA"})
    return frozenset()


def _pinned(key: Any, allowed: frozenset[str], declared: str | None = None
            ) -> VerificationKey | None:
    algorithms = algorithms_for(key) & allowed
    if declared is not None:
        algorithms &= {declared}
    return VerificationKey(key, algorithms) if algorithms else None


class KeySource:
    """Keys of one issuer: :meth:`key` for a token's ``kid`` (None: the token names none);
    :attr:`generation` changes whenever the set changes."""

    generation: int = 0

    def key(self, kid: str | None) -> VerificationKey:
        raise NotImplementedError


class StaticKeys(KeySource):
    """One key from a file, read once at start (a secret or a PEM public key)."""

    def __init__(self, key: VerificationKey) -> None:
        self._key = key

    @classmethod
    def from_secret_file(cls, path: str, allowed: frozenset[str], where: str) -> StaticKeys:
        secret = _read(path, f"{where}.secret_file").strip()
        if len(secret) < MIN_SECRET_BYTES:
            raise ConfigError(f"an HS256 secret needs at least {MIN_SECRET_BYTES} bytes",
                              code="config.key_file", data={"key": f"{where}.secret_file"})
        return cls(_require(_pinned(secret, allowed), f"{where}.algorithms"))

    @classmethod
    def from_pem_file(cls, path: str, allowed: frozenset[str], where: str) -> StaticKeys:
        try:
            key = load_pem_public_key(_read(path, f"{where}.public_key_file"))
        except ValueError:
            raise ConfigError("not a PEM public key", code="config.key_file",
                              data={"key": f"{where}.public_key_file"}) from None
        return cls(_require(_pinned(key, allowed), f"{where}.algorithms"))

    def key(self, kid: str | None) -> VerificationKey:
        return self._key


class JwksSource(KeySource):
    """A JSON Web Key Set, read by ``load`` (a file or a URL) now and then by the background
    thread :meth:`start` begins (module docstring). ``clock`` paces the early refreshes."""

    def __init__(self, load: Callable[[], bytes], allowed: frozenset[str], refresh_s: float,
                 *, clock: Callable[[], float] = time.monotonic, name: str = "") -> None:
        self._load = load
        self._allowed = allowed
        self._refresh_s = max(1.0, float(refresh_s))
        self._clock = clock
        self._name = name
        self._lock = threading.Lock()  # single-flight reads
        self._wake = threading.Event()  # an early refresh is wanted
        self._keys: Mapping[str | None, VerificationKey] = {}
        self._document: bytes | None = None
        self._signalled_at = -self._refresh_s
        self._thread: threading.Thread | None = None
        self.loaded = False
        self.reads = 0
        self.refresh_now()

    @property
    def refresh_wanted(self) -> bool:
        """Whether a token with an unknown ``kid`` asked for an early refresh not yet done."""
        return self._wake.is_set()

    def key(self, kid: str | None) -> VerificationKey:
        found = self._keys.get(kid)
        if found is None:
            if kid is not None or not self.loaded:
                self._want_refresh()
            raise AuthenticationError("unknown_key")
        return found

    def _want_refresh(self) -> None:
        now = self._clock()
        if now - self._signalled_at >= self._refresh_s:
            self._signalled_at = now  # one early look per interval, no more
            self._wake.set()

    def refresh_now(self) -> None:
        """Read the set now (what the background thread does; one read at a time)."""
        with self._lock:
            self._wake.clear()
            self.reads += 1
            try:
                document = self._load()
                keys = _parse_jwks(json.loads(document), self._allowed)
            except Exception as exc:
                _log.warning("JWKS %s could not be read (%s); keeping %d keys", self._name,
                             type(exc).__name__, len(self._keys))
                return
            self.loaded = True
            if document != self._document:
                self._document = document
                self._keys = keys
                self.generation += 1

    def start(self) -> None:
        """Begin the background refreshes (a daemon thread that ends with this source)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=_refresh_loop, args=(weakref.ref(self), self._wake, self._refresh_s),
                name=f"toolkeeper-jwks {self._name}", daemon=True)
            self._thread.start()


def _refresh_loop(ref: weakref.ref[JwksSource], wake: threading.Event, every_s: float) -> None:
    while True:
        source = ref()
        if source is None:
            return
        wait_s = every_s if source.loaded else min(every_s, FIRST_LOAD_RETRY_S)
        del source  # hold no reference while waiting: a dropped source ends the thread
        wake.wait(wait_s)
        source = ref()
        if source is None:
            return
        source.refresh_now()
        del source


def _parse_jwks(document: Any, allowed: frozenset[str]) -> dict[str | None, VerificationKey]:
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ValueError("a JWKS is an object with a keys array")
    keys: dict[str | None, VerificationKey] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            jwk = PyJWK(entry)
        except Exception:
            continue
        declared = entry.get("alg")
        pinned = _pinned(jwk.key, allowed, declared if isinstance(declared, str) else None)
        if pinned is not None:
            kid = entry.get("kid")
            keys[kid if isinstance(kid, str) else None] = pinned
    if len(keys) == 1 and None not in keys:
        keys[None] = next(iter(keys.values()))  # one key: a token without kid may use it
    return keys


def fetch_url(url: str, timeout_s: float = JWKS_FETCH_TIMEOUT_S) -> Callable[[], bytes]:
    """A loader that GETs ``url`` (at most 1 MiB, within ``timeout_s``)."""
    def load() -> bytes:
        request = urllib.request.Request(url, headers={"accept": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body: bytes = response.read(_MAX_JWKS_BYTES + 1)
        if len(body) > _MAX_JWKS_BYTES:
            raise ValueError("JWKS larger than 1 MiB")
        return body
    return load


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        raise ConfigError("the key file cannot be read", code="config.key_file",
                          data={"key": key}) from None


def _require(key: VerificationKey | None, where: str) -> VerificationKey:
    if key is None:
        raise ConfigError("no configured algorithm fits the key's type (RS256: RSA, ES256: "
                          "P-256, EdDSA: Ed25519, HS256: a secret)", code="config.algorithm",
                          data={"key": where})
    return key
