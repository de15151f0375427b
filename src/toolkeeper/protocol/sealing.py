"""Sealed tokens: state a client carries and hands back, unreadable and unforgeable by it.

A :class:`Sealer` turns a JSON value into an opaque, URL-safe token (AES-256-GCM, a fresh
96-bit random nonce per token) and back. Everything that decides whether a token may be used
is inside the authenticated plaintext, as canonical JSON: the *purpose* (what the token is for,
e.g. ``"tools/list"`` cursors or ``"tools/call"`` request state), the *binding* (string facts
the token is only good for: principal, tool, generation...), the absolute expiry and the
payload. Apart from the nonce, sealing is deterministic.

Keys rotate: ``keys[0]`` seals, every key opens, so a replica configured with
``[new, old]`` still opens what a replica with ``[old]`` sealed. Keys are 32 bytes.

:meth:`Sealer.open` raises :class:`SealError` whose ``reason`` is stable (tests, logs and the
wire's ``data.reason`` match on it; the message is for people). Checks run in this order and
the first failure is reported:

=====================  ==================================================================
reason                 meaning
=====================  ==================================================================
``malformed``          not a token at all: not text, not base64url, too short or too long,
                       an unknown format version, or an authentic plaintext of the wrong
                       shape (a token from an incompatible release)
``unsealable``         authentication fails under every key: tampered bytes, truncated, or
                       sealed by a gateway with another key
``purpose_mismatch``   authentic, but sealed for another purpose
``<key>_mismatch``     authentic, but the binding's ``<key>`` differs (or is present on one
                       side only); keys are compared in sorted order, so e.g.
                       ``arguments_mismatch`` is reported before ``principal_mismatch``,
                       ``generation_mismatch``, ``tool_mismatch`` or ``version_mismatch``
``expired``            authentic and bound to this use, but ``now`` is at or past its expiry
=====================  ==================================================================

Binding keys are lower-case identifiers (``[a-z][a-z0-9_]*``) so that every reason is one.
Expiry is checked last so that a token replayed elsewhere is reported for what is wrong with
it, not merely for its age. Nothing here does I/O; the only outside input is the nonce, drawn
from the operating system's CSPRNG.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.errors import ContractError, ToolkeeperError

__all__ = [
    "FIXED_REASONS",
    "KEY_BYTES",
    "MAX_TOKEN_CHARS",
    "SealError",
    "Sealer",
    "mismatch_reason",
]

KEY_BYTES: Final = 32
"""A sealing key is 32 random bytes (AES-256)."""

MAX_TOKEN_CHARS: Final = 1 << 20
"""Longer text is ``malformed`` without being decoded (a bound on work per refusal)."""

FIXED_REASONS: Final = frozenset({"malformed", "unsealable", "purpose_mismatch", "expired"})
"""The reasons that do not name a binding key; the others are ``<key>_mismatch``."""

_VERSION: Final = b"\x01"
_NONCE_BYTES: Final = 12
_TAG_BYTES: Final = 16
_MIN_RAW: Final = len(_VERSION) + _NONCE_BYTES + _TAG_BYTES
_BINDING_KEY = re.compile(r"[a-z][a-z0-9_]*\Z")
_PLAIN_KEYS: Final = frozenset({"p", "b", "e", "v"})


class SealError(ToolkeeperError):
    """A token was refused: ``reason`` is one of the module docstring's table
    (``code`` is ``seal.<reason>``, ``data`` is ``{"reason": reason}``)."""

    default_code = "seal.refused"

    def __init__(self, reason: str) -> None:
        super().__init__(f"sealed token refused: {reason}", code=f"seal.{reason}",
                         data={"reason": reason})
        self.reason = reason


def mismatch_reason(binding_key: str) -> str:
    """The reason :meth:`Sealer.open` gives when ``binding_key`` differs."""
    return f"{binding_key}_mismatch"


_CHECKED_KEYS: set[str] = set()
"""Binding keys already found to be identifiers (a caller uses the same few every time)."""


def _check_binding(binding: Mapping[str, str]) -> dict[str, str]:
    for key, value in binding.items():
        if key not in _CHECKED_KEYS:
            if not isinstance(key, str) or not _BINDING_KEY.match(key):
                raise ValueError(f"binding keys are lower-case identifiers, not {key!r}")
            _CHECKED_KEYS.add(key)
        if type(value) is not str:
            raise ValueError(f"binding value of {key!r} is not a string")
    return dict(binding)


class Sealer:
    """Seals and opens tokens under a list of keys (``keys[0]`` seals, every key opens)."""

    __slots__ = ("_aeads", "ephemeral_key")

    def __init__(self, keys: Sequence[bytes], *, ephemeral_key: bool = False) -> None:
        if not keys:
            raise ValueError("a Sealer needs at least one key")
        for key in keys:
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                raise ValueError(f"a sealing key is {KEY_BYTES} bytes")
        self._aeads = tuple(AESGCM(key) for key in keys)
        self.ephemeral_key = ephemeral_key
        """True when the key was drawn at random for this process (no configured key):
        its tokens open nowhere else and not after a restart."""

    @classmethod
    def ephemeral(cls) -> Sealer:
        """A Sealer with a random key, for a single process without configuration."""
        return cls([AESGCM.generate_key(bit_length=KEY_BYTES * 8)], ephemeral_key=True)

    def seal(self, purpose: str, binding: Mapping[str, str], payload: Any, *,
             ttl_s: float, now: float) -> str:
        """An opaque URL-safe token carrying ``payload`` (any JSON value) for ``purpose``,
        good while ``now < expiry`` (``expiry = now + ttl_s``) and only under ``binding``."""
        plain = canonical_json({"p": purpose, "b": _check_binding(binding),
                                "e": float(now + ttl_s), "v": payload})
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aeads[0].encrypt(nonce, plain, _VERSION)
        return _encode(_VERSION + nonce + sealed)

    def open(self, token: str, purpose: str, binding: Mapping[str, str], *,
             now: float) -> Any:
        """The payload of ``token``, or :class:`SealError` with the first failing reason."""
        return self.open_expiring(token, purpose, binding, now=now)[0]

    def open_expiring(self, token: str, purpose: str, binding: Mapping[str, str], *,
                      now: float) -> tuple[Any, float]:
        """:meth:`open`, and the token's expiry: what a caller remembering an opened token
        needs (the same text is good until then, for the same purpose and binding)."""
        plain = self._decrypt(token)
        if plain.get("p") != purpose:
            raise SealError("purpose_mismatch")
        expected, found = _check_binding(binding), plain["b"]
        if found != expected:
            for key in sorted(expected.keys() | found.keys()):
                if expected.get(key) != found.get(key):
                    raise SealError(mismatch_reason(key))
        if now >= plain["e"]:
            raise SealError("expired")
        return plain["v"], plain["e"]

    def _decrypt(self, token: str) -> dict[str, Any]:
        raw = _decode(token)
        nonce, sealed = raw[1:1 + _NONCE_BYTES], raw[1 + _NONCE_BYTES:]
        for aead in self._aeads:
            try:
                plain = aead.decrypt(nonce, sealed, _VERSION)
            except InvalidTag:
                continue
            return _parse(plain)
        raise SealError("unsealable")


_TO_STANDARD: Final = bytes.maketrans(b"-_+/=", b"+/***")
"""URL-safe to the standard alphabet; the standard alphabet's own ``+``, ``/`` and padding
become ``*``, which the strict decoder refuses. (A bytes table: ``str.translate`` with a
mapping raised and caught a ``KeyError`` for every character it left alone, about 200
instructions a character.)"""
_ALPHABET: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_SPARE_BITS: Final = {0: 0, 2: 0b1111, 3: 0b11}
"""By ``len(token) % 4``: the low bits of the last character that carry no data (1 is never
a valid length)."""


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode(token: str) -> bytes:
    # Strict: only the URL-safe alphabet, and only the one canonical spelling of the bytes
    # (the lenient decoder skips stray characters and ignores a last character's spare bits,
    # which would let several texts open as one token).
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS or not token.isascii():
        raise SealError("malformed")
    spare = _SPARE_BITS.get(len(token) % 4)
    if spare is None or (spare and _ALPHABET.find(token[-1]) & spare):
        raise SealError("malformed")  # (find's -1 for a stray last character fails below)
    try:
        raw = binascii.a2b_base64(
            token.encode("ascii").translate(_TO_STANDARD) + b"=" * (-len(token) % 4),
            strict_mode=True)
    except (binascii.Error, ValueError):
        raise SealError("malformed") from None
    if len(raw) < _MIN_RAW or raw[:1] != _VERSION:
        raise SealError("malformed")
    return raw


def _parse(plain: bytes) -> dict[str, Any]:
    try:
        value = loads_json(plain)
    except ContractError:
        raise SealError("malformed") from None
    if (not isinstance(value, dict) or value.keys() != _PLAIN_KEYS
            or not isinstance(value["p"], str) or not isinstance(value["b"], dict)
            or not all(isinstance(v, str) for v in value["b"].values())
            or type(value["e"]) is not float):
        raise SealError("malformed")
    return value
