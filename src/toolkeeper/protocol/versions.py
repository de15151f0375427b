"""Protocol versions and eras: an enumerated set, never compared as strings (mcp-wire 0).

The handshake ("legacy") era negotiates a version with ``initialize``; the modern era carries
the version on every request in ``params._meta``. Ordering exists only through the tuples.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = [
    "HANDSHAKE_VERSIONS",
    "KNOWN_VERSIONS",
    "LATEST_HANDSHAKE_VERSION",
    "LATEST_MODERN_VERSION",
    "MODERN_VERSIONS",
    "RESUMABLE_VERSIONS",
    "UNSTRUCTURED_VERSIONS",
    "Era",
    "era_of",
    "negotiate_handshake",
    "supported_versions",
]


class Era(enum.Enum):
    """Which set of wire rules a message, session or connection follows."""

    LEGACY = "legacy"
    MODERN = "modern"

    # Members are singletons compared by identity: hash them by identity too (C speed) rather
    # than by Enum's Python-level hash of the name; eras key lookups on every request.
    __hash__ = object.__hash__


HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Versions negotiated by ``initialize``, oldest first."""

MODERN_VERSIONS: Final = ("2026-07-28",)
"""Versions carried per request in the ``_meta`` envelope, oldest first."""

KNOWN_VERSIONS: Final = HANDSHAKE_VERSIONS + MODERN_VERSIONS

UNSTRUCTURED_VERSIONS: Final = frozenset({"2024-11-05", "2025-03-26"})
"""Handshake versions from before structured tool output (2025-06-18 added
``structuredContent`` and ``outputSchema``): their results carry neither, nor their lists."""
RESUMABLE_VERSIONS: Final = frozenset({"2025-11-25"})
"""Handshake versions whose HTTP response streams are resumable: event ids, a priming event
and ``Last-Event-ID`` (SEP-1699; an older client cannot parse the priming event's empty data,
so the official SDK sends it from 2025-11-25 on only)."""
LATEST_HANDSHAKE_VERSION: Final = HANDSHAKE_VERSIONS[-1]
LATEST_MODERN_VERSION: Final = MODERN_VERSIONS[-1]

_ERA: Final = {**{v: Era.LEGACY for v in HANDSHAKE_VERSIONS},
               **{v: Era.MODERN for v in MODERN_VERSIONS}}


def era_of(version: object) -> Era | None:
    """The era of a known version string; None for anything else (unknown strings included)."""
    return _ERA.get(version) if isinstance(version, str) else None


def supported_versions() -> list[str]:
    """Every version served, both eras, newest first: the list ``server/discover`` advertises
    and ``-32022`` names (the specification's example lists both eras)."""
    return list(reversed(KNOWN_VERSIONS))


def negotiate_handshake(requested: object) -> str:
    """The legacy counter-offer: the requested version if it is a handshake version, else the
    latest handshake version (a modern version asked through ``initialize`` included)."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE_VERSION
