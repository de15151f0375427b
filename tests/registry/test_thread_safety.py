"""The registry, the gateway's caches and the call log used from several threads.

An ASGI server with a thread pool, an embedding application or the PostgreSQL LISTEN thread may
all touch one :class:`Registry` (documented thread-safe) and one gateway at once. Two Registry
objects on one SQLite file stand in for two gateway processes. Waits are bounded; a store
wrapper (real store underneath, as in test_store.py) holds a catch-up at a chosen point so an
interleaving that a thread pool produces by chance is produced every time.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))  # gateway_kit

from gateway_kit import USER, contract, settled
from registry_kit import Backend, evolved

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec
from toolkeeper.errors import ToolkeeperError
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    encode_message,
)
from toolkeeper.registry import Registry, RegistryStore
from toolkeeper.registry.store import Snapshot
from toolkeeper.server import Gateway, ToolHandlers, build_gateway, fixed_principal
from toolkeeper.server.calllog import CallRecord, InMemoryCallLog

WIRE = "2026-07-28"
WAIT_S = 5.0
V1 = Version.parse("1.0.0")


# --- helpers ----------------------------------------------------------------------------------


def wire(method: str, params: dict[str, Any], name: str | None = None
         ) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A modern HTTP request body and its header pairs (as the ASGI app hands them over)."""
    body = encode_message({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
        **params, "_meta": {PROTOCOL_VERSION_KEY: WIRE, CLIENT_CAPABILITIES_KEY: {},
                            **params.get("_meta", {})}}})
    pairs = [(b"content-type", b"application/json"), (b"mcp-protocol-version", WIRE.encode()),
             (b"mcp-method", method.encode())]
    if name is not None:
        pairs.append((b"mcp-name", name.encode()))
    return body, pairs


def args_for(version: Version) -> dict[str, str]:
    """Arguments valid under ``evolved(name, version)`` (one required string per major)."""
    return {f"r{i}": "x" for i in range(version.major + 1)}


