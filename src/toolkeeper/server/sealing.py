"""The gateway's sealing keys (``[sealing]``): where they come from, and the Sealer they build.

State a client carries back (``tools/list`` cursors, a call's ``requestState``) is sealed with
:class:`~toolkeeper.protocol.sealing.Sealer`. For a replica to open what another sealed, every
replica is configured with the same keys, as base64 of 32 random bytes each (``openssl rand
-base64 32``), from one of:

* ``sealing.keys_file``: a file holding the keys, one per line (checked when the
  configuration is loaded);
* else the environment variable ``sealing.keys_env`` names (default
  ``TOOLKEEPER_SEALING_KEYS``): the keys separated by commas or white space.

The first key seals and every key opens, so a key is rotated by prepending the new one
everywhere, then dropping the old one once what it sealed has expired. Neither source is ever
echoed: a refusal names the key's position, never its text, and the redaction denies
``sealing_key(s)`` and the variable's name (``*_SEALING_KEYS``). Without any key the gateway
seals with :meth:`Sealer.ephemeral`: sealed state then resumes only on the same process.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from toolkeeper.errors import ConfigError
from toolkeeper.protocol.sealing import KEY_BYTES, Sealer

__all__ = ["DEFAULT_KEYS_ENV", "SealingSettings", "build_sealer", "parse_sealing_keys"]

DEFAULT_KEYS_ENV: Final = "TOOLKEEPER_SEALING_KEYS"
_SEPARATORS: Final = re.compile(r"[\s,]+")
_MAX_KEYS: Final = 16


@dataclass(frozen=True, slots=True)
class SealingSettings:
    """``[sealing]``: ``keys_file`` (resolved path, ``""``: none), ``keys_env``, and how long
    a call's ``requestState`` can be resumed (``request_state_ttl_s``)."""

    keys_file: str = ""
    keys_env: str = DEFAULT_KEYS_ENV
    request_state_ttl_s: float = 600.0


def parse_sealing_keys(text: str) -> tuple[bytes, ...]:
    """The keys in ``text`` (base64, standard or URL-safe alphabet, separated by commas or
    white space), first first; ``ValueError(code, reason)`` names a bad key by position only."""
    words = [word for word in _SEPARATORS.split(text) if word]
    if len(words) > _MAX_KEYS:
        raise ValueError("config.bad_value", f"{len(words)} sealing keys; at most {_MAX_KEYS}")
    keys = []
    for position, word in enumerate(words, start=1):
        try:
            key = base64.b64decode(word.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) != KEY_BYTES:
            raise ValueError("config.bad_value", f"sealing key {position} is not base64 of "
                             f"{KEY_BYTES} bytes")
        keys.append(key)
    return tuple(keys)


def _from_file(path: str) -> tuple[bytes, ...]:
    try:
        with open(path, "rb") as file:
            text = file.read(1 << 16).decode("ascii")
    except (OSError, UnicodeDecodeError):
        raise ConfigError("configuration sealing.keys_file: cannot read its keys",
                          code="config.unreadable_file",
                          data={"key": "sealing.keys_file"}) from None
    return _parsed(text, "sealing.keys_file")


def _parsed(text: str, key: str) -> tuple[bytes, ...]:
    try:
        return parse_sealing_keys(text)
    except ValueError as exc:
        code, reason = exc.args
        raise ConfigError(f"configuration {key}: {reason}", code=code,
                          data={"key": key}) from None


def build_sealer(settings: SealingSettings, environ: Mapping[str, str]) -> Sealer:
    """The gateway's Sealer: the file's keys, else the environment variable's, else an
    ephemeral one (``sealer.ephemeral_key``; the caller says so once). A file or variable
    that is set but holds no key is refused (``config.bad_value``), never silently ephemeral."""
    if settings.keys_file:
        keys, key = _from_file(settings.keys_file), "sealing.keys_file"
    elif settings.keys_env and environ.get(settings.keys_env) is not None:
        keys, key = _parsed(environ[settings.keys_env], "sealing.keys_env"), "sealing.keys_env"
    else:
        return Sealer.ephemeral()
    if not keys:
        raise ConfigError(f"configuration {key}: holds no sealing key", code="config.bad_value",
                          data={"key": key})
    return Sealer(keys)
