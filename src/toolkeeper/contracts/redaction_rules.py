"""The rules redaction applies (SPEC 5.6), as tables: which keys are denied, and which secret
shapes are masked inside a string. :mod:`toolkeeper.contracts.redaction` applies them to JSON
values (the call log's digest) and to log text.

* **Keys** are compared in canonical form (case folded; ``-``, ``_``, ``.`` and spaces
  removed, so ``DB-Password``, ``db_password`` and ``dbPassword`` are one key). A key is denied
  when its canonical form is in :data:`DENYLIST`, *contains* a word that is a secret wherever
  it stands (``password``, ``secret``, ``cookie``...), or *ends with* a word that is a secret
  only as the head of the name (``session_token`` and ``x-auth-token`` are tokens,
  ``token_count`` and ``max_tokens`` are not; ``api_key`` is a key, ``primary_key`` is not).
  The choices, false positives included (``password_hint`` is denied, ``author`` and
  ``tokenizer`` are not), are pinned in tests/contracts/test_redaction.py.
* **Values**: each row of :data:`SHAPES` finds one secret shape and masks its ``secret``
  group (the whole match when it has none); a row with a check masks only matches the check
  accepts. Every row starts with a plain literal character, so the one search over all of
  them (:data:`ANY_SHAPE`, what an ordinary string costs on the call path) skips to the
  characters that can start a secret instead of trying every row at every position.
* **Linear time**: redaction runs on the event loop (every log line) and in the call path
  (every argument), so no input may make a search quadratic. Each row's attempt either cannot
  start again inside the run it scans (``eyJ`` not after a JWT character, ``-----BEGIN ``
  rather than ``BEGIN ``), or fails within a bounded distance (a run shorter than a row's
  minimum, a label of at most ``{0,64}``), or succeeds and consumes what it scanned; so no
  character is read by more than a few attempts. Runs are possessive (``++``) where what
  follows cannot match what they took. A secret's own run is not bounded, so a long secret
  is masked whole. tests/contracts/test_redaction_time.py holds the adversarial inputs.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Final, NamedTuple

__all__ = ["ANY_SHAPE", "DENYLIST", "REDACTED", "SHAPES", "Shape", "canonical_key",
           "denied_key", "mask_match"]

REDACTED: Final = "[REDACTED]"
"""What a redacted value (or the secret part of a string) becomes."""

_SEPARATORS: Final = re.compile(r"[-_. ]")


def canonical_key(key: str) -> str:
    """The form keys are compared in: case folded, ``-``, ``_``, ``.`` and spaces removed."""
    return _SEPARATORS.sub("", key).casefold()


DENYLIST: Final = frozenset(canonical_key(k) for k in (
    "Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "accessToken", "clientSecret",
    "registrationAccessToken", "token", "password", "secret", "api_key", "refreshToken",
    "idToken", "privateKey", "passwd", "sig"))
"""Canonical keys always denied, whatever the word rules say (SPEC 5.6's list and more)."""

_ANYWHERE: Final = ("password", "passwd", "passphrase", "secret(?!ar)", "credential",
                    "cookie", "authori[sz]ation", "privatekey")
"""Secret wherever the word stands in a key (``secret(?!ar)``: not ``secretary``)."""
_AS_HEAD: Final = ("token", "apikey", "accesskey", "secretkey", "signingkey", "encryptionkey",
                   "masterkey", "sealingkeys?", "auth", "pwd", "signature")
"""Secret only as the last word of a key (``session_token``, not ``token_count``)."""
_BENIGN: Final = frozenset({"pagetoken", "nextpagetoken", "progresstoken"})
"""Canonical keys the word rules would deny that are not secrets: pagination cursors, and
MCP's ``progressToken``, a correlation id the client picks so progress notifications name
their request (evidence needs it to show which request a notification belongs to)."""
_DENIED_WORDS: Final = re.compile(f"{'|'.join(_ANYWHERE)}|(?:{'|'.join(_AS_HEAD)})$")


def denied_key(key: str) -> bool:
    """Whether a key's value is a secret, to be replaced whole."""
    canonical = canonical_key(key)
    return canonical in DENYLIST or (
        canonical not in _BENIGN and _DENIED_WORDS.search(canonical) is not None)


def _basic_credentials(match: re.Match[str]) -> bool:
    """``Basic <base64>`` is a credential when the base64 decodes to ``user:password`` (RFC
    7617), which tells it from prose such as "Basic tutorial"."""
    token = match.group("secret")
    try:
        return b":" in base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False


def _denied_name(match: re.Match[str]) -> bool:
    return denied_key(match.group("name"))


class Shape(NamedTuple):
    """One row: ``rule`` (the evidence name), the pattern that masks, the search that finds a
    candidate for it (a superset of the pattern's matches; see :data:`ANY_SHAPE`), and an
    optional check a match must pass to be masked."""

    rule: str
    pattern: re.Pattern[str]
    find: str
    check: Callable[[re.Match[str]], bool] | None = None


_WORD_START: Final = r"(?<![A-Za-z0-9_].)"
"""Placed after a row's first (literal) character: the character before it is not a word
character (a ``\\b`` before the literal would cost the search its literal start)."""
_RUN_START: Final = r"(?<![A-Za-z0-9_-].)"
"""As :data:`_WORD_START`, for a row whose run also takes ``-``: no start inside the run."""
_PRIVATE_KEY: Final = r"[A-Z0-9 ]{0,64}PRIVATE KEY(?: BLOCK)?-----"
_QUERY_PARAMETER: Final = r"(?P<name>[A-Za-z0-9_.~-]++)=(?P<secret>[^&#\s'\"<>]++)"
_GROUP: Final = re.compile(r"\(\?P<\w+>")


def _row(rule: str, pattern: str, find: str | None = None,
         check: Callable[[re.Match[str]], bool] | None = None) -> Shape:
    return Shape(rule, re.compile(pattern, re.DOTALL),
                 _GROUP.sub("(?:", pattern) if find is None else find, check)


SHAPES: Final[tuple[Shape, ...]] = (
    _row("value.private_key",  # PEM (RSA, EC, OpenSSH, PKCS#8, encrypted) and PGP blocks
         rf"-----BEGIN {_PRIVATE_KEY}.*?(?:-----END {_PRIVATE_KEY}|\Z)",
         find=r"B(?<=-----B)EGIN [A-Z0-9 ]{0,64}PRIVATE KEY"),
    _row("value.jwt", rf"e{_RUN_START}yJ[A-Za-z0-9_-]{{4,}}+\.[A-Za-z0-9_-]{{4,}}+\.[A-Za-z0-9_-]*+",
         find=r"J(?<=eyJ)(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{4,}+\."),
    *(_row("value.bearer",
           rf"{b}{_WORD_START}(?i:earer)\s{{1,16}}(?P<secret>[A-Za-z0-9._~+/-]{{8,}}+=*+)")
      for b in "Bb"),
    *(_row("value.basic",
           rf"{b}{_WORD_START}(?i:asic)\s{{1,16}}(?P<secret>[A-Za-z0-9+/]{{8,}}+={{0,2}})"
           r"(?![A-Za-z0-9+/=])", check=_basic_credentials) for b in "Bb"),
    _row("value.provider_key",  # OpenAI/Anthropic sk-, Stripe sk_/rk_ live and test keys
         r"[sr]k(?<![A-Za-z0-9_]..)(?:-(?<=sk-)(?:ant-|proj-)?[A-Za-z0-9_-]{16,}+"
         r"|_(?:live|test)_[A-Za-z0-9]{10,}+)",
         find=r"k(?<=[sr]k)(?:-|_(?:live|test)_)"),
    _row("value.provider_key", rf"w{_WORD_START}hsec_[A-Za-z0-9+/=]{{20,}}+",
         find=r"_(?<=whsec_)"),
    _row("value.provider_key",  # GitHub classic and fine-grained tokens
         rf"g{_WORD_START}(?:h[pousr]_[A-Za-z0-9]{{20,}}+|ithub_pat_[A-Za-z0-9_]{{20,}}+)",
         find=r"_(?:(?<=gh[pousr]_)|(?<=github_pat_))"),
    _row("value.provider_key", rf"x{_WORD_START}ox[abposr]-[A-Za-z0-9-]{{10,}}+"),  # Slack
    _row("value.provider_key",  # AWS key ids (long-lived, temporary), Google API keys
         r"A(?:(?:KIA|SIA)[0-9A-Z]{16}|Iza[0-9A-Za-z_-]{35})"),
    _row("value.provider_key", rf"n{_WORD_START}pm_[A-Za-z0-9]{{36}}", find=r"_(?<=npm_)"),
    _row("value.gateway_key",  # toolkeeper's own API keys: the id stays, the secret goes
         rf"t{_WORD_START}k_[0-9a-f]{{12}}_(?P<secret>[A-Za-z0-9_-]{{43,}}+)",
         find=r"_(?<=tk_)"),
    _row("value.url_password",  # scheme://user:password@host; the password to the last @
         r":(?<=[A-Za-z0-9+.-]:)//[^/\s:@'\"<>]{0,256}:(?P<secret>[^/\s'\"<>]+)@"),
    *(_row("value.query_secret", re.escape(lead) + _QUERY_PARAMETER, check=_denied_name)
      for lead in "?&#"),
)
"""The secret shapes, masked wherever they appear inside a string."""

ANY_SHAPE: Final = re.compile("|".join(shape.find for shape in SHAPES), re.DOTALL)
"""A search for any row's candidates: what an ordinary string costs on the call path. Each
row's ``find`` starts with a plain literal character (a rare one where the row allows: ``J``
of ``eyJ``, ``_`` of ``ghp_``), so the search skips to the characters that can be part of a
secret instead of trying every row at every position; a string it finds nothing in is
left as it is without running the rows."""


def mask_match(match: re.Match[str]) -> str:
    """The match with its ``secret`` group (else all of it) replaced by :data:`REDACTED`."""
    if "secret" not in match.re.groupindex:
        return REDACTED
    text, start = match.group(), match.start()
    return text[:match.start("secret") - start] + REDACTED + text[match.end("secret") - start:]
