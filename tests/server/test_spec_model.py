"""Model-based (stateful) tests of the registry and the gateway's ``tools/list`` / ``tools/call``
gate against a small reference model of the SPEC (sections 2, 3.3, 3.4), and the findings it
led to, each reduced to a plain test.

The model knows contracts by *shape*: three integer properties (absent, optional or required),
a description level, tenants, required scopes and a classification. The bump between two shapes
follows the SPEC 1.4 table and its metadata rule directly, so the model predicts the guard
(SPEC 2.1), the lifecycle (2.2), discovery per principal (2.3), each ``tools/list`` (3.3) and
each ``tools/call``'s gate decision, validation errors, the version that ran and the result's
``_meta`` (3.4), in both eras, against memory and SQLite registries, with one replica or with
two replicas on one SQLite file (writes through either, calls through either). (A PostgreSQL
variant, waiting for LISTEN/NOTIFY after each write, was flaky: hypothesis saw its draws differ
between runs of one example, and it took minutes. PostgreSQL replicas are tested in
``tests/registry/test_postgres.py``.) Each finding's test failed before its fix.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from gateway_kit import settled
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import DataClassification, Status, ToolSpec, spec_from_mapping
from toolkeeper.errors import LifecycleError, NotFoundError, PublishRefusedError
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    ServerKernel,
    StreamConnection,
    encode_message,
)
from toolkeeper.protocol.methods import TransportFacts
from toolkeeper.registry import MemoryStore, Principal, Registry, open_store
from toolkeeper.server import Gateway, InMemoryCallLog, ToolHandlers, build_gateway

# --- contract shapes and their bumps (SPEC 1.4) ---------------------------------------------

PROPS = ("p0", "p1", "p2")
ABSENT, OPTIONAL, REQUIRED = 0, 1, 2
NAMES = ("alpha", "beta", "gamma")
TENANTS = ("acme", "globex")
SCOPES = ("s.admin", "s.read")
CLASSES = tuple(DataClassification)
MODERN, LEGACY = "2026-07-28", "2025-11-25"


@dataclass(frozen=True)
class Shape:
    props: tuple[int, ...] = (REQUIRED, ABSENT, ABSENT)
    doc: int = 0
    tenants: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    rank: int = 1  # index into CLASSES (internal)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "properties": {
            p: {"type": "integer"} for p, s in zip(PROPS, self.props, strict=True) if s}}
        required = [p for p, s in zip(PROPS, self.props, strict=True) if s == REQUIRED]
        if required:
            out["required"] = required
        return out


def _access_lost_gained(before: frozenset[str], after: frozenset[str]) -> tuple[bool, bool]:
    """Empty tenants = every tenant (SPEC 1.1)."""
    if before == after:
        return False, False
    if not before:
        return True, False
    if not after:
        return False, True
    return bool(before - after), bool(after - before)


def bump(before: Shape, after: Shape) -> str:
    """MAJOR / MINOR / PATCH per the SPEC 1.4 table (input schemas are contravariant) and its
    metadata rule (scope added, classification raised, tenant removed: MAJOR; reverse: MINOR)."""
    major = minor = False
    for x, y in zip(before.props, after.props, strict=True):
        major |= (x != ABSENT and y == ABSENT) or (y == REQUIRED and x != REQUIRED)
        minor |= (x == ABSENT and y == OPTIONAL) or (x == REQUIRED and y == OPTIONAL)
    major |= bool(after.scopes - before.scopes) or after.rank > before.rank
    minor |= bool(before.scopes - after.scopes) or after.rank < before.rank
    lost, gained = _access_lost_gained(before.tenants, after.tenants)
    major |= lost
    minor |= gained
    return "major" if major else "minor" if minor else "patch"


def _first(shape: Shape, state: int) -> int | None:
    return next((i for i, s in enumerate(shape.props) if s == state), None)


def _set_prop(shape: Shape, i: int | None, state: int) -> Shape:
    if i is None:
        return shape
    props = list(shape.props)
    props[i] = state
    return replace(shape, props=tuple(props))


MUTATIONS: dict[str, Callable[[Shape], Shape]] = {
    "same": lambda s: s,
    "doc": lambda s: replace(s, doc=s.doc + 1),
    "add_optional": lambda s: _set_prop(s, _first(s, ABSENT), OPTIONAL),
    "add_required": lambda s: _set_prop(s, _first(s, ABSENT), REQUIRED),
    "tighten": lambda s: _set_prop(s, _first(s, OPTIONAL), REQUIRED),
    "loosen": lambda s: _set_prop(s, _first(s, REQUIRED), OPTIONAL),
    "remove": lambda s: _set_prop(s, max((i for i, x in enumerate(s.props) if x), default=None),
                                  ABSENT),
    "scope_add": lambda s: replace(s, scopes=s.scopes | {SCOPES[len(s.scopes) % 2]}),
    "scope_drop": lambda s: replace(s, scopes=frozenset(sorted(s.scopes)[1:])),
    "raise": lambda s: replace(s, rank=min(s.rank + 1, 3)),
    "lower": lambda s: replace(s, rank=max(s.rank - 1, 0)),
    "narrow": lambda s: replace(s, tenants=frozenset({"acme"}) if len(s.tenants) != 1
                                else frozenset({"globex"})),
    "widen": lambda s: replace(s, tenants=frozenset()),
}

shapes = st.builds(
    Shape, props=st.tuples(*[st.integers(ABSENT, REQUIRED)] * len(PROPS)),
    doc=st.integers(0, 2), tenants=st.frozensets(st.sampled_from(TENANTS)),
    scopes=st.frozensets(st.sampled_from(SCOPES)), rank=st.integers(0, 3))


def spec_of(name: str, version: str, shape: Shape) -> ToolSpec:
    return spec_from_mapping({
        "name": name, "version": version, "title": name.title(),
        "description": f"{name} doc level {shape.doc}", "inputSchema": shape.schema(),
        "tenants": sorted(shape.tenants), "requiredScopes": sorted(shape.scopes),
        "dataClassification": CLASSES[shape.rank].value, "sideEffect": "read"})


@functools.cache
def digest_of(name: str, version: str, shape: Shape) -> str:
    return spec_of(name, version, shape).content_digest


def descriptor(name: str, version: str, shape: Shape) -> dict[str, Any]:
    """SPEC 1.1's descriptor, built from the model (not through ``to_mcp``)."""
    return {"name": name, "title": name.title(), "description": f"{name} doc level {shape.doc}",
            "inputSchema": shape.schema(), "_meta": {"schemaVersion": version},
            "annotations": {"readOnlyHint": True, "idempotentHint": True,
                            "destructiveHint": False}}