def call(gateway: Gateway, name: str, version: Version | None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": args_for(version or V1)}
    if version is not None:
        params["_meta"] = {"schemaVersion": str(version)}
    body, pairs = wire("tools/call", params, name)
    reply: dict[str, Any] = settled(gateway.kernel.handle_asgi(
        body, pairs, received_ns=time.perf_counter_ns()))
    return reply


def listed(gateway: Gateway) -> list[dict[str, Any]]:
    body, pairs = wire("tools/list", {})
    reply = settled(gateway.kernel.handle_asgi(body, pairs, received_ns=time.perf_counter_ns()))
    tools = reply["result"]["tools"]
    assert isinstance(tools, list)
    return tools


def version_handlers(names: Iterable[str]) -> ToolHandlers:
    handlers = ToolHandlers()
    for name in names:
        handlers.bind(name, lambda arguments, ctx: {"ran": str(ctx.version)}, inline=True)
    return handlers


def run_threads(workers: list[Callable[[], None]], *, timeout: float = 8.0) -> None:
    """Run each worker on its own thread; re-raise the first failure; bounded."""
    with ThreadPoolExecutor(max_workers=len(workers)) as pool:
        futures = [pool.submit(worker) for worker in workers]
        deadline = time.monotonic() + timeout
        for future in futures:
            future.result(timeout=max(0.1, deadline - time.monotonic()))


class HeldCatchUp:
    """A real store whose catch-up can be held once, at a chosen point, until released.

    ``at="stale"``: right after ``stale()`` has answered True (SQLite: the news of another
    connection's commit has been taken); ``at="apply"``: while the registry applies the delta
    ``changes_since`` returned (it iterates the records inside its lock)."""

    def __init__(self, inner: RegistryStore, at: str) -> None:
        self.inner = inner
        self.at = at
        self.armed = False
        self.holding = threading.Event()
        self.release = threading.Event()

    def _hold(self) -> None:
        self.armed = False
        self.holding.set()
        assert self.release.wait(WAIT_S), "the held catch-up was never released"

    def stale(self) -> bool:
        news = self.inner.stale()
        if news and self.armed and self.at == "stale":
            self._hold()
        return news

    def changes_since(self, cursor: int) -> Snapshot:
        delta = self.inner.changes_since(cursor)
        if self.armed and self.at == "apply" and delta.specs:
            return Snapshot(delta.cursor, _HeldRecords(delta.specs, self))  # type: ignore[arg-type]
        return delta

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


class _HeldRecords:
    """The delta's records, handed out only after the hold is released."""

    def __init__(self, specs: tuple[ToolSpec, ...], store: HeldCatchUp) -> None:
        self._specs = specs
        self._store = store

    def __iter__(self) -> Iterator[ToolSpec]:
        self._store._hold()
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __bool__(self) -> bool:
        return bool(self._specs)


def twins(tmp_path: Path, at: str) -> tuple[Backend, Registry, HeldCatchUp, Registry]:
    """``here`` (held catch-up) and ``there``: two registries on one SQLite file. ``calc``
    1.0.0 and 2.0.0 are published (1.0.0 pinned callers are still served)."""
    backend = Backend("sqlite", f"sqlite://{tmp_path / 'registry.db'}")
    held: list[HeldCatchUp] = []

    def wrap(store: RegistryStore) -> RegistryStore:
        held.append(HeldCatchUp(store, at))
        return held[0]

    here = backend.wrap(wrap)
    here.publish(evolved("calc", "1.0.0"))
    here.publish(evolved("calc", "2.0.0"))
    there = backend.open()
    return backend, here, held[0], there


def hold_a_catch_up(here: Registry, held: HeldCatchUp) -> threading.Thread:
    """Arm the hold and start a reader on ``here`` that learns of the news and is held."""
    held.armed = True
    reader = threading.Thread(target=here.versions, args=("calc",), daemon=True)
    reader.start()
    assert held.holding.wait(WAIT_S), "no reader took the news"
    return reader


def during_hold(held: HeldCatchUp, reader: threading.Thread | None, probe: Callable[[], Any]
                ) -> Any:
    """``probe()`` on its own thread while the catch-up is held, its answer once it gives one.

    It is given half a second to answer before the hold is released: a registry that makes
    it wait for the held catch-up (the fix) answers after the release, one that does not
    answers at once, from the index as it was."""
    answers: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            answers.append(probe())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(0.5)
    held.release.set()
    if reader is not None:  # (None: the held thread is not ours, e.g. the LISTEN thread)
        reader.join(WAIT_S)
        assert not reader.is_alive()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    if errors:
        raise errors[0]
    return answers[0]


# --- 1. a read begun after another process's commit must see it -------------------------------


def test_a_read_begun_after_another_replicas_retire_never_resolves_the_retired_version(
        tmp_path: Path) -> None:
    backend, here, held, there = twins(tmp_path, "stale")
    try:
        there.retire("calc", V1)
        reader = hold_a_catch_up(here, held)  # one thread has taken the news, not yet applied
        # This read begins after the retire committed (and after it was noticed).
        assert during_hold(held, reader, lambda: here.resolve("calc", V1)) is None
    finally:
        backend.close()


def test_a_pinned_call_arriving_after_another_replicas_retire_never_runs_it(
        tmp_path: Path) -> None:
    backend, here, held, there = twins(tmp_path, "stale")
    try:
        gateway = build_gateway(here, version_handlers(["calc"]),
                                resolve_principal=fixed_principal(USER))
        assert call(gateway, "calc", V1)["result"]["structuredContent"] == {"ran": "1.0.0"}
        there.retire("calc", V1)
        reader = hold_a_catch_up(here, held)
        reply = during_hold(held, reader, lambda: call(gateway, "calc", V1))
        assert reply.get("error", {}).get("data", {}).get("reason") == "schema_version_retired", \
            reply
    finally:
        backend.close()


def test_the_generation_read_during_a_catch_up_in_another_thread_is_the_new_one(
        tmp_path: Path) -> None:
    backend, here, held, there = twins(tmp_path, "apply")
    try:
        before = here.generation
        there.retire("calc", V1)
        reader = hold_a_catch_up(here, held)  # fetched the delta, applying it
        answer = during_hold(held, reader,
                             lambda: here.generation_since(time.perf_counter_ns()))
        assert answer > before
    finally:
        backend.close()


def test_a_pinned_call_during_another_threads_catch_up_never_runs_a_retired_version(
        tmp_path: Path) -> None:
    backend, here, held, there = twins(tmp_path, "apply")
    try:
        gateway = build_gateway(here, version_handlers(["calc"]),
                                resolve_principal=fixed_principal(USER))
        assert call(gateway, "calc", V1)["result"]["structuredContent"] == {"ran": "1.0.0"}
        there.retire("calc", V1)
        reader = hold_a_catch_up(here, held)
        reply = during_hold(held, reader, lambda: call(gateway, "calc", V1))
        assert reply.get("error", {}).get("data", {}).get("reason") == "schema_version_retired", \
            reply
    finally:
        backend.close()


@pytest.mark.postgres
def test_a_pinned_call_while_the_listen_thread_applies_a_retire_never_runs_it(
        pg_url: str) -> None:
    backend = Backend("postgres", pg_url)
    held: list[HeldCatchUp] = []

    def wrap(store: RegistryStore) -> RegistryStore:
        held.append(HeldCatchUp(store, "apply"))
        return held[0]

    try:
        here = backend.wrap(wrap)
        here.publish(evolved("calc", "1.0.0"))
        here.publish(evolved("calc", "2.0.0"))
        there = backend.open()
        gateway = build_gateway(here, version_handlers(["calc"]),
                                resolve_principal=fixed_principal(USER))
        assert call(gateway, "calc", V1)["result"]["structuredContent"] == {"ran": "1.0.0"}
        held[0].armed = True
        there.retire("calc", V1)  # NOTIFY: here's LISTEN thread fetches the delta and is held
        assert held[0].holding.wait(WAIT_S), "the LISTEN thread never applied the retire"
        reply = during_hold(held[0], None, lambda: call(gateway, "calc", V1))
        assert reply.get("error", {}).get("data", {}).get("reason") == "schema_version_retired", \
            reply
    finally:
        backend.close()


def test_reads_that_wait_for_the_registry_lock_see_a_catch_up_in_progress(
        tmp_path: Path) -> None:
    # get/versions/discover take the registry lock after the check, so a catch-up another
    # thread is applying (lock held) finishes first: these reads are not stale.
    backend, here, held, there = twins(tmp_path, "apply")
    try:
        there.retire("calc", V1)
        reader = hold_a_catch_up(here, held)
        assert during_hold(held, reader, lambda: here.resolve("calc", V1)) is None
    finally:
        backend.close()


# --- 2. threads hammering one registry and one gateway while two replicas write ----------------


def _stress(tmp_path: Path, kind: str) -> None:
    backend = Backend(kind, "memory:" if kind == "memory" else
                      f"sqlite://{tmp_path / 'registry.db'}")
    here, there = backend.open(), backend.open()
    try:
        here.publish(evolved("calc", "1.0.0"))
        there.publish(evolved("vault", "1.0.0"))
        here.publish(contract("secret", "1.0.0", {"type": "object"},
                              dataClassification="confidential"))
        there.publish(contract("other", "1.0.0", {"type": "object"}, tenants=["elsewhere"]))
        gateway = build_gateway(here, version_handlers(["calc", "vault"]),
                                resolve_principal=fixed_principal(USER))
        retired_at: dict[tuple[str, str], int] = {}  # same-registry retires: when they returned
        ran: list[tuple[str, str, int]] = []
        failures: list[str] = []
        stop = threading.Event()
        majors = 8

        progress = threading.Condition()
        answered = [0]

        def let_callers_through() -> None:
            """Bounded: wait until the callers have answered a few more calls."""
            with progress:
                target = answered[0] + 6
                progress.wait_for(lambda: answered[0] >= target or stop.is_set(), WAIT_S)

        def writer(registry: Registry, name: str) -> None:
            try:
                for k in range(2, majors + 1):
                    let_callers_through()
                    registry.publish(evolved(name, f"{k}.0.0"))
                    registry.deprecate(name, Version(k - 1, 0, 0), message="move",
                                       successor=Version(k, 0, 0))
                    if k >= 3:
                        registry.retire(name, Version(k - 2, 0, 0))
                        if registry is here:
                            retired_at[(name, f"{k - 2}.0.0")] = time.perf_counter_ns()
            except BaseException as exc:
                failures.append(f"writer {name}: {exc!r}")
                raise

        def writers() -> None:
            try:
                run_threads([lambda: writer(here, "calc"), lambda: writer(there, "vault")])
            finally:
                stop.set()

        def caller(seed: int) -> None:
            rng = random.Random(seed)
            while not stop.is_set():
                name = rng.choice(["calc", "vault"])
                version = Version(rng.randint(1, majors), 0, 0) if rng.random() < 0.7 else None
                arrived = time.perf_counter_ns()
                reply = call(gateway, name, version)
                with progress:
                    answered[0] += 1
                    progress.notify_all()
                if "error" in reply:
                    err = reply["error"]
                    reason = err.get("data", {}).get("reason")
                    if err["code"] != -32602 or (reason not in {
                            "schema_version_retired", "schema_version_unknown"}
                            and "Unknown tool" not in err["message"]):
                        failures.append(f"call {name} {version}: {reply}")
                elif not reply["result"]["isError"]:
                    ran.append((name, reply["result"]["structuredContent"]["ran"], arrived))

        def reader(seed: int) -> None:
            rng = random.Random(seed)
            while not stop.is_set():
                registry = rng.choice([here, there])
                for spec in registry.discover(USER):
                    if spec.status is not Status.ACTIVE or spec.name in {"secret", "other"}:
                        failures.append(f"discover showed {spec.name} {spec.version} "
                                        f"{spec.status}")
                latest = registry.latest("calc")
                if latest is not None and latest.status is not Status.ACTIVE:
                    failures.append(f"latest gave {latest.status}")
                for spec in registry.versions("vault"):
                    if spec.status is Status.RETIRED and registry.resolve(
                            "vault", spec.version) is not None:
                        failures.append("resolve gave a retired version")
                arrived = time.perf_counter_ns()
                for tool in listed(gateway):
                    key = (tool["name"], tool["_meta"]["schemaVersion"])
                    done = retired_at.get(key)
                    if tool["name"] in {"secret", "other"} or (done is not None and
                                                               done < arrived):
                        failures.append(f"tools/list served {key}")

        run_threads([writers, *[lambda s=s: caller(s) for s in range(3)],
                     *[lambda s=s: reader(100 + s) for s in range(2)]])
        assert failures == []
        late = [(n, v) for n, v, arrived in ran
                if (n, v) in retired_at and retired_at[(n, v)] < arrived]
        assert late == [], "calls ran versions retired (on this replica) before they arrived"
        assert ran  # the callers did get through
        # Quiescence: every replica converges on the same state, and a fresh one agrees.
        fresh = backend.open()
        for registry in (here, there):
            for name in ("calc", "vault", "secret", "other"):
                assert registry.versions(name) == fresh.versions(name)
            assert registry.discover(USER) == fresh.discover(USER)
        assert [t["_meta"]["schemaVersion"] for t in listed(gateway)] == [
            f"{majors}.0.0", f"{majors}.0.0"]
        audit = fresh.audit()
        assert [e.seq for e in audit] == list(range(1, len(audit) + 1))
        # 4 seeds + per tool (majors - 1) publishes, (majors - 1) deprecations, (majors - 2)
        # retirements: nothing lost, nothing doubled.
        assert len(audit) == 4 + 2 * (3 * majors - 4)
    finally:
        backend.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_threads_calling_listing_and_discovering_while_two_replicas_write_see_a_sane_registry(
        tmp_path: Path, kind: str) -> None:
    _stress(tmp_path, kind)


def test_threads_publishing_racing_versions_of_one_name_on_one_registry_let_exactly_one_win(
        tmp_path: Path) -> None:
    backend = Backend("sqlite", f"sqlite://{tmp_path / 'registry.db'}")
    here, there = backend.open(), backend.open()
    try:
        here.publish(evolved("calc", "1.0.0"))
        outcomes: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(6, timeout=WAIT_S)

        def publisher(registry: Registry, worker: int) -> None:
            barrier.wait()
            # Same version, different content per worker: at most one can be stored.
            spec = evolved("calc", "1.1.0", title=f"worker {worker}")
            try:
                registry.publish(spec, actor=f"w{worker}")
                result = "ok"
            except ToolkeeperError as exc:
                result = exc.code
            with lock:
                outcomes.append(result)

        run_threads([lambda w=w: publisher(here if w % 2 else there, w)  # type: ignore[misc]
                     for w in range(6)])
        assert outcomes.count("ok") == 1, outcomes
        assert sorted(outcomes) == ["ok"] + ["publish.immutable"] * 5
        assert here.versions("calc") == there.versions("calc")
        assert len(here.versions("calc")) == 2
        audit = here.audit()
        assert [e.seq for e in audit] == list(range(1, len(audit) + 1))
        assert len(audit) == 1 + 6  # one applied publish, five audited refusals
    finally:
        backend.close()


# --- 3. the call log from many threads -------------------------------------------------------


def _record(i: int) -> CallRecord:
    return CallRecord("calc", "1.0.0", f"p{i}", "sha256:00", "modern")


@pytest.mark.parametrize("bound", [100_000, 300])
def test_the_call_log_from_eight_threads_loses_nothing_keeps_handles_unique_and_its_bound(
        bound: int) -> None:
    log = InMemoryCallLog(max_records=bound)
    per_thread, threads = 1500, 8
    handles: list[list[int]] = [[] for _ in range(threads)]
    barrier = threading.Barrier(threads, timeout=WAIT_S)

    def worker(t: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            handle = log.dispatched(_record(t * per_thread + i))
            handles[t].append(handle)
            log.completed(handle, "ok", 1.0)
            if i % 200 == 0:
                assert len(log.records) <= bound

    run_threads([lambda t=t: worker(t) for t in range(threads)])  # type: ignore[misc]
    every = [h for hs in handles for h in hs]
    total = per_thread * threads
    assert sorted(every) == list(range(total))  # unique and gapless
    records = log.records
    assert len(records) == len(log) == min(total, bound)
    assert all(r.outcome == "ok" for r in records)
    kept = {int(r.principal[1:]) for r in records}
    newest = {i for t in range(threads) for i, h in zip(
        range(t * per_thread, (t + 1) * per_thread), handles[t], strict=True) if h >= total - bound}
    assert kept == newest  # exactly the newest ``bound`` dispatches survive


# --- 4. the gateway's caches around a change -------------------------------------------------


def test_a_view_or_route_cached_by_a_thread_that_read_an_old_generation_is_never_served_stale(
        tmp_path: Path) -> None:
    # Threads list and call while this thread retires and publishes; after each change
    # returns, the very next list and pinned call on any thread must reflect it.
    backend = Backend("sqlite", f"sqlite://{tmp_path / 'registry.db'}")
    here = backend.open()
    try:
        here.publish(evolved("calc", "1.0.0"))
        gateway = build_gateway(here, version_handlers(["calc"]),
                                resolve_principal=fixed_principal(USER))
        stop = threading.Event()
        failures: list[str] = []

        def churn() -> None:
            while not stop.is_set():
                listed(gateway)
                call(gateway, "calc", None)

        def changer() -> None:
            try:
                for k in range(2, 12):
                    here.publish(evolved("calc", f"{k}.0.0"))
                    here.retire("calc", Version(k - 1, 0, 0))
                    served = [t["_meta"]["schemaVersion"] for t in listed(gateway)]
                    if served != [f"{k}.0.0"]:
                        failures.append(f"after {k}: listed {served}")
                    reply = call(gateway, "calc", Version(k - 1, 0, 0))
                    if reply.get("error", {}).get("data", {}).get("reason") != \
                            "schema_version_retired":
                        failures.append(f"after {k}: pinned {k - 1} gave {reply}")
            finally:
                stop.set()

        run_threads([changer, churn, churn, churn])
        assert failures == []
    finally:
        backend.close()


# --- 5. the session table behind the HTTP app ------------------------------------------------


def test_the_asgi_app_calls_the_kernel_on_its_event_loop_thread_only() -> None:
    # SessionTable is pure, unlocked state. The ASGI app hands each POST to
    # kernel.handle_asgi directly from its coroutine (no executor), so with one event loop the
    # table is only touched from that loop's thread. (An embedding that calls handle_http from
    # a thread pool would share the table unlocked: see the report.)
    source = (Path(__file__).resolve().parents[2] / "src/toolkeeper/transports/http.py"
              ).read_text(encoding="utf-8")
    assert "self.kernel.handle_asgi(" in source
    assert "run_in_executor" not in source and "to_thread" not in source

