"""``tools/list`` cursors: which page comes next, sealed so a client can neither read nor
forge one, and good only for the list it came from.

A cursor is a :class:`~toolkeeper.protocol.sealing.Sealer` token of purpose ``tools/list``
whose payload is the next page's index, bound to

* ``principal``: a digest of the caller's tenant, scopes, clearance and credential id, so a
  cursor is useless to anyone else;
* ``generation``: the view's :attr:`~toolkeeper.server.views.View.digest` (its tools and the
  page size), so a cursor from a list that has changed since is refused rather than answered
  with a page of the new list (a silently mixed list could skip or repeat tools).

A refused cursor is ``-32602`` with ``data = {"path": "$.params.cursor", "reason": <the
sealer's reason>, "relist": true}``: ``relist`` tells the client to list again from the start
(without a cursor). Reasons: ``malformed``, ``unsealable`` (tampered, or sealed under a key
this gateway does not hold), ``purpose_mismatch``, ``generation_mismatch`` (the list
changed), ``principal_mismatch``, ``expired`` (older than ``server.list_cursor_ttl_s``).

Two bounded caches spare a walk's later pages the sealer's work, and neither widens what a
cursor opens (both belong to one :class:`ListCursors`, so to one gateway and its keys):

* **sealed**: the cursor of (list digest, principal digest, page) is handed out again for
  :func:`reuse_window_s` after it was sealed (a tenth of the TTL, at most 60 s), so every
  cursor handed out still has at least nine tenths of its TTL to live; the expiry sealed
  inside it is never extended, and a clock that went back seals afresh;
* **opened**: a cursor that opened once is remembered with its page, its expiry and the
  digests it was verified for; the same text again is accepted without decrypting it only
  when the list's digest and the principal's digest are those and the clock is before the
  expiry, which is what the sealer would check on the same authenticated plaintext. Anything
  else is opened the long way, so the refusal and its reason are the sealer's.

Each holds at most ``max_cached`` entries, the oldest dropped first.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.faults import invalid_params
from toolkeeper.protocol.sealing import Sealer, SealError
from toolkeeper.registry import Principal
from toolkeeper.server.views import View

__all__ = ["CURSOR_PURPOSE", "DEFAULT_CURSOR_TTL_S", "DEFAULT_MAX_CACHED", "ListCursors",
           "cursor_refused", "reuse_window_s"]

CURSOR_PURPOSE: Final = "tools/list"
DEFAULT_CURSOR_TTL_S: Final = 3600.0
DEFAULT_MAX_CACHED: Final = 4096
"""Entries per cursor cache (about 300 bytes each)."""
_MAX_REUSE_S: Final = 60.0


def reuse_window_s(ttl_s: float) -> float:
    """How long after sealing a next-page cursor is handed out again: a tenth of the TTL, at
    most 60 s."""
    return min(ttl_s / 10, _MAX_REUSE_S)


def cursor_refused(reason: str) -> JsonRpcError:
    """The answer to a cursor that cannot be used: list again from the start."""
    return invalid_params("tools/list: cursor refused; list again without a cursor",
                          {"path": "$.params.cursor", "reason": reason, "relist": True})


@functools.lru_cache(maxsize=4096)  # principals are few and hashable; two hashes per page
def _principal_digest(principal: Principal) -> str:
    facts = [principal.tenant, sorted(principal.scopes), principal.clearance.value,
             principal.credential]
    return hashlib.sha256(canonical_json(facts)).hexdigest()[:32]


class _Sealed(NamedTuple):
    cursor: str
    sealed_at: float


class _Opened(NamedTuple):
    page: int
    expiry: float
    generation: str
    principal: str


class ListCursors:
    """Seals and opens the cursors of one gateway's paged ``tools/list`` (with the caches of
    the module docstring)."""

    def __init__(self, sealer: Sealer, *, ttl_s: float = DEFAULT_CURSOR_TTL_S,
                 clock: Callable[[], float] = time.time,
                 max_cached: int = DEFAULT_MAX_CACHED) -> None:
        self.sealer = sealer
        self._ttl_s = ttl_s
        self._reuse_s = reuse_window_s(ttl_s)
        self._clock = clock  # wall time: a cursor may be opened on another replica
        self._max = max_cached
        self._lock = threading.Lock()  # writers only: a lookup is one dict.get
        self._sealed: dict[tuple[str, str, int], _Sealed] = {}
        self._opened: dict[str, _Opened] = {}

    def follow(self, cursor: object, view: View, principal: Principal
               ) -> tuple[int, str | None]:
        """The index of the page ``cursor`` names (``None``: the first page) and the cursor
        of the page after it (``None`` after the last): :meth:`open` then :meth:`seal`, the
        clock read and the principal digested once."""
        now = self._clock()
        digest = _principal_digest(principal)
        index = 0 if cursor is None else self._open(cursor, view, digest, now)
        if index + 1 >= len(view.pages):
            return index, None
        return index, self._seal(view, digest, index + 1, now)

    def seal(self, view: View, principal: Principal, page: int) -> str:
        """The cursor of ``view``'s page ``page`` for ``principal``."""
        return self._seal(view, _principal_digest(principal), page, self._clock())

    def open(self, cursor: object, view: View, principal: Principal) -> int:
        """The page index ``cursor`` names in ``view``; :func:`cursor_refused` otherwise (a
        one-page view's digest is ``""``, which no cursor is sealed with: any real cursor is
        then a ``generation_mismatch``)."""
        return self._open(cursor, view, _principal_digest(principal), self._clock())

    def _seal(self, view: View, principal: str, page: int, now: float) -> str:
        key = (view.digest, principal, page)
        hit = self._sealed.get(key)
        if hit is not None and hit.sealed_at <= now < hit.sealed_at + self._reuse_s:
            return hit.cursor
        binding = {"principal": principal, "generation": view.digest}
        cursor = self.sealer.seal(CURSOR_PURPOSE, binding, page, ttl_s=self._ttl_s, now=now)
        self._remember(self._sealed, key, _Sealed(cursor, now))
        return cursor

    def _open(self, cursor: object, view: View, principal: str, now: float) -> int:
        if type(cursor) is not str:
            raise cursor_refused("malformed")
        known = self._opened.get(cursor)
        if (known is not None and now < known.expiry and known.generation == view.digest
                and known.principal == principal and known.page < len(view.pages)):
            return known.page
        binding = {"principal": principal, "generation": view.digest}
        try:
            page, expiry = self.sealer.open_expiring(cursor, CURSOR_PURPOSE, binding, now=now)
        except SealError as exc:
            raise cursor_refused(exc.reason) from None
        if type(page) is not int or not 0 < page < len(view.pages):
            raise cursor_refused("malformed")  # authentic: only from an incompatible release
        self._remember(self._opened, cursor, _Opened(page, expiry, view.digest, principal))
        return page

    def cache_sizes(self) -> tuple[int, int]:
        """How many cursors the (sealed, opened) caches hold."""
        return len(self._sealed), len(self._opened)

    def _remember(self, cache: dict[Any, Any], key: Any, value: Any) -> None:
        with self._lock:
            cache.pop(key, None)  # (re)inserted last: the oldest is first in the dict
            cache[key] = value
            while len(cache) > self._max:
                del cache[next(iter(cache))]