# --- versions (the model's own precedence: M.m.p and M.m.p-rc.N only) ------------------------

@dataclass(frozen=True, order=True)
class V:
    key: tuple[int, int, int, int, int]

    @classmethod
    def of(cls, major: int, minor: int, patch: int, rc: int | None = None) -> V:
        return cls((major, minor, patch, 0 if rc is not None else 1, rc or 0))

    @property
    def core(self) -> tuple[int, int, int]:
        return self.key[:3]

    @property
    def pre(self) -> bool:
        return self.key[3] == 0

    def __str__(self) -> str:
        text = ".".join(map(str, self.core))
        return f"{text}-rc.{self.key[4]}" if self.pre else text


def parse_v(text: str) -> V | None:
    core, _, pre = text.partition("-rc.")
    parts = core.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or (pre and not pre.isdigit()):
        return None
    major, minor, patch = map(int, parts)
    return V.of(major, minor, patch, int(pre) if pre else None)


# --- the model -------------------------------------------------------------------------------

@dataclass
class Entry:
    version: V
    shape: Shape
    status: Status = Status.ACTIVE
    message: str | None = None
    successor: V | None = None


def visible(e: Entry, p: Principal, *, deprecated: bool = False, retired: bool = False) -> bool:
    """SPEC 2.3's filter."""
    ok_status = {Status.ACTIVE} | ({Status.DEPRECATED} if deprecated else set()) | (
        {Status.DEPRECATED, Status.RETIRED} if retired else set())
    return (e.status in ok_status and (not e.shape.tenants or p.tenant in e.shape.tenants)
            and e.shape.rank <= CLASSES.index(p.clearance) and e.shape.scopes <= p.scopes)


@dataclass(frozen=True)
class Refusal:
    rule: str
    against: str | None
    bump: str | None
    passing: tuple[str, ...]  # every release in a grid that would pass (for minimumVersion)


