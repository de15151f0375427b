"""DNS-rebinding protection: ``Host`` and ``Origin`` allow lists (mcp-wire 4.4 row 2).

Patterns are ``host``, ``host:port`` or ``host:*`` (any port, or none) for Host, and the same
behind a scheme (``http://localhost:*``) for Origin. Matching is case-insensitive. The default
admits only loopback names, as a server bound to 127.0.0.1 should; a server behind a proxy or
on a real hostname passes its own lists. An absent ``Origin`` is allowed (non-browser clients);
an absent ``Host`` is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_ALLOWED_HOSTS", "DEFAULT_ALLOWED_ORIGINS", "OriginPolicy"]

DEFAULT_ALLOWED_HOSTS: Final = ("127.0.0.1:*", "localhost:*", "[::1]:*")
DEFAULT_ALLOWED_ORIGINS: Final = tuple(
    f"{scheme}://{host}" for scheme in ("http", "https") for host in DEFAULT_ALLOWED_HOSTS)


def _matches(value: str, pattern: str) -> bool:
    value, pattern = value.lower(), pattern.lower()
    if pattern.endswith(":*"):
        base = pattern[:-2]
        if value == base:
            return True
        head, sep, port = value.rpartition(":")
        # ASCII digits only: str.isdigit() also takes "²" and other digits no port is made of.
        return bool(sep) and head == base and port.isascii() and port.isdigit()
    return value == pattern


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """Allow lists; ``None`` disables that check (only behind a trusted proxy)."""

    allowed_hosts: Sequence[str] | None = DEFAULT_ALLOWED_HOSTS
    allowed_origins: Sequence[str] | None = DEFAULT_ALLOWED_ORIGINS

    def __post_init__(self) -> None:
        # Held as tuples: the transport memoizes answers, so the lists must not change later.
        for name in ("allowed_hosts", "allowed_origins"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))

    def host_allowed(self, host: str | None) -> bool:
        if self.allowed_hosts is None:
            return True
        return host is not None and any(_matches(host, p) for p in self.allowed_hosts)

    def origin_allowed(self, origin: str | None) -> bool:
        if self.allowed_origins is None or origin is None:
            return True
        return any(_matches(origin, p) for p in self.allowed_origins)
