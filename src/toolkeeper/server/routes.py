"""Resolved ``tools/call`` routes: the contract a call runs under (the schema-version gate's
plan), its compiled input and output validators, its handler binding and the result's
``_meta``, resolved once per (registry generation, handler set, entitlement, rollout cohort,
tool, requested version) and reused until the registry or the handler set changes (a rollout
change moves the registry generation). The cohort (:mod:`toolkeeper.registry.routing`) keeps
two principals of one entitlement routed to different versions of a tool apart; with no
rollout in play it is empty for everyone.

Only successful resolutions are kept, and only for calls that name no version or spell it
as the contract does; a gate refusal is decided afresh on every call. The key
carries the generation, so a route resolved before a registry change can never answer after
it (SPEC 3.4: the gate always judges against the current registry).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from toolkeeper.contracts.headers import iter_x_mcp_headers
from toolkeeper.contracts.spec import DataClassification, ToolSpec
from toolkeeper.contracts.validate import CompiledSchema, compile_schema
from toolkeeper.registry import Principal, Registry
from toolkeeper.registry.routing import Cohort
from toolkeeper.server.closed_schemas import closed_schema
from toolkeeper.server.gate import Plan, plan_call
from toolkeeper.server.handlers import HandlerBinding
from toolkeeper.server.sources import HandlerSource
from toolkeeper.server.views import ToolViews

__all__ = ["Route", "Routes", "closed_schema"]


@dataclass(frozen=True, slots=True)
class Route:
    """Everything a call needs once the gate has accepted it. ``meta`` is read-only: copy it
    into each result."""

    plan: Plan
    validator: CompiledSchema
    output_validator: CompiledSchema | None
    binding: HandlerBinding | None
    version: str
    meta: MappingProxyType[str, Any]
    annotated: bool
    """The input schema has ``x-mcp-header`` arguments (checked against ``Mcp-Param-*``)."""
    rollout_step: int | None = None
    """The share (percent) of the step of the tool's rollout when the call was routed under
    one (None: no rollout routes the tool): what the call log records."""


_Key = tuple[int, int, tuple[str, frozenset[str], DataClassification], Cohort, str,
             str | None]
"""Keyed by entitlement and rollout cohort, not by principal: two credentials with the same
tenant, scopes and clearance, routed alike, share their routes (the credential decides session
ownership and, while a rollout runs, the cohort, never a route by itself)."""
_Recent = tuple[int, int, Principal, dict[tuple[str, str | None], Route]]


class Routes:
    """A bounded cache of routes, emptied whenever the registry generation moves.

    The routes of the most recent (generation, handler set, principal) are also kept by tool
    and version alone, found by the principal's identity: a resolver that returns the same
    principal object per request (the local principal and a cached credential do) skips
    hashing it."""

    def __init__(self, registry: Registry, views: ToolViews, handlers: HandlerSource, *,
                 max_routes: int = 4096) -> None:
        self._registry = registry
        self._views = views
        self._handlers = handlers
        self._max = max_routes
        self._lock = threading.Lock()
        self._routes: dict[_Key, Route] = {}
        self._generation = -1
        self._recent: _Recent | None = None
        self._compiled: dict[tuple[str, str, str], CompiledSchema] = {}

    def resolve(self, principal: Principal, name: str, requested: str | None,
                since_ns: int = 0) -> Route:
        """The route for a call, or the gate's JsonRpcError, judged against the registry as
        of a check begun after ``since_ns`` (see :meth:`Registry.generation_since`)."""
        generation = self._registry.generation_since(since_ns)
        revision = self._handlers.revision
        recent = self._recent
        if (recent is not None and recent[2] is principal and recent[0] == generation
                and recent[1] == revision):
            route = recent[3].get((name, requested))
            if route is not None:
                return route
        else:
            recent = (generation, revision, principal, {})
            self._recent = recent
        key = (generation, revision, principal.entitlement,
               self._views.routing.of(principal, generation)[0], name, requested)
        route = self._routes.get(key)
        if route is None:
            route = self._build(plan_call(self._registry, self._views, principal, name,
                                          requested))
            if requested is not None and requested != route.version:
                # Another spelling of the version (build metadata, which semver ignores): a
                # caller could spell it in endless ways, so it is not kept.
                return route
            with self._lock:
                if generation != self._generation or len(self._routes) >= self._max:
                    self._routes = {}
                    self._generation = generation
                self._routes[key] = route
        if len(recent[3]) < self._max:
            recent[3][(name, requested)] = route
        return route

    def step(self, name: object) -> int | None:
        """The step (its share) of ``name``'s rollout as last read (None: no rollout, or a
        name that is not a string)."""
        return self._views.routing.step(name) if type(name) is str else None

    def _build(self, plan: Plan) -> Route:
        spec = plan.spec
        version = str(spec.version)
        meta: dict[str, Any] = {"schemaVersion": version}
        if plan.successor is not None:
            meta["successor"] = str(plan.successor)
        if spec.deprecation_message is not None:
            meta["deprecation"] = spec.deprecation_message
        output = (None if spec.output_schema is None
                  else self._compile(spec, spec.output_schema, "output"))
        return Route(plan, self._input_validator(spec, plan.strict), output,
                     self._handlers.lookup(spec.name, spec.version), version,
                     MappingProxyType(meta), bool(iter_x_mcp_headers(spec.input_schema)),
                     self._views.routing.step(spec.name))

    def _input_validator(self, spec: ToolSpec, strict: bool) -> CompiledSchema:
        schema = closed_schema(spec.input_schema) if strict else spec.input_schema
        return self._compile(spec, schema, "strict" if strict else "input")

    def _compile(self, spec: ToolSpec, schema: dict[str, Any], role: str) -> CompiledSchema:
        key = (spec.name, str(spec.version), role)
        with self._lock:
            compiled = self._compiled.get(key)
        if compiled is None:
            compiled = compile_schema(schema, assert_formats=spec.assert_formats)
            with self._lock:
                if len(self._compiled) > self._max:
                    self._compiled.clear()
                self._compiled[key] = compiled
        return compiled
