"""The release gate deciding a rollout's steps (issue 24): a real gateway over a SQLite
registry, its durable call log, real API-key principals sending the load, and the gate's
evaluation of each step from that log. A candidate failing 20% of its calls is rolled back
(every principal back on the target, the candidate deprecated, the signed decision stored and
verifying); a healthy one is promoted step by step until it is the version in force; a
candidate with no traffic holds, then halts at the rollout's limit, never promoting; a target
whose stored evidence no longer verifies or no longer matches the store halts the rollout, and
calls then get the documented refusal."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from gateway_kit import OPEN, contract
from tenant_kit import StreamPeer

from decision_kit import evidence
from rollout_kit import canary_handlers
from toolkeeper.auth.keys import KeyAuthenticator, issue_key
from toolkeeper.auth.resolver import BearerResolver
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status
from toolkeeper.gate.attestation import verify_envelope
from toolkeeper.gate.canary import evaluate_and_store
from toolkeeper.gate.keys import SigningKey
from toolkeeper.gate.rollback import HMAC_SHA256
from toolkeeper.gate.rollback_evidence import build_evidence
from toolkeeper.observability.recorder import CallRecorder
from toolkeeper.registry import Registry
from toolkeeper.registry.apikeys import key_store
from toolkeeper.registry.call_rows import open_call_rows
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollout_rows import thawed
from toolkeeper.registry.rollouts import BUCKETS, Rollout, bucket
from toolkeeper.server import build_gateway

RESOURCE = "https://gw.test/mcp"
PRINCIPALS = 60
CALLS_EACH = 4
SALT = "c0ffee" * 5 + "00"
KEY = SigningKey("release-controller", HMAC_SHA256, b"r" * 32)
TRUSTED = {KEY.key_id: KEY.trusted()}
POLICY = {"minSamples": 10, "maxErrorRate": 0.05, "baseline": {"maxErrorRateDelta": 0.05}}


@dataclass
class Canary:
    registry: Registry
    url: str
    tokens: dict[str, str]
    recorder: CallRecorder | None = None

    def serve(self, fail_every: int | None = None) -> None:
        """A gateway with a durable call log, afresh (the last one's rows flushed)."""
        self.stop()
        self.recorder = CallRecorder(open_call_rows(self.url))
        resolver = BearerResolver(RESOURCE, keys=KeyAuthenticator(key_store(self.registry.store)))
        self.gateway = build_gateway(self.registry, canary_handlers(fail_every),
                                     resolve_principal=resolver, call_log=self.recorder)

    def stop(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()  # every row written
            self.recorder = None

    def call(self, key_id: str, n: int, version: str | None = None) -> dict[str, Any]:
        peer = StreamPeer(self.gateway.kernel, self.tokens[key_id], legacy=False)
        return peer.decoded("tools/call", "pay", arguments={"a": n}, version=version)

    def load(self) -> None:
        for i, key_id in enumerate(sorted(self.tokens)):
            for j in range(CALLS_EACH):
                self.call(key_id, i * CALLS_EACH + j)

    def evaluate(self) -> Any:
        self.stop()
        rows = open_call_rows(self.url, read_only=True)
        try:
            return evaluate_and_store(self.registry, rows, "pay", time.time_ns() // 1000, KEY,
                                      TRUSTED)
        finally:
            rows.close()


@pytest.fixture
def canary(tmp_path: Path) -> Iterator[Canary]:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    registry = Registry.open(url)
    registry.publish(contract("pay", "1.0.0", OPEN))
    registry.publish(contract("pay", "2.0.0", OPEN))
    store = key_store(registry.store)
    tokens = {}
    for _ in range(PRINCIPALS):
        issued = issue_key(store, tenant="acme", scopes=[], clearance="internal")
        tokens[issued.record.id] = issued.token
    made = Canary(registry, url, tokens)
    yield made
    made.stop()
    registry.close()


def _start(canary: Canary, steps: tuple[int, ...] = (25, 50, 100), max_holds: int = 3
           ) -> Rollout:
    evidence = build_evidence(canary.registry, "pay", "1.0.0", KEY, healthy=True,
                              artifact=lambda spec: hashlib.sha256(b"pay handler").hexdigest())
    now = time.time_ns() // 1000
    return rollout_book(canary.registry).start(Rollout(
        "pay", Version.parse("2.0.0"), Version.parse("1.0.0"), steps, 0, "running", SALT,
        POLICY, 300, max_holds, evidence, now, now, now, extra={"evidence": _kept()}))


def _kept() -> dict[str, Any]:
    """The pre-rollout gate's transcripts, SDK diff and proxy evidence (all passed)."""
    made = evidence()
    return {name: made[name] for name in ("transcripts", "sdkDiffs", "proxyEvidence")}


def _in_share(canary: Canary, share: int) -> set[str]:
    return {k for k in canary.tokens
            if bucket(SALT, f"credential:{k}") < share * (BUCKETS // 100)}


def _version(reply: dict[str, Any]) -> str:
    assert "result" in reply, reply
    return str(reply["result"]["_meta"]["schemaVersion"])


def test_a_candidate_failing_a_fifth_of_its_calls_is_rolled_back(canary: Canary) -> None:
    canary.serve(fail_every=5)
    _start(canary)
    assert len(_in_share(canary, 25)) * CALLS_EACH >= POLICY["minSamples"]
    canary.load()
    evaluation = canary.evaluate()
    assert evaluation.decision.outcome == "rollback", [
        (r.rule, r.status, r.measured, r.detail) for r in evaluation.decision.reasons
        if r.status != "passed"]
    failed = {r.rule: r.measured for r in evaluation.decision.reasons if r.status == "failed"}
    assert failed["window.error_rate"] == pytest.approx(0.2, abs=0.08)
    stored = rollout_book(canary.registry).get("pay")
    assert stored is not None and stored.state == "rolled_back"
    assert canary.registry.get("pay", "2.0.0").status is Status.DEPRECATED
    canary.serve(fail_every=5)
    assert {_version(canary.call(k, 1)) for k in canary.tokens} == {"1.0.0"}
    [decision] = rollout_book(canary.registry).decisions(stored)
    assert decision.outcome == "rollback" and decision.state_after == "rolled_back"
    statement, refusals = verify_envelope(thawed(decision.envelope), TRUSTED)
    assert refusals == [] and statement["predicate"]["outcome"] == "rollback"


def test_a_healthy_candidate_is_promoted_step_by_step_into_force(canary: Canary) -> None:
    _start(canary)
    for share, after in ((25, 50), (50, 100)):
        canary.serve()
        routed = {k for k in canary.tokens if _version(canary.call(k, 0)) == "2.0.0"}
        assert routed == _in_share(canary, share)
        assert abs(len(routed) / PRINCIPALS * 100 - share) <= 15  # the stated tolerance
        canary.load()
        evaluation = canary.evaluate()
        assert evaluation.decision.outcome == "promote", evaluation.decision.reasons
        assert evaluation.rollout.share == after
    assert rollout_book(canary.registry).get("pay").state == "promoted"
    canary.serve()
    assert {_version(canary.call(k, 1)) for k in canary.tokens} == {"2.0.0"}
    assert {_version(canary.call(k, 1, "1.0.0")) for k in canary.tokens} == {"1.0.0"}


def test_no_traffic_holds_then_halts_at_the_limit_and_never_promotes(canary: Canary) -> None:
    _start(canary, max_holds=2)
    canary.serve()
    outcomes = []
    for _ in range(3):
        evaluation = canary.evaluate()
        outcomes.append((evaluation.decision.outcome, evaluation.rollout.state))
    assert outcomes == [("hold", "running"), ("hold", "running"), ("hold", "halted")]
    assert rollout_book(canary.registry).get("pay").state == "halted"
    assert canary.evaluate() is None  # a halted rollout waits for an operator
    canary.serve()
    refused = canary.call(sorted(canary.tokens)[0], 1)
    assert refused["error"]["data"]["reason"] == "release.halted"


@pytest.mark.parametrize("change", ["signature", "target-deprecated"])
def test_a_target_no_longer_proven_halts_the_rollout(canary: Canary, change: str) -> None:
    started = _start(canary)
    book = rollout_book(canary.registry)
    if change == "signature":
        evidence = dict(started.rollback_evidence)
        evidence["attestation"] = {**evidence["attestation"], "proofValue": "0" * 64}
        book.update(replace(started, rollback_evidence=evidence), expected_seq=started.seq)
    else:
        canary.registry.deprecate("pay", "1.0.0", actor="someone")
    canary.serve()
    canary.load()
    evaluation = canary.evaluate()
    assert evaluation.decision.outcome == "halt"
    unproven = {r.rule for r in evaluation.decision.reasons
                if r.section == "rollbackEvidence" and r.status == "failed"}
    assert unproven == ({"rollback.verified"} if change == "signature"
                        else {"rollback.matches_store"})
    assert book.get("pay").state == "halted"
    canary.serve()
    for key_id in sorted(canary.tokens)[:5]:
        refused = canary.call(key_id, 1)
        assert refused["error"]["data"]["reason"] == "release.halted"


def _cli(canary: Canary, tmp_path: Path, *args: str) -> Any:
    from click.testing import CliRunner

    from toolkeeper.cli.main import cli

    key = tmp_path / "gate.key"
    key.write_text(KEY.secret.hex() if isinstance(KEY.secret, bytes) else "")
    return CliRunner().invoke(cli, [*args, "--registry", canary.url, "--json"], env={
        "TOOLKEEPER_GATE_KEY_ID": KEY.key_id, "TOOLKEEPER_GATE_KEY_FILE": str(key)})


def test_release_evaluate_decides_and_exits_with_the_gates_code(
        canary: Canary, tmp_path: Path) -> None:
    canary.serve(fail_every=5)
    _start(canary)
    canary.load()
    canary.stop()
    done = _cli(canary, tmp_path, "release", "evaluate", "pay")
    assert done.exit_code == 1, done.output
    assert json.loads(done.stdout)["decision"]["outcome"] == "rollback"
    again = _cli(canary, tmp_path, "release", "evaluate", "pay")
    assert again.exit_code == 2
    assert json.loads(again.stdout)["error"]["code"] == "release.not_running"


def test_release_watch_evaluates_when_the_interval_is_up_until_the_rollout_ends(
        canary: Canary, tmp_path: Path) -> None:
    canary.serve()
    started = _start(canary)
    rollout_book(canary.registry).update(replace(started, interval_s=0),
                                         expected_seq=started.seq)
    canary.load()
    canary.stop()
    done = _cli(canary, tmp_path, "release", "watch", "pay", "--every", "0.1")
    # 25% promoted to 50%, where no call has come since: it holds to its limit, then halts
    assert done.exit_code == 3, done.output
    outcomes = [json.loads(line)["decision"]["outcome"] for line in done.stdout.splitlines()]
    assert outcomes == ["promote", "hold", "hold", "hold", "hold"]


def test_the_policys_resource_rules_judge_the_serving_process(canary: Canary) -> None:
    from toolkeeper.cli.serve_rollouts import process_readings

    started = _start(canary)
    strict = {**POLICY, "resources": {"maxRssBytes": 1, "maxOpenFds": 100_000}}
    rollout_book(canary.registry).update(replace(started, policy=strict),
                                         expected_seq=started.seq)
    canary.serve()
    canary.load()
    canary.stop()
    readings = process_readings()
    assert readings["rssBytes"] > 1 and readings["openFds"] > 0
    rows = open_call_rows(canary.url, read_only=True)
    try:
        asked: list[int] = []
        evaluation = evaluate_and_store(
            canary.registry, rows, "pay", time.time_ns() // 1000, KEY, TRUSTED,
            resources=lambda since_us: asked.append(since_us) or readings)
    finally:
        rows.close()
    assert asked == [started.step_started_us]  # the highest readings over the step
    verdicts = {r.rule: (r.status, r.measured) for r in evaluation.decision.reasons}
    assert verdicts["window.resources.rss"] == ("failed", readings["rssBytes"])
    assert verdicts["window.resources.open_fds"] == ("passed", readings["openFds"])
    assert evaluation.decision.outcome == "rollback"


def test_release_status_shows_each_step_and_the_last_decisions_windows(
        canary: Canary, tmp_path: Path) -> None:
    canary.serve()
    _start(canary)
    canary.load()
    canary.stop()
    assert _cli(canary, tmp_path, "release", "evaluate", "pay").exit_code == 0  # promote
    status = json.loads(_cli(canary, tmp_path, "release", "status", "pay").stdout)
    assert status["decisions"] == 1
    assert [(s["step"], s["share"], s["outcome"], s["stateAfter"]) for s in status["steps"]] == [
        (0, 25, "promote", "running")]
    verdicts = {v["rule"]: (v["status"], v["threshold"]) for v in status["windows"]}
    assert verdicts == {"window.baseline.error_rate_delta": ("passed", 0.05),
                        "window.error_rate": ("passed", 0.05),
                        "window.min_observation": ("passed", 0.0),
                        "window.min_samples": ("passed", 10)}
    from click.testing import CliRunner

    from toolkeeper.cli.main import cli

    shown = CliRunner().invoke(cli, ["release", "status", "pay", "--registry", canary.url])
    assert shown.exit_code == 0
    assert "  step 1 (25%): promote -> running" in shown.output
    assert "    window.error_rate passed: measured 0.0, threshold 0.05" in shown.output