class Model:
    def __init__(self) -> None:
        self.tools: dict[str, list[Entry]] = {}

    def history(self, name: str) -> list[Entry]:
        return sorted(self.tools.get(name, []), key=lambda e: e.version)

    def find(self, name: str, version: V | None) -> Entry | None:
        return next((e for e in self.tools.get(name, []) if e.version == version), None)

    def previous(self, name: str) -> Entry | None:
        """The guard's reference: the newest active version, else the newest of any status
        (guard.py's documented choice where SPEC 2.1 is silent)."""
        history = self.history(name)
        active = [e for e in history if e.status is Status.ACTIVE]
        pool = active or history
        return pool[-1] if pool else None

    def reference(self, name: str, candidate: V) -> Entry | None:
        prev = self.previous(name)
        if prev is None or not prev.version.pre or prev.version.core != candidate.core:
            return prev
        history = self.history(name)
        active = [e for e in history if e.status is Status.ACTIVE]
        base = [e for e in (active or history) if e.version.core != candidate.core]
        return base[-1] if base else None

    def failure(self, name: str, candidate: V, shape: Shape) -> str | None:
        prev = self.previous(name)
        assert prev is not None
        if candidate <= prev.version:
            return "publish.not_monotonic"
        ref = self.reference(name, candidate)
        if ref is None:
            return None
        kind = bump(ref.shape, shape)
        (rm, rn, _), (cm, cn, _) = ref.version.core, candidate.core
        if kind == "major":
            return None if cm == rm + 1 else "publish.bump_required"
        if kind == "minor":
            if cm > rm:
                return "publish.bump_unjustified"
            return None if cm == rm and cn > rn else "publish.bump_required"
        return None  # a PATCH-level change: any greater version (seed 000 section 4)

    def passing(self, name: str, shape: Shape) -> tuple[str, ...]:
        """Every unpublished release in a grid around the history that passes every rule, in
        precedence order (the smallest passing release is the first: see _grid)."""
        history = self.history(name)
        top = [max((e.version.core[i] for e in history), default=0) for i in range(3)]
        grid = [V.of(a, b, c) for a in range(top[0] + 3) for b in range(top[1] + 3)
                for c in range(top[2] + 3)]
        existing = {e.version for e in history}
        return tuple(str(v) for v in sorted(grid)
                     if v not in existing and self.failure(name, v, shape) is None)

    def publish(self, name: str, version: V, shape: Shape) -> Refusal | Entry | None:
        """The stored entry (new: None result means an identical re-publish) or the refusal."""
        same = self.find(name, version)
        if same is not None:
            if same.shape == shape:
                return None
            return Refusal("publish.immutable", str(same.version), bump(same.shape, shape),
                           self.passing(name, shape))
        if self.previous(name) is not None:
            rule = self.failure(name, version, shape)
            if rule is not None:
                ref = self.reference(name, version)
                return Refusal(rule, str(ref.version) if ref else None,
                               bump(ref.shape, shape) if ref else None,
                               self.passing(name, shape))
        entry = Entry(version, shape)
        self.tools.setdefault(name, []).append(entry)
        return entry

    def deprecate(self, name: str, version: V | None, message: str | None,
                  successor: V | None, successor_text: str | None) -> str | bool:
        """The refusal code, or whether anything changed (lifecycle.py's rules)."""
        entry = self.find(name, version)
        if entry is None:
            return "registry.not_found"
        if entry.status is Status.RETIRED:
            return "lifecycle.retired_is_terminal"
        if successor_text is not None:
            target = self.find(name, successor)
            if target is None:
                return "lifecycle.successor_unknown"
            if not target.version > entry.version:
                return "lifecycle.successor_not_newer"
            if target.status is Status.RETIRED:
                return "lifecycle.successor_retired"
        before = (entry.status, entry.message, entry.successor)
        entry.status = Status.DEPRECATED
        entry.message = message if message is not None else entry.message
        entry.successor = successor if successor_text is not None else entry.successor
        return before != (entry.status, entry.message, entry.successor)

    def retire(self, name: str, version: V | None) -> str | bool:
        entry = self.find(name, version)
        if entry is None:
            return "registry.not_found"
        changed = entry.status is not Status.RETIRED
        entry.status = Status.RETIRED
        return changed

    def discover(self, p: Principal, *, deprecated: bool = False) -> list[tuple[str, Entry]]:
        """SPEC 2.3: per name in sorted order, the newest visible version."""
        out = []
        for name in sorted(self.tools):
            found = next((e for e in reversed(self.history(name))
                          if visible(e, p, deprecated=deprecated)), None)
            if found is not None:
                out.append((name, found))
        return out

    def call(self, p: Principal, name: str, requested: str | None, arguments: dict[str, Any]
             ) -> dict[str, Any]:
        """SPEC 3.4: ``{"error": (code, data)}`` or ``{"ran", "meta", "errors"}``."""
        served = dict(self.discover(p)).get(name)
        current = served or dict(self.discover(p, deprecated=True)).get(name)
        if current is None or (served is None and requested is None):
            return {"error": "unknown_tool"}
        if requested is None:
            assert served is not None
            return self._run(served, arguments, strict=True, successor=None)
        version = parse_v(requested)
        if served is not None and version == served.version:
            return self._run(served, arguments, strict=False, successor=None)
        pinned = self.find(name, version)

        def refuse(reason: str) -> dict[str, Any]:
            return {"error": {"reason": reason, "tool": name, "requestedVersion": requested,
                              "currentVersion": str(current.version), "action": ACTION}}

        if pinned is None:
            return refuse("schema_version_unknown")
        if pinned.status is Status.RETIRED:
            entitled = visible(pinned, p, retired=True)
            return refuse("schema_version_retired" if entitled else "schema_version_unknown")
        if not visible(pinned, p, deprecated=True):
            return refuse("schema_version_unknown")
        # The successor its deprecation named, while this caller can still call and see it
        # (a retired one would only be refused: SPEC 3.4's "names the successor" is a version
        # to migrate to); else the version served to this caller.
        named = self.find(name, pinned.successor)
        successor = named.version if named is not None and visible(
            named, p, deprecated=True) else (served.version if served is not None else None)
        return self._run(pinned, arguments, strict=False, successor=successor)

    @staticmethod
    def _run(entry: Entry, arguments: dict[str, Any], *, strict: bool, successor: V | None
             ) -> dict[str, Any]:
        errors = []
        for prop, state in zip(PROPS, entry.shape.props, strict=True):
            if state == REQUIRED and prop not in arguments:
                errors.append((f"$.{prop}", "required"))
        for key, value in arguments.items():
            declared = key in PROPS and entry.shape.props[PROPS.index(key)] != ABSENT
            if declared and type(value) is not int:
                errors.append((f"$.{key}", "type"))
            elif not declared and strict:
                errors.append((f"$.{key}", "additionalProperties"))
        meta: dict[str, Any] = {"schemaVersion": str(entry.version)}
        if successor is not None:
            meta["successor"] = str(successor)
        if entry.message is not None:
            meta["deprecation"] = entry.message
        return {"ran": str(entry.version), "meta": meta, "errors": sorted(errors),
                "entry": entry}


