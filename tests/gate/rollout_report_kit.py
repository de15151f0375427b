"""A rollout with real decisions for the rollout report's tests: a SQLite registry holding
``pay`` 1.0.0 (the target) and 2.0.0 (the candidate), a gateway over it with a durable call log,
one API-key-like principal inside every step's share, and the gate's own evaluations from that
log: the first step healthy (``promote``), the second with a candidate failing one call in
four (``rollback``). The evidence digest the rollout keeps is markup, to show it is escaped."""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from gateway_kit import OPEN, Driver, contract, gateway_for

from decision_kit import evidence
from rollout_kit import canary_handlers
from toolkeeper.contracts.semver import Version
from toolkeeper.gate.canary import evaluate_and_store
from toolkeeper.gate.keys import SigningKey
from toolkeeper.gate.rollback import HMAC_SHA256
from toolkeeper.gate.rollback_evidence import build_evidence
from toolkeeper.observability.recorder import CallRecorder
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import open_call_rows
from toolkeeper.registry.principal import Principal
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollouts import Rollout, bucket

__all__ = ["HOSTILE", "KEY", "rollout_with_decisions"]

KEY = SigningKey("release-controller", HMAC_SHA256, b"r" * 32)
HOSTILE = '<script>alert("digest")</script>'
"""Where the rollout keeps its evidence bundle's digest: text from the store, shown escaped."""
SALT = "01" * 16
POLICY = {"minSamples": 10, "maxErrorRate": 0.05, "baseline": {"maxErrorRateDelta": 0.05}}
PRINCIPAL = Principal.parse("acme", [], "internal", credential="k-report")
CALLS = 20


def _step(registry: Registry, url: str, fail_every: int | None) -> str:
    """Calls to the candidate (routed) and the target (pinned), then the gate's decision."""
    recorder = CallRecorder(open_call_rows(url))
    try:
        driver = Driver(gateway_for(registry, canary_handlers(fail_every), PRINCIPAL,
                                    call_log=recorder).kernel)
        for a in range(CALLS):
            driver.call("pay", {"a": a})
            driver.call("pay", {"a": a}, version="1.0.0")
    finally:
        recorder.stop()  # every row written
    rows = open_call_rows(url, read_only=True)
    try:
        made = evaluate_and_store(registry, rows, "pay", time.time_ns() // 1000, KEY,
                                  {KEY.key_id: KEY.trusted()})
    finally:
        rows.close()
    assert made is not None
    return made.decision.outcome


def rollout_with_decisions(tmp_path: Path) -> str:
    """The registry URL of a rollout of pay 2.0.0 over 1.0.0, promoted once then rolled
    back, each decision the gate's."""
    assert bucket(SALT, f"credential:{PRINCIPAL.credential}") < 2500  # in every step's share
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with Registry.open(url) as registry:
        registry.publish(contract("pay", "1.0.0", OPEN))
        registry.publish(contract("pay", "2.0.0", OPEN))
        target = build_evidence(registry, "pay", "1.0.0", KEY, healthy=True,
                                artifact=lambda spec: hashlib.sha256(b"pay").hexdigest())
        kept = evidence()
        now = time.time_ns() // 1000
        rollout_book(registry).start(Rollout(
            "pay", Version.parse("2.0.0"), Version.parse("1.0.0"), (25, 50, 100), 0, "running",
            SALT, POLICY, 300, 3, target, now, now, now,
            extra={"evidence": {"bundleDigest": HOSTILE, **{
                name: kept[name] for name in ("transcripts", "sdkDiffs", "proxyEvidence")}}}))
        assert _step(registry, url, None) == "promote"
        assert _step(registry, url, 4) == "rollback"
    return url
