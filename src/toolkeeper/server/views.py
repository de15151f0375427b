"""Per-principal views of the estate for ``tools/list`` and ``tools/call``.

A view is the registry's discovery answer for one principal, plus its ``tools`` array
serialized once (canonical JSON spliced into every response as ``msgspec.Raw``) and a name
index. Views are keyed on (registry generation, tenant, scopes, clearance, and the revision of
what can run here, and the principal's rollout cohort): any registry change, local or from
another replica, a rollout's included, bumps the generation and retires every cached view.

While a tool version is rolled out (:mod:`toolkeeper.registry.routing`), a principal outside
the candidate's share does not see the candidate: its view holds what is newest visible below
it. Two principals of one entitlement share a view only when they are in the same cohort (the
set of tools whose candidate they see); with no rollout in play every cohort is empty, and
views are shared exactly as by entitlement alone.

Given what this process can run (a :class:`~toolkeeper.server.runnable.CanRun`, the bound
handlers in a gateway), a view holds only versions that can run here: where the newest visible
version of a tool cannot, the newest visible one that can is served instead, and a tool with
none is left out.

A view longer than the page size is cut into :class:`Page` s, each serialized once like a
one-page view's array (the one-page view's arrays *are* its only page's), and carries a
``digest`` of its content and page size: what a ``tools/list`` cursor is bound to, so a cursor
opens on any replica serving the same list and on none after the list changed (a per-process
generation counter could coincide on two replicas holding different lists).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import msgspec

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.registry import Principal, Registry, is_visible
from toolkeeper.registry.routing import NOTHING_HIDDEN, Cohort, Hidden, Routing
from toolkeeper.server.runnable import CanRun

__all__ = ["Page", "ToolViews", "View"]

_Key = tuple[int, str, frozenset[str], str, bool, int, Cohort]


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a view: its ``tools`` array serialized for each wire (see :class:`View`)."""

    tools_json: msgspec.Raw
    legacy_tools_json: msgspec.Raw
    unstructured_tools_json: msgspec.Raw

    @classmethod
    def build(cls, specs: tuple[ToolSpec, ...]) -> Page:
        tools = [s.to_mcp() for s in specs]
        modern = msgspec.Raw(canonical_json(tools))
        return cls(modern, _sieved(tools, modern, _object_rooted),
                   _sieved(tools, modern, _never))


@dataclass(frozen=True, slots=True)
class View:
    """One principal's estate: the served version of every visible tool."""

    specs: tuple[ToolSpec, ...]
    by_name: Mapping[str, ToolSpec]
    tools_json: msgspec.Raw
    """The first page's ``tools`` array (the whole list unless the view has several pages)."""

    legacy_tools_json: msgspec.Raw
    """The ``tools`` array for the 2025 wire, where an ``outputSchema`` is object-rooted
    (mcp-wire 7.1; the SDK refuses the whole list otherwise): one whose root is not
    ``"type": "object"`` is left out, and the tool's results keep only structured content
    that is an object there. The same bytes as ``tools_json`` when nothing is left out."""

    unstructured_tools_json: msgspec.Raw
    """The ``tools`` array for the handshake versions before structured output (2024-11-05,
    2025-03-26): no ``outputSchema`` at all, as their results carry no structured content."""

    pages: tuple[Page, ...]
    """Every page, in order (one, holding the three arrays above, unless the view is longer
    than the page size)."""

    digest: str
    """Of the pages' modern arrays and the page size (``""`` for a one-page view): identifies
    this list wherever it is served."""

    hidden: Hidden = NOTHING_HIDDEN
    """The rollout candidates this view's principals do not see (a pin to one is refused as
    one to a version that does not exist)."""

    @classmethod
    def build(cls, specs: tuple[ToolSpec, ...], page_size: int | None = None,
              hidden: Hidden = NOTHING_HIDDEN) -> View:
        size = max(1, len(specs)) if page_size is None else page_size
        if size < 1:
            raise ValueError("a page holds at least one tool")
        pages = tuple(Page.build(specs[start:start + size])
                      for start in range(0, max(1, len(specs)), size))
        first = pages[0]
        return cls(specs, MappingProxyType({s.name: s for s in specs}), first.tools_json,
                   first.legacy_tools_json, first.unstructured_tools_json, pages,
                   _digest(pages, size) if len(pages) > 1 else "", hidden)


