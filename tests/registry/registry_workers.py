"""Code that runs in spawned processes for the multi-process registry tests.

Kept out of test modules so a spawned child imports only this (and toolkeeper), not pytest
fixtures. Every wait is bounded; failures travel back to the parent as values.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from registry_kit import evolved

from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import PublishRefusedError, ToolkeeperError
from toolkeeper.registry import Principal, Registry

__all__ = ["RACE_NAMES", "RACE_VERSIONS", "race_spec", "race_worker", "replica_worker"]

RACE_NAMES = ("race.alpha", "race.beta")
RACE_VERSIONS = ("1.0.0", "1.0.1", "1.1.0", "1.2.0", "2.0.0", "2.0.1", "2.1.0", "3.0.0",
                 "1.3.0", "2.2.0")
#: Versions whose content differs per worker, so losers are refused as immutable.
CONTESTED = frozenset({"1.1.0", "2.0.0", "3.0.0"})


def race_spec(name: str, version: str, worker: int) -> ToolSpec:
    """What ``worker`` tries to publish as ``name`` ``version`` (deterministic)."""
    title = f"Worker {worker}" if version in CONTESTED else "Look up a payment"
    return evolved(name, version, title=title)


def race_worker(url: str, worker: int, barrier: Any, results: Any) -> None:
    """Publish every (name, version) in a worker-specific order; report each outcome."""
    outcomes: list[tuple[str, str, str]] = []
    try:
        registry = Registry.open(url)
        plan = [(n, ver) for n in RACE_NAMES for ver in RACE_VERSIONS]
        random.Random(worker).shuffle(plan)
        barrier.wait(60)
        actor = f"worker-{worker}"
        for name, version in plan:
            try:
                stored = registry.publish(race_spec(name, version, worker), actor=actor)
                outcomes.append((name, version, "won" if stored.publisher == actor else "same"))
            except PublishRefusedError as exc:
                outcomes.append((name, version, exc.code))
            except ToolkeeperError as exc:
                outcomes.append((name, version, "error:" + exc.code))
        registry.close()
        results.put((worker, outcomes, None))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put((worker, outcomes, repr(exc)))


def replica_worker(url: str, commands: Any, replies: Any) -> None:
    """A second registry process: publishes on request, and reports what it hears."""
    try:
        registry = Registry.open(url)
        heard = threading.Event()
        registry.subscribe(heard.set)
        reader = Principal.parse("acme", [], "restricted")
        replies.put(("ready", registry.generation))
        while True:
            command = commands.get(timeout=60)
            if command == "publish":
                started = time.monotonic()
                registry.publish(evolved("replica.tool", "1.0.0"), actor="replica")
                replies.put(("published", time.monotonic() - started))
            elif command == "await-change":
                heard.clear()
                replies.put(("waiting", None))
                seen = heard.wait(30.0)  # a safety bound: the notification wakes it
                names = [(s.name, str(s.version)) for s in registry.discover(reader)]
                replies.put(("heard", (seen, names)))
            elif command == "stop":
                registry.close()
                replies.put(("stopped", None))
                return
    except Exception as exc:
        replies.put(("error", repr(exc)))
