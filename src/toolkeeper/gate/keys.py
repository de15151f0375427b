"""The keys rollback evidence is signed and verified with (SPEC 6, seed 004).

A :class:`SigningKey` is the release controller's: an HMAC-SHA-256 secret (shared with whoever
verifies) or an Ed25519 private key (whoever verifies needs only its public half). Keys come
from files named by the configuration's ``[gate]`` section or, when it names none, by the
environment:

* ``TOOLKEEPER_GATE_KEY_ID`` and ``TOOLKEEPER_GATE_KEY_FILE``: the signing key's id and file;
* ``TOOLKEEPER_GATE_TRUSTED_KEYS``: more trusted keys, ``ID=FILE`` entries separated by
  commas or spaces (a configured trusted key of the same id is kept).

A signing key file holds an Ed25519 private key (PEM, PKCS#8, unencrypted) or an HMAC secret
as hex digits, at least 32 bytes of it (surrounding whitespace ignored); a trusted key file an
Ed25519 public key (PEM) or such an HMAC secret. A file that is not one of them is
:class:`~toolkeeper.errors.ToolkeeperError` ``gate.key_invalid`` naming the path, never its
content. :data:`DEMO_KEY` is a fixed HMAC key for examples and tests: a labelled fixture, not
a secret, and never a default.

This package does not import the configuration: :func:`signing_key_from` and
:func:`trusted_keys_from` read any object with the ``[gate]`` keys as attributes
(:class:`GateSettingsLike`), as :mod:`toolkeeper.config.model`'s values are.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key

from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.rollback import ED25519, HMAC_SHA256, TrustedKey, sign_ed25519, sign_hmac

__all__ = [
    "DEMO_KEY",
    "ENV_KEY_FILE",
    "ENV_KEY_ID",
    "ENV_TRUSTED_KEYS",
    "GateSettingsLike",
    "SigningKey",
    "TrustedKeySettingsLike",
    "load_signing_key",
    "load_trusted_key",
    "require_signer",
    "signing_key_from",
    "trusted_keys_from",
]

ENV_KEY_ID: Final = "TOOLKEEPER_GATE_KEY_ID"
ENV_KEY_FILE: Final = "TOOLKEEPER_GATE_KEY_FILE"
ENV_TRUSTED_KEYS: Final = "TOOLKEEPER_GATE_TRUSTED_KEYS"
_MIN_HMAC_BYTES: Final = 32
_MAX_FILE_BYTES: Final = 64 * 1024
_HEX: Final = re.compile(r"(?:[0-9a-fA-F]{2})+")
_PEM: Final = b"-----BEGIN "


class TrustedKeySettingsLike(Protocol):
    """One ``[[gate.trusted_keys]]`` table."""

    @property
    def id(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def algorithm(self) -> str: ...


class GateSettingsLike(Protocol):
    """The ``[gate]`` section."""

    @property
    def signing_key_id(self) -> str: ...
    @property
    def signing_key_file(self) -> str: ...
    @property
    def trusted_keys(self) -> Sequence[TrustedKeySettingsLike]: ...


@dataclass(frozen=True)
class SigningKey:
    """A key that signs rollback evidence; ``secret`` is never shown (not in ``repr``)."""

    key_id: str
    algorithm: str
    secret: bytes | Ed25519PrivateKey = field(repr=False)
    label: str | None = None

    def sign(self, data: bytes) -> bytes:
        """The raw HMAC-SHA-256 digest, or the Ed25519 signature, of ``data``."""
        if isinstance(self.secret, Ed25519PrivateKey):
            return self.secret.sign(data)
        return hmac.new(self.secret, data, hashlib.sha256).digest()

    def trusted(self) -> TrustedKey:
        """What verifies this key's signatures: the HMAC key, or the Ed25519 public key."""
        if isinstance(self.secret, Ed25519PrivateKey):
            return self.secret.public_key()
        return self.secret

    def sign_evidence(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """``payload`` with this key's ``attestation`` (:func:`~toolkeeper.gate.rollback.sign_hmac`
        or :func:`~toolkeeper.gate.rollback.sign_ed25519`)."""
        if isinstance(self.secret, Ed25519PrivateKey):
            return sign_ed25519(payload, self.key_id, self.secret)
        return sign_hmac(payload, self.key_id, self.secret)


DEMO_KEY: Final[SigningKey] = SigningKey(
    "toolkeeper-demo-fixture", HMAC_SHA256,
    b"toolkeeper demo fixture key: published, not a secret",
    label="demo fixture, not a secret")
"""A fixed HMAC key for examples and tests. Anyone can sign with it: trust it nowhere real."""


def _invalid(path: Path, why: str) -> ToolkeeperError:
    return ToolkeeperError(f"key file {path}: {why}", code="gate.key_invalid",
                           data={"path": str(path)})


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _invalid(path, f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > _MAX_FILE_BYTES:
        raise _invalid(path, f"larger than {_MAX_FILE_BYTES} bytes")
    return raw.strip()


def _hmac_secret(raw: bytes, path: Path) -> bytes:
    text = raw.decode("ascii", "replace")
    if not _HEX.fullmatch(text):
        raise _invalid(path, "neither a PEM key nor an HMAC secret in hex digits")
    secret = bytes.fromhex(text)
    if len(secret) < _MIN_HMAC_BYTES:
        raise _invalid(path, f"an HMAC secret of {len(secret)} bytes; at least "
                             f"{_MIN_HMAC_BYTES} are needed")
    return secret


def load_signing_key(key_id: str, path: Path) -> SigningKey:
    """The signing key ``key_id`` of the file at ``path``: an Ed25519 private key (PEM) or an
    HMAC secret (hex, at least 32 bytes)."""
    raw = _read(path)
    if not raw.startswith(_PEM):
        return SigningKey(key_id, HMAC_SHA256, _hmac_secret(raw, path))
    try:
        key = load_pem_private_key(raw, password=None)
    except (ValueError, TypeError):  # encrypted, malformed or unsupported: the text is not shown
        raise _invalid(path, "not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise _invalid(path, "a private key that is not Ed25519")
    return SigningKey(key_id, ED25519, key)


def load_trusted_key(algorithm: str | None, path: Path) -> TrustedKey:
    """The trusted key of the file at ``path``: an Ed25519 public key (PEM) or an HMAC secret
    (hex); ``algorithm`` (``hmac-sha256``, ``ed25519``; None or empty: told by the file) must
    be the file's when given."""
    raw = _read(path)
    found = ED25519 if raw.startswith(_PEM) else HMAC_SHA256
    if algorithm and algorithm != found:
        raise _invalid(path, f"holds an {found} key, not {algorithm}")
    if found == HMAC_SHA256:
        return _hmac_secret(raw, path)
    try:
        key = load_pem_public_key(raw)
    except (ValueError, TypeError):
        raise _invalid(path, "not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise _invalid(path, "a public key that is not Ed25519")
    return key


def signing_key_from(config_gate: GateSettingsLike | None,
                     environ: Mapping[str, str]) -> SigningKey | None:
    """The configured signing key: ``gate.signing_key_id``/``signing_key_file``, else
    ``TOOLKEEPER_GATE_KEY_ID``/``TOOLKEEPER_GATE_KEY_FILE``; None when neither names one."""
    if config_gate is not None and config_gate.signing_key_file:
        if not config_gate.signing_key_id:
            raise ToolkeeperError("gate.signing_key_file is set without gate.signing_key_id",
                                  code="gate.key_invalid", data={"key": "gate.signing_key_id"})
        return load_signing_key(config_gate.signing_key_id, Path(config_gate.signing_key_file))
    key_id, key_file = environ.get(ENV_KEY_ID, ""), environ.get(ENV_KEY_FILE, "")
    if not key_file and not key_id:
        return None
    if not key_file or not key_id:
        missing = ENV_KEY_FILE if not key_file else ENV_KEY_ID
        raise ToolkeeperError(f"{ENV_KEY_ID} and {ENV_KEY_FILE} go together: {missing} is not "
                              "set", code="gate.key_invalid", data={"variable": missing})
    return load_signing_key(key_id, Path(key_file))


def _env_entries(text: str) -> list[tuple[str, str]]:
    entries = []
    for entry in re.split(r"[,\s]+", text.strip()):
        key_id, sep, path = entry.partition("=")
        if not entry:
            continue
        if not sep or not key_id or not path:
            raise ToolkeeperError(f"{ENV_TRUSTED_KEYS}: {entry!r} is not ID=FILE",
                                  code="gate.key_invalid", data={"variable": ENV_TRUSTED_KEYS})
        entries.append((key_id, path))
    return entries


def trusted_keys_from(config_gate: GateSettingsLike | None,
                      environ: Mapping[str, str]) -> dict[str, TrustedKey]:
    """Every trusted key by id: ``[[gate.trusted_keys]]``, then ``TOOLKEEPER_GATE_TRUSTED_KEYS``
    entries of other ids."""
    trusted: dict[str, TrustedKey] = {}
    for entry in config_gate.trusted_keys if config_gate is not None else ():
        trusted[entry.id] = load_trusted_key(entry.algorithm or None, Path(entry.file))
    for key_id, path in _env_entries(environ.get(ENV_TRUSTED_KEYS, "")):
        if key_id not in trusted:
            trusted[key_id] = load_trusted_key(None, Path(path))
    return trusted


def require_signer(key: SigningKey | None, why: str = "") -> SigningKey:
    """``key``, or ToolkeeperError ``gate.no_signing_key`` naming the configuration keys and
    the environment variables that set one (``why``: what needs it, appended)."""
    if key is None:
        raise ToolkeeperError(
            "no signing key is configured (set gate.signing_key_id and gate.signing_key_file "
            f"in --config, or {ENV_KEY_ID} and {ENV_KEY_FILE})" + (f": {why}" if why else ""),
            code="gate.no_signing_key",
            data={"keys": ["gate.signing_key_id", "gate.signing_key_file"],
                  "variables": [ENV_KEY_ID, ENV_KEY_FILE]})
    return key