def _digest(pages: tuple[Page, ...], size: int) -> str:
    digest = hashlib.sha256(b"%d" % size)
    for page in pages:
        raw = bytes(page.tools_json)
        digest.update(b"\n%d\n" % len(raw))
        digest.update(raw)
    return digest.hexdigest()[:32]


def _object_rooted(output: Any) -> bool:
    return isinstance(output, dict) and output.get("type") == "object"


def _never(output: Any) -> bool:
    return False


def _sieved(tools: list[dict[str, Any]], unsieved: msgspec.Raw,
            keeps: Callable[[Any], bool]) -> msgspec.Raw:
    """``tools`` without the output schemas ``keeps`` refuses (``unsieved`` if none)."""
    out = [tool if "outputSchema" not in tool or keeps(tool["outputSchema"])
           else {key: value for key, value in tool.items() if key != "outputSchema"}
           for tool in tools]
    return unsieved if out == tools else msgspec.Raw(canonical_json(out))


class ToolViews:
    """A bounded cache of views, cleared whenever the registry generation moves."""

    def __init__(self, registry: Registry, *, max_views: int = 1024,
                 page_size: int | None = None, runs: CanRun | None = None) -> None:
        self._registry = registry
        self.runs = runs
        """What can run here (None: every version is served, as the registry discovers it)."""
        self._max = max_views
        self.page_size = page_size
        """Tools per ``tools/list`` page (None: every view is one page)."""
        self._lock = threading.Lock()
        self._views: OrderedDict[_Key, View] = OrderedDict()
        self._generation = -1
        self.builds = 0
        self.routing = Routing(registry)
        """The rollouts this gateway routes by, and each principal's cohort under them."""

    def view(self, principal: Principal, *, include_deprecated: bool = False,
             since_ns: int = 0) -> View:
        """The principal's view (with deprecated versions too when asked: the gate's lookup
        for a tool the served view lacks, cached alike so a stream of calls to unknown tools
        builds it once), as of a registry check begun after ``since_ns`` (see
        :meth:`Registry.generation_since`)."""
        generation = self._registry.generation_since(since_ns)
        runs = self.runs
        cohort, hidden = self.routing.of(principal, generation)
        key = (generation, principal.tenant, principal.scopes, principal.clearance.value,
               include_deprecated, 0 if runs is None else runs.revision, cohort)
        with self._lock:
            if generation != self._generation:
                self._views.clear()
                self._generation = generation
            cached = self._views.get(key)
            if cached is not None:
                self._views.move_to_end(key)
                return cached
        specs = self._registry.discover(principal, include_deprecated=include_deprecated,
                                        hidden=hidden)
        if runs is not None:
            specs = self._runnable(specs, runs, principal, include_deprecated, hidden)
        size = None if include_deprecated else self.page_size  # (the lookup: one page)
        view = View.build(specs, size, hidden)
        with self._lock:
            if generation == self._generation:
                self._views[key] = view
                self.builds += 1
                while len(self._views) > self._max:
                    self._views.popitem(last=False)
        return view

    def can_run(self, spec: ToolSpec) -> bool:
        """Whether this process can run ``spec`` (always, without a :attr:`runs`)."""
        return self.runs is None or self.runs.can_run(spec.name, spec.version)

    def _runnable(self, specs: tuple[ToolSpec, ...], runs: CanRun, principal: Principal,
                  include_deprecated: bool, hidden: Hidden) -> tuple[ToolSpec, ...]:
        """``specs`` with each version that cannot run here replaced by the newest older one
        that is visible (and not hidden) and can, or dropped."""
        out: list[ToolSpec] = []
        for spec in specs:
            if runs.can_run(spec.name, spec.version):
                out.append(spec)
                continue
            for older in reversed(self._registry.versions(spec.name)):
                if (older.version < spec.version and runs.can_run(older.name, older.version)
                        and (older.name, older.version) not in hidden
                        and is_visible(older, principal, include_deprecated=include_deprecated)):
                    out.append(older)
                    break
        return tuple(out)
