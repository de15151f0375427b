"""Where a JWT issuer's verification keys come from, and which algorithm each key may verify.

Algorithms are pinned per key type, never chosen by the token (RFC 8725 3.1, algorithm
confusion): an RSA key verifies RS256 only, a P-256 key ES256, an Ed25519/Ed448 key EdDSA, and
only a shared secret verifies HS256; a JWK that names its ``alg`` narrows that further. So an
HS256 token signed with the bytes of an RSA public key's PEM has no key to be checked against.

Sources: a shared secret file (HS256), a PEM public key file, or a JWKS (a file, or a URL
fetched with a timeout). A JWKS is read again every ``jwks_refresh_s``, and at most once per
that interval when a token names a ``kid`` it does not hold (a rotated key), so a flood of
tokens with made-up ``kid`` values cannot make the gateway hammer the issuer. A failed read
keeps the keys last read (logged). Reads happen on the request that finds the set stale,
bounded by the fetch timeout.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from jwt import PyJWK

from toolkeeper.errors import AuthenticationError, ConfigError

__all__ = [
    "JWKS_FETCH_TIMEOUT_S",
    "JwksSource",
    "KeySource",
    "StaticKeys",
    "VerificationKey",
    "algorithms_for",
    "fetch_url",
]

_log = logging.getLogger("toolkeeper.auth")

JWKS_FETCH_TIMEOUT_S: Final = 5.0
_MAX_JWKS_BYTES: Final = 1 << 20


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
    """Keys of one issuer: :meth:`key` for a token's ``kid`` (None: the token names none)."""

    def key(self, kid: str | None) -> VerificationKey:
        raise NotImplementedError


class StaticKeys(KeySource):
    """One key from a file, read once at start (a secret or a PEM public key)."""

    def __init__(self, key: VerificationKey) -> None:
        self._key = key

    @classmethod
    def from_secret_file(cls, path: str, allowed: frozenset[str], where: str) -> StaticKeys:
        secret = _read(path, f"{where}.secret_file").strip()
        if not secret:
            raise ConfigError("the HS256 secret file is empty", code="config.key_file",
                              data={"key": f"{where}.secret_file"})
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
    """A JSON Web Key Set, read by ``load`` (a file or a URL), refreshed as the module says."""

    def __init__(self, load: Callable[[], bytes], allowed: frozenset[str], refresh_s: float,
                 *, clock: Callable[[], float] = time.monotonic, name: str = "") -> None:
        self._load = load
        self._allowed = allowed
        self._refresh_s = max(1.0, float(refresh_s))
        self._clock = clock
        self._name = name
        self._lock = threading.Lock()
        self._keys: Mapping[str | None, VerificationKey] = {}
        self._read_at = -self._refresh_s
        self._refetched_at = -self._refresh_s
        self.reads = 0
        self._read()

    def key(self, kid: str | None) -> VerificationKey:
        now = self._clock()
        if now - self._read_at >= self._refresh_s:
            self._read()
        found = self._keys.get(kid)
        if found is None and kid is not None and now - self._refetched_at >= self._refresh_s:
            self._refetched_at = now  # an unknown kid: one more look this interval, no more
            self._read()
            found = self._keys.get(kid)
        if found is None:
            raise AuthenticationError("unknown_key")
        return found

    def _read(self) -> None:
        with self._lock:
            self._read_at = self._clock()
            self.reads += 1
            try:
                document = json.loads(self._load())
                keys = _parse_jwks(document, self._allowed)
            except Exception as exc:
                _log.warning("JWKS %s could not be read (%s); keeping %d keys", self._name,
                             type(exc).__name__, len(self._keys))
                return
            self._keys = keys


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