#: What the gate's error data names as the action: "relist", as issue 4 defines the error data
#: (SPEC 3.4's prose calls the action "re-list").
ACTION = "relist"


# --- talking to a gateway in process ---------------------------------------------------------

class Replica:
    """One registry with its gateway: modern requests through ``handle_asgi``, legacy ones on
    one initialized stream session. The caller's principal is chosen per request."""

    def __init__(self, registry: Registry, handlers: ToolHandlers) -> None:
        self.registry = registry
        self.principal = Principal("acme", frozenset(), DataClassification.PUBLIC)
        self.gateway: Gateway = build_gateway(registry, handlers,
                                              resolve_principal=self._resolve)
        self.kernel: ServerKernel = self.gateway.kernel
        self.conn: StreamConnection = self.kernel.open_stream()
        self._ids = 0
        init = self._legacy({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "model", "version": "1"}}})
        assert "result" in init, init
        self.kernel.handle_stream_message(
            self.conn, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _resolve(self, facts: TransportFacts) -> Principal:
        return self.principal

    def _legacy(self, message: dict[str, Any]) -> dict[str, Any]:
        return settled(self.kernel.handle_stream_message(
            self.conn, message, received_ns=time.perf_counter_ns()))

    def request(self, era: str, principal: Principal, method: str, params: dict[str, Any]
                ) -> dict[str, Any]:
        self.principal = principal
        self._ids += 1
        if era == LEGACY:
            return self._legacy({"jsonrpc": "2.0", "id": self._ids, "method": method,
                                 "params": params})
        meta = {PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: {},
                **params.get("_meta", {})}
        body = encode_message({"jsonrpc": "2.0", "id": self._ids, "method": method,
                               "params": {**params, "_meta": meta}})
        pairs = [(b"content-type", b"application/json"),
                 (b"mcp-protocol-version", MODERN.encode()), (b"mcp-method", method.encode())]
        if method == "tools/call":
            pairs.append((b"mcp-name", params["name"].encode()))
        return settled(self.kernel.handle_asgi(body, pairs, received_ns=time.perf_counter_ns()))

    def calls_logged(self) -> int:
        log = self.gateway.call_log
        assert isinstance(log, InMemoryCallLog)
        return len(log)


def echo_handlers() -> ToolHandlers:
    handlers = ToolHandlers()
    for name in NAMES:
        handlers.bind(name, lambda arguments, ctx: {"ran": str(ctx.version)}, inline=True)
    return handlers


# --- the state machine -----------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    principal: Principal
    replica: int
    name: str
    requested: str | None
    arguments: dict[str, Any]


FIXED_PRINCIPALS = (
    Principal("acme", frozenset(SCOPES), DataClassification.RESTRICTED),
    Principal("globex", frozenset({"s.read"}), DataClassification.CONFIDENTIAL),
    Principal("initech", frozenset(), DataClassification.INTERNAL),
)
principals = st.one_of(st.sampled_from(FIXED_PRINCIPALS), st.builds(
    Principal, tenant=st.sampled_from(("acme", "globex", "initech")),
    scopes=st.frozensets(st.sampled_from(SCOPES)), clearance=st.sampled_from(CLASSES)))
arguments = st.dictionaries(st.sampled_from((*PROPS, "zz")),
                            st.one_of(st.integers(-3, 3), st.just("x")), max_size=4)
VERSION_MOVES = ("patch", "minor", "major", "major2", "same", "below", "existing", "rc",
                 "rc_next", "release")


class RegistryGatewayMachine(RuleBasedStateMachine):
    """The system under test is ``self.replicas``: one registry with its gateway, or two on
    one store (then a third registry, the observer, serves the invariants); the model is
    ``self.model``. ``open_replicas`` is set per variant. Writes go through either replica
    and every applied change is followed by the last call again on every replica."""

    open_replicas: Callable[[], tuple[list[Registry], Callable[[], None]]]
    propagates_by_push = False  # PostgreSQL: wait (bounded) for LISTEN/NOTIFY after a write
    spec_strict = False  # also assert what the findings below show the system does not do

    def __init__(self) -> None:
        super().__init__()
        registries, self._cleanup = type(self).open_replicas()
        handlers = echo_handlers()
        # With several registries the last one only observes (the invariants read through
        # it), so that nothing but the requests themselves makes a replica catch up.
        self.observer = registries[-1]
        self.replicas = [Replica(r, handlers) for r in registries[:-1] or registries]
        self.events: dict[int, threading.Event] = {}
        for registry in registries:
            event = self.events.setdefault(id(registry), threading.Event())
            registry.subscribe(event.set)
        self.model = Model()
        self.logged = [0] * len(self.replicas)
        self.last_call: Call | None = None

    def teardown(self) -> None:
        self._cleanup()

    # --- writes ---

    @initialize(estate=st.lists(st.builds(
        Shape, props=st.tuples(st.just(REQUIRED), st.integers(ABSENT, REQUIRED),
                               st.just(ABSENT)),
        tenants=st.sampled_from([frozenset(), frozenset({"acme"})]),
        scopes=st.sampled_from([frozenset(), frozenset({"s.read"})]), rank=st.integers(0, 2)),
        min_size=len(NAMES), max_size=len(NAMES)),
        steps=st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from([*MUTATIONS]),
                                 st.sampled_from(("deprecate", "retire", "none")),
                                 st.integers(0, 9)), min_size=4, max_size=8))
    def seed_estate(self, estate: list[Shape],
                    steps: list[tuple[str, str, str, int]]) -> None:
        """Every name published at 1.0.0, then evolved, deprecated and retired a little, so
        that even short runs call into histories with several versions in every status."""
        for name, shape in zip(NAMES, estate, strict=True):
            self._publish(name, V.of(1, 0, 0), shape, 0)
        for name, mutation, action, pick in steps:
            self.evolve(name, mutation, pick)
            if action == "deprecate":
                self.deprecate(name, pick, "newest", "moving on", pick)
            elif action == "retire":
                self.retire(name, pick, pick)

    def _after_change(self, writer: int) -> None:
        """After a change: (PostgreSQL) wait, bounded, until every other registry heard of
        it; then the last call again, on every replica: it arrives after the change, so it
        must be judged against it (cached views and routes included)."""
        if self.propagates_by_push:
            source = id(self.replicas[writer].registry)
            for key, event in self.events.items():
                if key != source:
                    assert event.wait(10), "the change never reached another registry"
        if self.last_call is not None:
            self.tools_call_again()

    def _arm(self) -> None:
        for event in self.events.values():
            event.clear()

    @rule(request=st.tuples(st.sampled_from(NAMES), st.sampled_from(VERSION_MOVES),
                            st.sampled_from([*MUTATIONS, "random"]), st.integers(0, 9),
                            shapes, st.integers(0, 1)))
    def publish(self, request: tuple[str, str, str, int, Shape, int]) -> None:
        """A publish of any version (right or wrong bump, taken, lower) and any content."""
        name, move, mutation, pick, drawn, writer = request
        writer %= len(self.replicas)
        history = self.model.history(name)
        prev = self.model.previous(name)
        base = prev.shape if prev is not None else Shape()
        if prev is None:
            version = [V.of(1, 0, 0), V.of(0, 1, 0), V.of(2, 0, 0, 1)][pick % 3]
        else:
            major, minor, patch = prev.version.core
            rc = prev.version.key[4] if prev.version.pre else 0
            chosen = history[pick % len(history)]
            version = {
                "patch": V.of(major, minor, patch + 1), "minor": V.of(major, minor + 1, 0),
                "major": V.of(major + 1, 0, 0), "major2": V.of(major + 2, 0, 0),
                "same": prev.version, "below": V.of(max(major - 1, 0), minor, patch),
                "existing": chosen.version, "rc": V.of(major + 1, 0, 0, 1),
                "rc_next": V.of(major, minor, patch, rc + 1) if rc else V.of(major, minor + 1,
                                                                             0, 1),
                "release": V.of(major, minor, patch),
            }[move]
            if move == "existing":
                base = chosen.shape
        shape = drawn if mutation == "random" else MUTATIONS[mutation](base)
        self._publish(name, version, shape, writer)

    @rule(name=st.sampled_from(NAMES), mutation=st.sampled_from([*MUTATIONS]),
          writer=st.integers(0, 1))
    def evolve(self, name: str, mutation: str, writer: int) -> None:
        """A publish that carries the bump its change needs (so histories grow)."""
        prev = self.model.previous(name)
        if prev is None:
            return
        shape = MUTATIONS[mutation](prev.shape)
        major, minor, patch = prev.version.core
        version = {"major": V.of(major + 1, 0, 0), "minor": V.of(major, minor + 1, 0),
                   "patch": V.of(major, minor, patch + 1)}[bump(prev.shape, shape)]
        self._publish(name, version, shape, writer % len(self.replicas))

    def _publish(self, name: str, version: V, shape: Shape, writer: int) -> None:
        expected = self.model.publish(name, version, shape)
        self._arm()
        try:
            stored = self.replicas[writer].registry.publish(spec_of(name, str(version), shape))
        except PublishRefusedError as exc:
            assert isinstance(expected, Refusal), (exc.code, exc.data)
            got = (exc.code, exc.data["against"], exc.data["bump"])
            assert got == (expected.rule, expected.against, expected.bump), exc.data
            minimum = exc.data["minimumVersion"]
            # SPEC 2.1 asks for *the smallest* version that would pass; the machine checks
            # only that a named one passes (see the minimumVersion findings below).
            assert minimum is None or minimum in expected.passing, (minimum, expected)
            if self.spec_strict:
                assert minimum == (expected.passing[0] if expected.passing else None), \
                    (minimum, expected.passing[:3])
            return
        assert not isinstance(expected, Refusal), (expected, str(version))
        entry = expected or self.model.find(name, version)
        assert entry is not None
        assert (str(stored.version), stored.status) == (str(entry.version), entry.status)
        assert stored.content_digest == digest_of(name, str(version), shape)
        if expected is not None:
            self._after_change(writer)

    @rule(name=st.sampled_from(NAMES), pick=st.integers(0, 9),
          succ=st.sampled_from(("none", "newest", "any", "never")),
          message=st.sampled_from([None, "m1", "m2"]), writer=st.integers(0, 1))
    def deprecate(self, name: str, pick: int, succ: str, message: str | None,
                  writer: int) -> None:
        writer %= len(self.replicas)
        history = self.model.history(name)
        version = history[pick % len(history)].version if history else V.of(9, 9, 9)
        successor = {"none": None, "never": V.of(9, 9, 9),
                     "newest": history[-1].version if history else None,
                     "any": history[(pick * 7 + 3) % len(history)].version if history else None,
                     }[succ]
        expected = self.model.deprecate(name, version, message, successor,
                                        None if successor is None else str(successor))
        self._arm()
        try:
            self.replicas[writer].registry.deprecate(
                name, Version.parse(str(version)), message=message,
                successor=None if successor is None else Version.parse(str(successor)))
        except (LifecycleError, NotFoundError) as exc:
            assert exc.code == expected, (exc.code, expected)
            return
        assert isinstance(expected, bool), expected
        if expected:
            self._after_change(writer)

    @rule(name=st.sampled_from(NAMES), pick=st.integers(0, 9), writer=st.integers(0, 1))
    def retire(self, name: str, pick: int, writer: int) -> None:
        writer %= len(self.replicas)
        history = self.model.history(name)
        version = history[pick % len(history)].version if history else V.of(9, 9, 9)
        expected = self.model.retire(name, version)
        self._arm()
        try:
            self.replicas[writer].registry.retire(name, Version.parse(str(version)))
        except NotFoundError as exc:
            assert exc.code == expected
            return
        assert isinstance(expected, bool), expected
        if expected:
            self._after_change(writer)

    # --- reads ---

    @rule(p=principals, deprecated=st.booleans(), reader=st.integers(0, 1))
    def discover(self, p: Principal, deprecated: bool, reader: int) -> None:
        registry = self.replicas[reader % len(self.replicas)].registry
        got = [(s.name, str(s.version)) for s in registry.discover(p,
                                                                   include_deprecated=deprecated)]
        assert got == [(n, str(e.version)) for n, e in self.model.discover(
            p, deprecated=deprecated)]

    @rule(request=st.tuples(principals, st.integers(0, 1)))
    def tools_list(self, request: tuple[Principal, int]) -> None:
        """SPEC 3.3: the principal's discovery view through to_mcp, in both eras."""
        p, reader = request
        replica = self.replicas[reader % len(self.replicas)]
        expected = [descriptor(n, str(e.version), e.shape) for n, e in self.model.discover(p)]
        modern = replica.request(MODERN, p, "tools/list", {})["result"]
        assert (modern["tools"], modern["cacheScope"]) == (expected, "private")
        assert replica.request(LEGACY, p, "tools/list", {})["result"] == {"tools": expected}

    # One composite argument: hypothesis tries rules with fewer arguments first, and calls
    # are what the machine is for.
    @rule(request=st.tuples(principals, st.integers(0, 1), st.sampled_from((*NAMES, "omega")),
                            arguments))
    def tools_call(self, request: tuple[Principal, int, str, dict[str, Any]]) -> None:
        """SPEC 3.4 in both eras, for one caller and tool: unpinned, pinned to the served
        version, to every published version, to one never published and to junk, each with
        the drawn arguments and with arguments valid for the version that would run."""
        p, reader, name, drawn = request
        served = dict(self.model.discover(p)).get(name)
        pins = [None, "9.9.9", "v1", *(str(e.version) for e in self.model.history(name))]
        if served is not None:
            pins.append(str(served.version))
        for requested in pins:
            expected = self.model.call(p, name, requested, drawn)
            self._call(Call(p, reader % len(self.replicas), name, requested, drawn))
            if "entry" in expected:  # arguments valid for the version that will run
                shape = expected["entry"].shape
                valid = {k: v for k, v in drawn.items() if type(v) is int and k in PROPS
                         and shape.props[PROPS.index(k)]}
                valid.update({k: 7 for k, s in zip(PROPS, shape.props, strict=True)
                              if s == REQUIRED})
                self._call(Call(p, reader % len(self.replicas), name, requested, valid))

    @precondition(lambda self: self.last_call is not None)
    @rule()
    def tools_call_again(self) -> None:
        """The previous call once more, on every replica, whatever changed since: cached
        views and routes must not answer for a registry that has moved on."""
        assert self.last_call is not None
        for at in range(len(self.replicas)):
            self._call(replace(self.last_call, replica=at))

    def _call(self, call: Call) -> None:
        self.last_call = call
        expected = self.model.call(call.principal, call.name, call.requested, call.arguments)
        params: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
        if call.requested is not None:
            params["_meta"] = {"schemaVersion": call.requested}
        for era in (MODERN, LEGACY):
            answer = self.replicas[call.replica].request(era, call.principal, "tools/call",
                                                         params)
            self._check_call(answer, expected, call.principal, call.name, call.replica)

    def _check_call(self, answer: dict[str, Any], expected: dict[str, Any], p: Principal,
                    name: str, index: int) -> None:
        if "error" in expected:
            error = answer.get("error")
            assert error is not None, (answer, expected)
            assert error["code"] == -32602
            if expected["error"] == "unknown_tool":  # one shape for unknown and invisible
                shape = {"message": error["message"].replace(name, "NAME"),
                         "data": error.get("data")}
                assert shape == {"message": "Unknown tool: NAME", "data": None}
            else:
                assert error["data"] == expected["error"]
            return
        result = answer.get("result")
        assert result is not None, (answer, expected)
        got_meta = {k: v for k, v in result["_meta"].items()
                    if k in ("schemaVersion", "successor", "deprecation")}
        if self.spec_strict and "successor" in got_meta:
            named = self.model.find(name, parse_v(got_meta["successor"]))
            assert named is not None and visible(named, p, deprecated=True), (got_meta, named)
        assert got_meta == expected["meta"]
        if expected["errors"]:
            assert result["isError"] is True
            errors = result["structuredContent"]["errors"]
            assert [(e["path"], e["keyword"]) for e in errors] == expected["errors"]
        else:
            assert result["isError"] is False
            assert result["structuredContent"] == {"ran": expected["ran"]}
            self.logged[index] += 1
        assert self.replicas[index].calls_logged() == self.logged[index]

    # --- invariants (SPEC 2.2, invariants 6 and 7) ---

    @invariant()
    def the_store_holds_every_version_as_published(self) -> None:
        """Invariants 6 and 7 and SPEC 2.2, read through the observer."""
        registry = self.observer
        for name in NAMES:
            history = self.model.history(name)
            stored = registry.versions(name)
            assert [(str(s.version), s.status) for s in stored] == \
                [(str(e.version), e.status) for e in history]
            for spec, entry in zip(stored, history, strict=True):
                assert spec.content_digest == digest_of(name, str(entry.version),
                                                        entry.shape)
                assert (spec.deprecation_message, spec.successor and str(spec.successor)) \
                    == (entry.message, entry.successor and str(entry.successor))
                resolved = registry.resolve(name, spec.version)
                assert (resolved is None) == (entry.status is Status.RETIRED)
            live = [e for e in history if e.status is Status.ACTIVE]
            latest = registry.latest(name)
            assert (str(latest.version) if latest else None) == \
                (str(live[-1].version) if live else None)


