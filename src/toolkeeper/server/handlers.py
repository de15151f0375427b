"""The handler API: bind Python functions (sync or async) to tool contracts.

::

    handlers = ToolHandlers()

    @handlers.tool("payments.lookup")
    async def lookup(arguments, ctx):
        await ctx.progress(1, 2, "querying core banking")
        return f"{arguments['reference']}: HELD"

    handlers.bind("db.query", query_v4, version="4.0.0")   # per name+version

    @handlers.tool("math.add", version="1.0.0", title="Add", data_classification="public",
                   side_effect="read", required_scopes=[], tenants=[])
    def add(a: int, b: int = 0) -> int:      # typed: the contract is derived from the hints
        '''The sum of a and b.'''
        return a + b

A handler takes ``(arguments)`` or ``(arguments, ctx)`` and returns a
:class:`~toolkeeper.server.content.ToolResult`, a string, a mapping (structured content), a
list of content blocks, or None. A binding for the exact version wins over one for the name.
A plain ``def`` handler runs in a worker thread (the event loop's default executor), so one
that blocks delays no other request; ``inline=True`` on :meth:`ToolHandlers.bind` or
:meth:`ToolHandlers.tool` keeps a known-quick one on the event loop (no thread hop). A threaded
call past its call timeout is answered at the deadline, but its thread cannot be stopped: it
runs on to its end and its value is dropped. A threaded handler can use its context's
synchronous parts (``principal``, ``era``, ``notify_tools_changed``, ``require_capabilities``);
the ``async`` ones (progress, log, asking) need ``async def``.
A typed handler (:mod:`~toolkeeper.server.typed`) also carries its derived contract, which
:meth:`ToolHandlers.contracts` lists for ``contracts export`` and ``serve --handlers``.

``@handlers.prompt(name, description=..., arguments=[...])`` binds a prompt
(:mod:`~toolkeeper.server.prompts`), served by ``prompts/list`` and ``prompts/get``.

A handler asks the caller back with ``await ctx.elicit(...)``, ``await ctx.sample(...)``,
``await ctx.list_roots()`` or ``await ctx.ask_all([...])``, the same in either era: see
:mod:`toolkeeper.server.asking` for the seam and the modern era's re-run design.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import DataClassification, SideEffect, ToolSpec
from toolkeeper.server.handler_context import HandlerContext, ToolContext, capability_error
from toolkeeper.server.prompts import PromptArgument, Prompts

__all__ = [
    "HandlerBinding",
    "HandlerContext",
    "ToolContext",
    "ToolHandlers",
    "capability_error",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class HandlerBinding:
    """A function bound to a tool (``version`` None: every version of the name)."""

    name: str
    version: Version | None
    function: Callable[..., Any]
    requires: Mapping[str, Any] = field(default_factory=dict)
    takes_context: bool = True
    inline: bool = False
    """A plain (not ``async def``) function without a context, bound ``inline=True``: run
    inside dispatch itself, with no Deferred, Pending or coroutine around it (decided at bind
    time)."""
    contract: ToolSpec | None = None
    """The contract derived from a typed function's hints (None: the contract is published
    separately)."""
    threaded: bool = False
    """A plain function bound without ``inline=True``: run in a worker thread."""


def _takes_context(function: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _is_plain_function(function: Callable[..., Any]) -> bool:
    """Neither a coroutine function nor an async generator function (nor a callable object
    whose ``__call__`` is one)."""
    call = getattr(function, "__call__", None)  # noqa: B004 - the method itself is inspected
    return not any(inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f)
                   for f in (function, call) if f is not None)


_UNTYPED_HINTS = (Any, object, ToolContext, inspect.Parameter.empty, type(None))
_MAPPINGS = (dict, Mapping, MutableMapping)


def _untyped_hint(hint: Any) -> bool:
    """The untyped API's annotations: none, ``Any``, the context, a mapping (``dict[str, Any]``,
    a TypedDict) or a union of those (``ToolContext | None``)."""
    if hint in _UNTYPED_HINTS or hint in _MAPPINGS or typing.get_origin(hint) in _MAPPINGS:
        return True
    if isinstance(hint, type):
        return issubclass(hint, Mapping)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return all(_untyped_hint(arg) for arg in typing.get_args(hint))
    return False


def _looks_typed(function: Callable[..., Any]) -> bool:
    """Whether a function bound without contract metadata has a typed signature (a parameter
    annotated other than as the untyped API's are), which needs the metadata. An annotation
    that cannot be resolved counts as untyped: the API as it was."""
    try:
        hints = typing.get_type_hints(function)
        params = inspect.signature(function).parameters
    except Exception:  # any failure to resolve leaves the untyped API in charge
        return False
    return not all(_untyped_hint(hints.get(name, inspect.Parameter.empty)) for name in params)


class ToolHandlers:
    """The set of bound handlers a gateway dispatches to."""

    def __init__(self) -> None:
        self._by_name: dict[str, HandlerBinding] = {}
        self._by_version: dict[tuple[str, Version], HandlerBinding] = {}
        self._prompts = Prompts()

    def bind(self, name: str, function: Callable[..., Any], *,
             version: str | Version | None = None,
             requires: Mapping[str, Any] | None = None, inline: bool = False
             ) -> HandlerBinding:
        """Bind ``function`` to ``name`` (every version) or to one ``version`` of it.
        ``requires`` names client capabilities the call needs (checked before dispatch).
        ``inline``: a plain ``def`` runs on the event loop instead of a worker thread (for a
        known-quick one)."""
        return self._add(name, function, version, requires, None, inline)

    def _add(self, name: str, function: Callable[..., Any], version: str | Version | None,
             requires: Mapping[str, Any] | None, contract: ToolSpec | None,
             inline: bool = False) -> HandlerBinding:
        parsed = Version.parse(version) if isinstance(version, str) else version
        takes_context = _takes_context(function)
        plain = _is_plain_function(function)
        binding = HandlerBinding(name, parsed, function, dict(requires or {}), takes_context,
                                 inline and plain and not takes_context, contract,
                                 plain and not inline)
        if parsed is None:
            if name in self._by_name:
                raise ValueError(f"a handler is already bound to {name!r}")
            self._by_name[name] = binding
        else:
            if (name, parsed) in self._by_version:
                raise ValueError(f"a handler is already bound to {name!r} {parsed}")
            self._by_version[(name, parsed)] = binding
        return binding

    def tool(self, name: str, *, version: str | Version | None = None,
             requires: Mapping[str, Any] | None = None, title: str | None = None,
             description: str | None = None,
             data_classification: DataClassification | str | None = None,
             side_effect: SideEffect | str | None = None,
             required_scopes: Iterable[str] | None = None, tenants: Iterable[str] | None = None,
             closed: bool = True, inline: bool = False) -> Callable[[F], F]:
        """Decorator form of :meth:`bind`; with contract metadata, or on a function with a
        typed signature, the typed form: the contract is derived from the hints and every
        metadata keyword is required (:mod:`~toolkeeper.server.typed`; ``closed=False`` keeps
        the derived schemas open to unknown properties)."""
        metadata: dict[str, Any] = {
            "version": version, "title": title, "description": description,
            "data_classification": data_classification, "side_effect": side_effect,
            "required_scopes": required_scopes, "tenants": tenants}

        def decorate(function: F) -> F:
            given = [key for key, value in metadata.items() if key != "version"
                     and value is not None]
            if not given and closed and not _looks_typed(function):
                self.bind(name, function, version=version, requires=requires, inline=inline)
                return function
            from toolkeeper.server.typed import derive_tool  # pydantic: for typed tools only

            derived = derive_tool(function, name, closed=closed, **metadata)
            self._add(name, derived.handler, derived.spec.version, requires, derived.spec,
                      inline)
            return function
        return decorate

    def prompt(self, name: str, *, description: str,
               arguments: Iterable[PromptArgument | Mapping[str, Any] | str] = (),
               title: str | None = None) -> Callable[[F], F]:
        """Bind a function to the prompt ``name`` (:mod:`~toolkeeper.server.prompts`: served
        by ``prompts/list`` and ``prompts/get``, not governed by contracts). ``arguments``:
        :class:`~toolkeeper.server.prompts.PromptArgument` values, their wire mappings, or
        bare names of required arguments."""
        def decorate(function: F) -> F:
            self._prompts.bind(name, function, description=description, arguments=arguments,
                               title=title, takes_context=_takes_context(function))
            return function
        return decorate

    @property
    def prompts(self) -> Prompts:
        """The bound prompts."""
        return self._prompts

    def contracts(self) -> list[ToolSpec]:
        """The contracts derived from typed handlers, in (name, version) order."""
        return sorted((b.contract for b in self._by_version.values() if b.contract),
                      key=lambda spec: spec.key)

    @property
    def revision(self) -> int:
        """Grows with every binding (bindings are never removed or replaced), so a cache of
        lookups keyed on it stays exact."""
        return len(self._by_name) + len(self._by_version)

    def lookup(self, name: str, version: Version) -> HandlerBinding | None:
        """The binding for that exact version, else the one for the name, else None."""
        return self._by_version.get((name, version)) or self._by_name.get(name)

    def can_run(self, name: str, version: Version) -> bool:
        """Whether a handler is bound to that version (exactly, or to every version of the
        name): the handlers' answer to :class:`~toolkeeper.server.runnable.CanRun`."""
        return (name, version) in self._by_version or name in self._by_name

    def bound(self) -> list[tuple[str, Version | None]]:
        """Every binding's (name, version), None for a binding to every version of the name."""
        return [*((name, None) for name in self._by_name), *self._by_version]

    def merge(self, other: ToolHandlers) -> None:
        """Add every binding of ``other`` (duplicates are refused)."""
        for binding in [*other._by_name.values(), *other._by_version.values()]:
            self._add(binding.name, binding.function, binding.version, binding.requires,
                      binding.contract, not binding.threaded)
        for prompt in other._prompts:
            self._prompts.add(prompt)
