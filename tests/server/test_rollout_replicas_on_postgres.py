"""Acceptance 5 of issue 24: two ``toolkeeper serve`` replicas (real processes) on one
PostgreSQL registry, with API-key principals issued into its store, route each principal to
the same version on every unpinned call to either replica, the share the rollout's keyed hash
gives; when the step's interval is up both replicas find it due, and one evaluates: exactly one
decision is stored for the step, logged by exactly one replica, and the rollout records that
replica as the one that moved it (the evaluation lock: one replica at a time)."""

from __future__ import annotations

import socket
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from rollout_serve_kit import (
    DECIDED,
    call,
    gateway_config,
    in_share,
    prepared,
    served,
    start_rollout,
)

from process_kit import GatewayLog, serving_gateway_logged
from toolkeeper.registry import Registry
from toolkeeper.registry.rollout_book import rollout_book

pytestmark = pytest.mark.postgres

PRINCIPALS = 40
ROUNDS = 2
"""Calls each principal sends to each replica."""
LOOKS = 120
"""Half-second waits on the replicas' logs at most, for the decision."""


def _decided(logs: list[GatewayLog]) -> int:
    """The replica that logs the step's decision (bounded: ``LOOKS`` short waits)."""
    for _ in range(LOOKS):
        for index, log in enumerate(logs):
            try:
                log.wait(DECIDED, timeout=0.25)
            except AssertionError:
                continue
            return index
    raise AssertionError("no replica logged a decision")


def test_two_replicas_route_alike_and_one_evaluates_each_step(
        tmp_path: Path, pg_url: str) -> None:
    tokens = prepared(pg_url, PRINCIPALS)
    started = start_rollout(pg_url, steps=(50, 100), interval_s=3600, max_holds=6)
    configs = [gateway_config(tmp_path, pg_url, failing=False, name=name)
               for name in ("a", "b")]
    with ExitStack() as stack:
        replicas = [stack.enter_context(serving_gateway_logged(["--config", str(config)]))
                    for config in configs]
        urls, logs = [url for url, _ in replicas], [log for _, log in replicas]
        http = stack.enter_context(httpx.Client(timeout=30))
        seen: dict[str, set[str]] = {}
        for n in range(ROUNDS):
            for i, key_id in enumerate(sorted(tokens)):
                for r, url in enumerate(urls):
                    a = (n * PRINCIPALS + i) * 2 + r
                    version = served(call(http, url, tokens[key_id], a))
                    seen.setdefault(key_id, set()).add(version)
        assert {key_id: len(versions) for key_id, versions in seen.items()} == {
            key_id: 1 for key_id in tokens}  # one version per principal, on both replicas
        assert {k for k, versions in seen.items() if versions == {"2.0.0"}} == in_share(
            tokens, 50)

        with Registry.open(pg_url) as registry:  # the interval up, on a third session
            rollout_book(registry).update(replace(started, interval_s=1),
                                          expected_seq=started.seq)
        winner = _decided(logs)
        line = next(entry for entry in logs[winner].lines if DECIDED in entry)
        assert line.endswith("toolkeeper release: pay step 1 (50%): promote -> promoted")
        for url in urls:  # both replicas serve the version now in force
            assert {served(call(http, url, token, 7)) for token in tokens.values()} == {
                "2.0.0"}
    decided = [[entry for entry in log.lines if DECIDED in entry] for log in logs]
    assert [len(lines) for lines in decided] == [1 if i == winner else 0 for i in range(2)]
    with Registry.open(pg_url) as registry:
        book = rollout_book(registry)
        rollout = book.get("pay")
        assert rollout is not None and rollout.state == "promoted"
        [decision] = book.decisions(rollout)
        assert (decision.step, decision.outcome, decision.state_after) == (
            0, "promote", "promoted")
        port = urlsplit(urls[winner]).port
        assert rollout.actor == f"gateway:{socket.gethostname()}:{port}"
