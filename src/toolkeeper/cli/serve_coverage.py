"""``serve``'s start-up check of what it can run against the estate
(:mod:`~toolkeeper.server.runnable`): a warning line per contract without a handler and per
handler without a contract, or, under ``--strict``, a refused start."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers
from toolkeeper.server.runnable import (
    CONTRACT_UNBOUND,
    HANDLER_UNCONTRACTED,
    AnyOf,
    CanRun,
    coverage,
)

__all__ = ["Unbound", "report_coverage"]


class Unbound(ToolkeeperError):
    """``--strict``: the estate and the handlers do not match (exit 1)."""


def report_coverage(registry: Registry, batch: Sequence[ToolSpec], handlers: ToolHandlers,
                    *, strict: bool, log: logging.Logger, also: CanRun | None = None) -> None:
    """A warning line for each callable contract (stored, or about to be published) that no
    handler here runs, and for each handler without a contract; under ``strict`` either
    refuses the start (:class:`Unbound`, before anything is published)."""
    stored = {spec.key: spec for name in registry.names() for spec in registry.versions(name)}
    for spec in batch:
        stored.setdefault(spec.key, spec)
    runs: CanRun = handlers if also is None else AnyOf(handlers, also)
    report = coverage(stored.values(), runs, handlers.bound())
    for name, version in report.unbound:
        log.warning("%s: contract %s %s has no handler here: not listed, and a call pinned "
                    "to it is refused (schema_version_unavailable)", CONTRACT_UNBOUND, name,
                    version)
    for name, bound in report.uncontracted:
        log.warning("%s: handler for %s %s has no contract: it cannot be called",
                    HANDLER_UNCONTRACTED, name, bound or "(every version)")
    if strict and not report.complete:
        raise Unbound(
            f"--strict: {len(report.unbound)} contract version(s) without a handler, "
            f"{len(report.uncontracted)} handler(s) without a contract; nothing published",
            code="serve.estate_unbound",
            data={"unbound": [f"{n} {v}" for n, v in report.unbound],
                  "uncontracted": [f"{n} {v or '*'}" for n, v in report.uncontracted]})