# --- variants --------------------------------------------------------------------------------

def _memory(twins: bool) -> tuple[list[Registry], Callable[[], None]]:
    store = MemoryStore()
    registries = [Registry(store) for _ in range(3 if twins else 1)]  # 2 + observer

    def cleanup() -> None:
        for registry in registries:
            registry.close()
    return registries, cleanup


def _sqlite(twins: bool) -> tuple[list[Registry], Callable[[], None]]:
    folder = Path(tempfile.mkdtemp(prefix="tk-model-"))
    url = f"sqlite:///{folder / 'registry.db'}"
    registries = [Registry(open_store(url)) for _ in range(3 if twins else 1)]

    def cleanup() -> None:
        for registry in registries:
            registry.close()
        shutil.rmtree(folder, ignore_errors=True)
    return registries, cleanup


SETTINGS = settings(max_examples=50, stateful_step_count=30, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow], database=None)


@pytest.mark.parametrize(("kind", "twins"), [("memory", False), ("sqlite", False),
                                             ("sqlite", True)])
def test_the_registry_and_the_gateway_gate_follow_the_spec_model(kind: str, twins: bool
                                                                 ) -> None:
    opener = _memory if kind == "memory" else _sqlite

    class Machine(RegistryGatewayMachine):
        @staticmethod
        def open_replicas() -> tuple[list[Registry], Callable[[], None]]:
            return opener(twins)

    run_state_machine_as_test(Machine, settings=SETTINGS)




