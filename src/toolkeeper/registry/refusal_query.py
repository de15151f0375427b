"""The refusal log's values: a refused call as written (:data:`RefusalValues`), as read
(:class:`RefusalRow`) and a filter over them (:class:`RefusalQuery`). The refusal log is kept
beside the call log (the ``refusals`` table, migration 5), in the same segments
(:mod:`toolkeeper.registry.call_segments`), and read by ``toolkeeper calls --refused``.

A refusal is a call that never reached a handler: its arguments failed validation, its tool
is unknown or not the caller's, its pinned version is retired or unknown, a rate or
concurrency limit refused it, or its credential failed authentication. Every text field is as
the caller sent it, redacted and clipped (:mod:`toolkeeper.server.calllog`); a field that was
not known (no tenant before authentication, no tool before the body is read) is None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from toolkeeper.registry.call_query import at_text, row_dict

__all__ = ["RefusalQuery", "RefusalRow", "RefusalValues"]

_COLUMNS = ("at", "tenant", "credential", "tool", "version", "reason", "era", "request_id",
            "arguments_digest", "rollout_step")

RefusalValues = tuple[int, str | None, str | None, str | None, str | None, str, str | None,
                      str | None, str | None, int | None]
"""One refusal to store, in column order: ``at`` (microseconds since the epoch, UTC), tenant,
credential id, tool and version as asked, reason code, era, request id as JSON text, the
arguments digest (``sha256:`` of their redacted canonical JSON, when the call carried an
arguments object), and the step (its share in percent) of the tool's rollout when the call was
refused under one. None: not known (or no rollout)."""


class RefusalRow(msgspec.Struct, frozen=True, gc=False):
    """One refused call as read (``seq``: its number in the refusal log)."""

    at_us: int
    tenant: str | None
    credential: str | None
    tool: str | None
    version: str | None
    reason: str
    era: str | None
    request_id: str | None
    arguments_digest: str | None
    rollout_step: int | None = None
    seq: int = 0

    @property
    def at(self) -> str:
        return at_text(self.at_us)

    def to_dict(self) -> dict[str, Any]:
        return row_dict(self, _COLUMNS)

    def values(self) -> RefusalValues:
        return (self.at_us, self.tenant, self.credential, self.tool, self.version, self.reason,
                self.era, self.request_id, self.arguments_digest, self.rollout_step)

    @classmethod
    def of(cls, values: RefusalValues, seq: int = 0) -> RefusalRow:
        return cls(*values, seq=seq)


@dataclass(frozen=True, slots=True)
class RefusalQuery:
    """A filter over the refusal log (``None``: any); rows come newest first, at most
    ``limit``. ``reason`` filters as the call log's ``outcome`` does."""

    tool: str | None = None
    tenant: str | None = None
    reason: str | None = None
    since: int | None = None  # an ``at`` lower bound in microseconds (inclusive)
    limit: int = 100

    def matches(self, row: RefusalRow) -> bool:
        return ((self.tool is None or row.tool == self.tool)
                and (self.tenant is None or row.tenant == self.tenant)
                and (self.reason is None or row.reason == self.reason)
                and (self.since is None or row.at_us >= self.since))
