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
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable
from typing import Final

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.faults import invalid_params
from toolkeeper.protocol.sealing import Sealer, SealError
from toolkeeper.registry import Principal
from toolkeeper.server.views import View

__all__ = ["CURSOR_PURPOSE", "DEFAULT_CURSOR_TTL_S", "ListCursors", "cursor_refused"]

CURSOR_PURPOSE: Final = "tools/list"
DEFAULT_CURSOR_TTL_S: Final = 3600.0


def cursor_refused(reason: str) -> JsonRpcError:
    """The answer to a cursor that cannot be used: list again from the start."""
    return invalid_params("tools/list: cursor refused; list again without a cursor",
                          {"path": "$.params.cursor", "reason": reason, "relist": True})


@functools.lru_cache(maxsize=4096)  # principals are few and hashable; two hashes per page
def _principal_digest(principal: Principal) -> str:
    facts = [principal.tenant, sorted(principal.scopes), principal.clearance.value,
             principal.credential]
    return hashlib.sha256(canonical_json(facts)).hexdigest()[:32]


class ListCursors:
    """Seals and opens the cursors of one gateway's paged ``tools/list``."""

    def __init__(self, sealer: Sealer, *, ttl_s: float = DEFAULT_CURSOR_TTL_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.sealer = sealer
        self._ttl_s = ttl_s
        self._clock = clock  # wall time: a cursor may be opened on another replica

    def seal(self, view: View, principal: Principal, page: int) -> str:
        """The cursor of ``view``'s page ``page`` for ``principal``."""
        binding = {"principal": _principal_digest(principal), "generation": view.digest}
        return self.sealer.seal(CURSOR_PURPOSE, binding, page, ttl_s=self._ttl_s,
                                now=self._clock())

    def open(self, cursor: object, view: View, principal: Principal) -> int:
        """The page index ``cursor`` names in ``view``; :func:`cursor_refused` otherwise (a
        one-page view's digest is ``""``, which no cursor is sealed with: any real cursor is
        then a ``generation_mismatch``)."""
        if not isinstance(cursor, str):
            raise cursor_refused("malformed")
        binding = {"principal": _principal_digest(principal), "generation": view.digest}
        try:
            page = self.sealer.open(cursor, CURSOR_PURPOSE, binding, now=self._clock())
        except SealError as exc:
            raise cursor_refused(exc.reason) from None
        if type(page) is not int or not 0 < page < len(view.pages):
            raise cursor_refused("malformed")  # authentic: only from an incompatible release
        return page
