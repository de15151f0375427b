"""What this gateway process can run: the one seam between the registry's estate and the
versions a gateway lists and serves.

A gateway lists and serves a tool version only when something in this process can run it.
Today that is a bound handler (:class:`~toolkeeper.server.ToolHandlers` is a :class:`CanRun`);
a source that forwards calls to an upstream server is another, and :class:`AnyOf` joins
several. An active version nothing here can run is left out of ``tools/list`` (the newest
visible version that can run is served instead, if there is one), and a call pinned to it is
refused by the schema-version gate with ``schema_version_unavailable`` and ``action:
"relist"`` (:mod:`~toolkeeper.server.gate`).

:func:`coverage` compares an estate with what can run, for the start-up report of ``serve``:
contracts without a handler (``serve.contract_unbound``) and handlers without a contract
(``serve.handler_uncontracted``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec

__all__ = [
    "CONTRACT_UNBOUND",
    "HANDLER_UNCONTRACTED",
    "AnyOf",
    "CanRun",
    "Coverage",
    "coverage",
]

CONTRACT_UNBOUND = "serve.contract_unbound"
"""A callable (active or deprecated) contract version that nothing in this process can run:
not listed, and a call pinned to it is ``schema_version_unavailable``."""

HANDLER_UNCONTRACTED = "serve.handler_uncontracted"
"""A handler bound to a tool name (or name and version) that has no stored contract: it can
never be called."""


@runtime_checkable
class CanRun(Protocol):
    """Something that runs tool calls in this process."""

    def can_run(self, name: str, version: Version) -> bool:
        """Whether a call to this exact version can run here."""
        ...

    @property
    def revision(self) -> int:
        """Grows whenever the answer of :meth:`can_run` may change, so caches keyed on it stay
        exact."""
        ...


class AnyOf:
    """Several sources joined: a version can run when any of them can run it."""

    def __init__(self, *sources: CanRun) -> None:
        self._sources = sources

    def can_run(self, name: str, version: Version) -> bool:
        return any(source.can_run(name, version) for source in self._sources)

    @property
    def revision(self) -> int:
        return sum(source.revision for source in self._sources)


@dataclass(frozen=True, slots=True)
class Coverage:
    """An estate against what can run: ``unbound`` contracts, as ``(name, version)`` in order,
    and ``uncontracted`` bindings, as ``(name, version or None for every version)``."""

    unbound: tuple[tuple[str, str], ...]
    uncontracted: tuple[tuple[str, str | None], ...]

    @property
    def complete(self) -> bool:
        return not self.unbound and not self.uncontracted


def coverage(specs: Iterable[ToolSpec], runs: CanRun,
             bound: Iterable[tuple[str, Version | None]]) -> Coverage:
    """Which callable versions of ``specs`` nothing in ``runs`` can run, and which ``bound``
    bindings (name, version or None) match no stored contract. Retired versions are never
    served, so they are not reported."""
    all_specs = list(specs)
    unbound = sorted({(s.name, s.version) for s in all_specs
                      if s.status is not Status.RETIRED and not runs.can_run(s.name, s.version)})
    names = {s.name for s in all_specs}
    keys = {(s.name, s.version) for s in all_specs}
    uncontracted = sorted(
        {(name, version) for name, version in bound
         if (name not in names if version is None else (name, version) not in keys)},
        key=lambda item: (item[0], item[1] is not None, item[1] or Version(0, 0, 0)))
    return Coverage(tuple((name, str(version)) for name, version in unbound),
                    tuple((name, None if version is None else str(version))
                          for name, version in uncontracted))
