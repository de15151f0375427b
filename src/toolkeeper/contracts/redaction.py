"""Redaction (SPEC 5.6): applied to a JSON value before it is serialized, hashed, logged or
written anywhere.

* **Keys** are canonicalized (case folded; the separators ``-``, ``_``, ``.`` and spaces
  removed, which also makes camelCase and its split forms the same) and matched against a
  denylist in the same form; a matching key's value is replaced whole, whatever it is.
* **Values**: known secret shapes (bearer tokens, JWTs, PEM private keys, provider key
  prefixes) are masked wherever they appear inside a string.
* LLM-benign keys such as ``max_tokens`` are not redacted: keys match whole, never by part.

:func:`redact` returns the redacted value and the evidence (which rule fired at which JSON
path), never the value itself.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["DENYLIST", "REDACTED", "Redaction", "canonical_key", "redact"]

REDACTED: Final = "[REDACTED]"
"""What a redacted value (or the secret part of a string) becomes."""

_SEPARATORS: Final = re.compile(r"[-_. ]")


def canonical_key(key: str) -> str:
    """The form keys are compared in: case folded, ``-``, ``_``, ``.`` and spaces removed."""
    return _SEPARATORS.sub("", key).casefold()


DENYLIST: Final = frozenset(canonical_key(k) for k in (
    "Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "accessToken", "clientSecret",
    "registrationAccessToken", "token", "password", "secret", "api_key", "refreshToken",
    "idToken", "privateKey", "passwd"))
"""The canonical keys whose values are always redacted (SPEC 5.6's list, and a few more of
the same kind)."""

_SHAPES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("value.private_key", re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
        re.DOTALL)),
    ("value.jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")),
    ("value.bearer", re.compile(r"\b[Bb]earer\s+[A-Za-z0-9._~+/-]{8,}=*")),
    ("value.provider_key", re.compile(
        r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
        r"|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})")),
)
_ANY_SHAPE: Final = re.compile("|".join(f"(?:{p.pattern})" for _, p in _SHAPES), re.DOTALL)
"""Any secret shape: the one search an ordinary string costs."""

_KEYS: dict[object, bool] = {}
"""Whether a key (as written) is denied: a bounded memo, argument names repeat."""
_KEYS_MAX: Final = 4096


class Redaction(tuple[str, str]):
    """Evidence of one redaction: ``(path, rule)``; ``rule`` is ``key.denylist`` or the value
    shape (``value.jwt``, ...)."""

    __slots__ = ()


def _denied(key: object) -> bool:
    if not isinstance(key, str):
        return False
    denied = canonical_key(key) in DENYLIST
    if len(_KEYS) < _KEYS_MAX and len(key) <= 128:
        _KEYS[key] = denied
    return denied


def _mask(text: str, path: str, evidence: list[Redaction]) -> str:
    for rule, pattern in _SHAPES:
        text, count = pattern.subn(REDACTED, text)
        if count:
            evidence.append(Redaction((path, rule)))
    return text


_search: Final = _ANY_SHAPE.search


def _walk(value: Any, path: str, evidence: list[Redaction]) -> Any:
    """``value`` redacted; the very same object when nothing in it was (the common case costs
    one dictionary lookup per key and one search per string)."""
    if isinstance(value, str):
        return value if _search(value) is None else _mask(value, path, evidence)
    if isinstance(value, dict):
        out: dict[Any, Any] | None = None
        for key, item in value.items():
            denied = _KEYS.get(key)  # inline: the memo answers for almost every key
            if denied is None:
                denied = _denied(key)
            if denied:
                new: Any = REDACTED
                evidence.append(Redaction((f"{path}.{key}", "key.denylist")))
            elif type(item) is str:
                new = item if _search(item) is None else _mask(item, f"{path}.{key}", evidence)
            elif isinstance(item, str | dict | list):
                new = _walk(item, f"{path}.{key}", evidence)
            else:
                new = item
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    if isinstance(value, list):
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new = _walk(item, f"{path}[{index}]", evidence) if isinstance(
                item, str | dict | list) else item
            if new is not item:
                if items is None:
                    items = list(value)
                items[index] = new
        return value if items is None else items
    return value


def redact(value: Any) -> tuple[Any, list[Redaction]]:
    """``value`` (a JSON value) with denied keys' values and secret-shaped text replaced by
    :data:`REDACTED`, and the evidence in the order found. The input is not changed (the same
    object comes back when there was nothing to redact)."""
    evidence: list[Redaction] = []
    return _walk(value, "$", evidence), evidence
