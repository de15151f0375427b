"""Where a call's handler comes from: a :class:`HandlerSource` is anything that binds tool
versions to functions (:class:`~toolkeeper.server.ToolHandlers` is one; a source that forwards
calls to an upstream MCP server is another), and :class:`FirstOf` joins several.

A gateway built with extra sources (``build_gateway(..., sources=[...])``) looks a call's
binding up in its own handlers first, then in each source in order; it lists and serves a
version when any of them can run it. A gateway built without extra sources uses its handlers
as they are: the native call path does no extra work.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from toolkeeper.contracts.semver import Version
from toolkeeper.server.handlers import HandlerBinding

__all__ = ["FirstOf", "HandlerSource"]


@runtime_checkable
class HandlerSource(Protocol):
    """A set of bindings a gateway dispatches to: a :class:`~toolkeeper.server.runnable.
    CanRun` that also hands out the binding of a version."""

    def lookup(self, name: str, version: Version) -> HandlerBinding | None:
        """The binding that runs this exact version, or None."""
        ...

    def can_run(self, name: str, version: Version) -> bool:
        """Whether :meth:`lookup` finds a binding for this version."""
        ...

    @property
    def revision(self) -> int:
        """Grows whenever :meth:`lookup` or :meth:`can_run` may answer differently (routes
        and views are cached on it)."""
        ...


class FirstOf:
    """Several sources joined: the first binding found, in order; a version can run when any
    source can run it; the revision is the sum of theirs (each only grows)."""

    def __init__(self, *sources: HandlerSource) -> None:
        self._sources = sources

    @property
    def sources(self) -> tuple[HandlerSource, ...]:
        return self._sources

    def lookup(self, name: str, version: Version) -> HandlerBinding | None:
        for source in self._sources:
            binding = source.lookup(name, version)
            if binding is not None:
                return binding
        return None

    def can_run(self, name: str, version: Version) -> bool:
        return any(source.can_run(name, version) for source in self._sources)

    @property
    def revision(self) -> int:
        return sum(source.revision for source in self._sources)