def test_with_the_findings_asserted_the_spec_model_still_holds() -> None:
    class Machine(RegistryGatewayMachine):
        spec_strict = True

        @staticmethod
        def open_replicas() -> tuple[list[Registry], Callable[[], None]]:
            return _memory(False)

    run_state_machine_as_test(Machine, settings=settings(
        SETTINGS, phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False))

# --- findings: minimal reproductions ----------------------------------------------------------

NOBODY_SPECIAL = Principal("acme", frozenset(), DataClassification.RESTRICTED)
REQUIRES_P0 = Shape((REQUIRED, ABSENT, ABSENT))


def _gateway(*steps: tuple[str, Shape]) -> tuple[Registry, Replica]:
    registry = Registry.open("memory:")
    for version, shape in steps:
        registry.publish(spec_of("alpha", version, shape))
    return registry, Replica(registry, echo_handlers())


def _pinned(replica: Replica, version: str, principal: Principal = NOBODY_SPECIAL
            ) -> dict[str, Any]:
    return replica.request(MODERN, principal, "tools/call", {
        "name": "alpha", "arguments": {"p0": 1}, "_meta": {"schemaVersion": version}})


def test_a_deprecated_pin_never_names_a_successor_the_caller_may_not_see() -> None:
    registry, replica = _gateway(("1.0.0", REQUIRES_P0),
                                 ("2.0.0", replace(REQUIRES_P0, scopes=frozenset({"s.admin"}))))
    registry.deprecate("alpha", Version.parse("1.0.0"), successor=Version.parse("2.0.0"))
    result = _pinned(replica, "1.0.0")["result"]
    assert (result["isError"], result["_meta"]["schemaVersion"]) == (False, "1.0.0")
    assert _pinned(replica, "2.0.0")["error"]["data"]["reason"] == "schema_version_unknown"
    assert "successor" not in result["_meta"]


