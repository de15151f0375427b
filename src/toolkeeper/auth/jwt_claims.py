"""A JWT's claims set read as RFC 7519 writes it, before any claim is judged.

PyJWT parses the payload with ``json.loads`` and reads the time claims with ``int()``: the
last of two members of one name wins, ``"exp": "9999999999"`` (a string) passes as a number,
``true`` as 1, and ``NaN``/``Infinity`` (not JSON) parse. :class:`StrictJWT` replaces the
payload step only (PyJWT's documented ``_decode_payload`` hook; the signature is checked
before it runs, every claim check after it):

* a member name that occurs twice in any object of the payload is
  :class:`DuplicateClaimError` (RFC 7519 section 4: "The Claim Names within a JWT Claims Set
  MUST be unique; JWT parsers MUST either reject JWTs with duplicate Claim Names or use a
  JSON parser that returns only the lexically last duplicate member name": this parser
  rejects);
* ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (RFC 8259 section 6): ``malformed``;
* ``exp``, ``nbf`` and ``iat`` are NumericDate values, "a JSON numeric value" (RFC 7519
  section 2): a string, a boolean (``bool`` is an ``int`` in Python), an object or a number
  that does not fit a double (``1e400``) is :class:`TimeClaimError`.

The longest lifetime a token may claim is checked after PyJWT's own checks, by
:func:`lifetime_exceeded`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import jwt

__all__ = [
    "DEFAULT_MAX_LIFETIME_S",
    "TIME_CLAIMS",
    "DuplicateClaimError",
    "StrictJWT",
    "TimeClaimError",
    "lifetime_exceeded",
]

TIME_CLAIMS: Final = ("exp", "nbf", "iat")
"""The NumericDate claims (RFC 7519 4.1.4-4.1.6)."""

DEFAULT_MAX_LIFETIME_S: Final = 86_400
"""The longest token lifetime accepted unless configured (``auth.jwt.max_token_lifetime_s``)."""


class DuplicateClaimError(jwt.DecodeError):
    """The payload names one member twice (reason ``duplicate_claim``)."""


class TimeClaimError(jwt.DecodeError):
    """``exp``, ``nbf`` or ``iat`` is not a JSON number (reason ``bad_time_claim``)."""


def _unique(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise DuplicateClaimError("a member name occurs twice")
    return out


def _not_json(constant: str) -> Any:
    raise jwt.DecodeError("NaN and Infinity are not JSON")


def _is_number(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and math.isfinite(value))


class StrictJWT(jwt.PyJWT):
    """PyJWT with the payload parsed strictly (module docstring)."""

    def _decode_payload(self, decoded: dict[str, Any]) -> dict[str, Any]:
        try:
            payload = json.loads(decoded["payload"], object_pairs_hook=_unique,
                                 parse_constant=_not_json)
        except (ValueError, RecursionError):
            raise jwt.DecodeError("the payload is not JSON") from None
        if not isinstance(payload, dict):
            raise jwt.DecodeError("the payload is not a JSON object")
        for claim in TIME_CLAIMS:
            if claim in payload and not _is_number(payload[claim]):
                raise TimeClaimError(f"{claim} is not a JSON number")
        return payload


def lifetime_exceeded(claims: Mapping[str, Any], max_lifetime_s: int, *, now: float,
                      leeway_s: int) -> bool:
    """Whether the token claims to live longer than ``max_lifetime_s``: ``exp - iat``, or,
    without ``iat``, ``exp - now`` (with the leeway, as a clock a little behind the issuer's
    would see it). Compared, never subtracted, so an ``exp`` of 10**400 is simply too long."""
    exp = claims["exp"]
    iat = claims.get("iat")
    if iat is None:
        return bool(exp > now + max_lifetime_s + leeway_s)
    return bool(exp > iat + max_lifetime_s)