def test_a_deprecated_pin_names_a_successor_the_caller_can_still_call() -> None:
    registry, replica = _gateway(("1.0.0", REQUIRES_P0),
                                 ("2.0.0", Shape((REQUIRED, REQUIRED, ABSENT))),
                                 ("3.0.0", Shape((REQUIRED, REQUIRED, REQUIRED))))
    registry.deprecate("alpha", Version.parse("1.0.0"), successor=Version.parse("2.0.0"))
    registry.retire("alpha", Version.parse("2.0.0"))
    meta = _pinned(replica, "1.0.0")["result"]["_meta"]
    successor = meta.get("successor")
    assert successor is not None
    answer = _pinned(replica, successor)
    assert "error" not in answer, answer["error"]["data"]


def test_a_refusal_names_a_passing_version_when_the_next_minor_is_taken() -> None:
    registry = Registry.open("memory:")
    registry.publish(spec_of("alpha", "1.0.0", REQUIRES_P0))
    registry.publish(spec_of("alpha", "1.1.0", Shape((REQUIRED, OPTIONAL, ABSENT))))
    registry.deprecate("alpha", Version.parse("1.1.0"))
    minor_change = Shape((REQUIRED, ABSENT, OPTIONAL))  # an optional property, against 1.0.0
    with pytest.raises(PublishRefusedError) as refused:
        registry.publish(spec_of("alpha", "1.0.1", minor_change))
    assert (refused.value.code, refused.value.data["against"]) == \
        ("publish.bump_required", "1.0.0")
    # 1.1.1 is the smallest that passes: above the latest active 1.0.0, not taken, and a
    # minor above the version it is compared with (the deprecated 1.1.0 is not compared).
    assert refused.value.data["minimumVersion"] == "1.1.1"
    assert registry.publish(spec_of("alpha", "1.1.1", minor_change)).status is Status.ACTIVE


def test_a_refusal_names_the_smallest_passing_version_not_the_next_minor() -> None:
    registry = Registry.open("memory:")
    registry.publish(spec_of("alpha", "1.0.0", REQUIRES_P0))
    registry.publish(spec_of("alpha", "1.0.1", replace(REQUIRES_P0, doc=1)))
    registry.deprecate("alpha", Version.parse("1.0.1"))
    docs_only = replace(REQUIRES_P0, doc=2)
    with pytest.raises(PublishRefusedError) as refused:
        registry.publish(spec_of("alpha", "0.9.0", docs_only))
    assert refused.value.code == "publish.not_monotonic"
    assert registry.publish(spec_of("alpha", "1.0.2", docs_only)).status is Status.ACTIVE
    assert refused.value.data["minimumVersion"] == "1.0.2"


ADMIN = Principal("acme", frozenset({"s.admin", "s.read"}), DataClassification.RESTRICTED)


def test_a_deprecated_pin_whose_named_successor_retired_names_the_served_version() -> None:
    registry, replica = _gateway(*((f"1.0.{patch}", REQUIRES_P0) for patch in range(5)))
    registry.deprecate("alpha", Version.parse("1.0.0"), successor=Version.parse("1.0.3"))
    registry.retire("alpha", Version.parse("1.0.3"))
    meta = _pinned(replica, "1.0.0", ADMIN)["result"]["_meta"]
    assert (meta["schemaVersion"], meta["successor"]) == ("1.0.0", "1.0.4")
    assert _pinned(replica, "1.0.3", ADMIN)["error"]["data"]["reason"] == \
        "schema_version_retired"


def test_the_machine_replays_a_retired_successor_after_three_redeprecations() -> None:
    """The state machine's sequence as found: 1.0.0 deprecated three times (its successor
    moving to the newest patch each time), then that successor 1.0.3 retired under 1.0.4."""
    class Machine(RegistryGatewayMachine):
        @staticmethod
        def open_replicas() -> tuple[list[Registry], Callable[[], None]]:
            return _memory(False)

    machine = Machine()
    try:
        machine.seed_estate(estate=[Shape(props=(REQUIRED, ABSENT, ABSENT))] * len(NAMES),
                            steps=[("alpha", "same", "deprecate", 0)] * 3
                            + [("alpha", "same", "retire", 3)])
        machine.the_store_holds_every_version_as_published()
        assert machine.model.find("alpha", V.of(1, 0, 0)).successor == V.of(1, 0, 3)
        assert machine.model.find("alpha", V.of(1, 0, 3)).status is Status.RETIRED
        machine.tools_call(request=(ADMIN, 0, "alpha", {}))
        assert machine.model.call(ADMIN, "alpha", "1.0.0", {})["meta"]["successor"] == "1.0.4"
    finally:
        machine.teardown()
