"""``toolkeeper release`` on a real SQLite registry (the demo estate, and a candidate
``payments.lookup 1.1.0``): a start refused for an unproven target stores nothing; a healthy
target (call-log rows written as the gateway's durable call log writes them) lets it start with
signed rollback evidence and the bundle's sections kept; pause, resume, promote and abort move
it and record the actor; history lists it; bad input is exit 2 with its code."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.cli.main import cli
from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.spec import Status, spec_from_mapping
from toolkeeper.demo import install_demo
from toolkeeper.gate.evidence import bundle
from toolkeeper.gate.rollback import verify
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import CallValues, open_call_rows
from toolkeeper.registry.rollout_book import rollout_book

TOOL = "payments.lookup"
HEX_KEY = "00112233445566778899aabbccddeeff" * 2
DEMO = Path(__file__).resolve().parents[2] / "src" / "toolkeeper" / "demo"


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite://{tmp_path / 'registry.db'}"
    with Registry.open(url) as registry:
        install_demo(registry)
        data = loads_json((DEMO / f"{TOOL}-1.0.0.json").read_bytes())
        data["version"] = "1.1.0"
        data["inputSchema"]["properties"]["note"] = {"type": "string"}
        registry.publish(spec_from_mapping(data), actor="publisher")
    return url


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "gate.key").write_text(HEX_KEY + "\n")
    return {"TOOLKEEPER_GATE_KEY_ID": "release-controller",
            "TOOLKEEPER_GATE_KEY_FILE": str(tmp_path / "gate.key"),
            "TOOLKEEPER_GATE_TRUSTED_KEYS": "", "TOOLKEEPER_REGISTRY": ""}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    policy = {"minSamples": 10, "maxErrorRate": 0.05}
    (tmp_path / "policy.json").write_text(canonical_json(policy).decode())
    made = bundle({"policy": {"window": policy}, "healthWindows": {},
                   "transcripts": {"runs": [{"fixture": "t1"}]},
                   "sdkDiffs": {"reports": [{"sdk": "python"}]},
                   "proxyEvidence": {"reports": []}, "rollbackEvidence": {}})
    (tmp_path / "bundle.json").write_bytes(canonical_json(made))
    return {"policy": str(tmp_path / "policy.json"), "bundle": str(tmp_path / "bundle.json"),
            "digest": made["digest"]}


def _healthy_target(url: str, count: int = 20) -> None:
    """``count`` successful calls of the target in the last minute, in the call log."""
    now = time.time_ns() // 1000
    rows: list[CallValues] = [
        (now - 60_000_000 + i, "acme", f"k{i}", TOOL, "1.0.0", "modern", "sha256:00", "ok",
         5.0, "", None) for i in range(count)]
    log = open_call_rows(url)
    try:
        log.append(rows)
    finally:
        log.close()


def _run(args: list[str], env: dict[str, str]) -> Any:
    return CliRunner().invoke(cli, ["release", *args], env=env, prog_name="toolkeeper")


def _start(url: str, files: dict[str, str], env: dict[str, str], *more: str) -> Any:
    return _run(["start", TOOL, "1.1.0", "--policy", files["policy"], "--evidence",
                 files["bundle"], "--registry", url, "--demo", "--json", "--actor", "ops",
                 *more], env)


def _stored(url: str) -> tuple[Any, ...]:
    with Registry.open(url) as registry:
        return rollout_book(registry).history(TOOL)


def test_a_start_whose_target_has_no_healthy_window_is_refused_and_stores_nothing(
        url: str, files: dict[str, str], env: dict[str, str]) -> None:
    result = _start(url, files, env)
    assert result.exit_code == 1, result.output
    error = loads_json(result.stdout)["error"]
    assert error["code"] == "release.target_unproven"
    assert [r["code"] for r in error["data"]["refusals"]] == ["rollback.unhealthy"]
    assert _stored(url) == ()


def test_a_target_without_an_artifact_is_unproven(
        url: str, files: dict[str, str], env: dict[str, str]) -> None:
    _healthy_target(url)
    result = _run(["start", TOOL, "1.1.0", "--policy", files["policy"], "--evidence",
                   files["bundle"], "--registry", url, "--json"], env)
    assert result.exit_code == 1, result.output
    error = loads_json(result.stdout)["error"]
    assert (error["code"], error["data"]["cause"]) == ("release.target_unproven",
                                                       "gate.no_artifact")
    assert _stored(url) == ()


def test_start_pause_resume_promote_abort_and_history(
        url: str, files: dict[str, str], env: dict[str, str]) -> None:
    _healthy_target(url)
    started = _start(url, files, env, "--steps", "10,50,100", "--interval", "2m")
    assert started.exit_code == 0, started.output
    record = loads_json(started.stdout)
    assert (record["candidate"], record["target"], record["state"], record["share"]) == (
        "1.1.0", "1.0.0", "running", 10)
    assert (record["intervalS"], record["maxHolds"], record["actor"]) == (120, 6, "ops")
    assert "salt" not in record and record["evidenceBundle"] == files["digest"]
    assert verify(record["rollbackEvidence"],
                  {"release-controller": bytes.fromhex(HEX_KEY)}) == []
    [(stored, decisions)] = _stored(url)
    assert len(stored.salt) == 32 and decisions == ()
    kept = stored.extra["evidence"]
    assert kept["transcripts"]["runs"][0]["fixture"] == "t1"
    assert kept["sdkDiffs"]["reports"][0]["sdk"] == "python" and "proxyEvidence" in kept

    again = _start(url, files, env)
    assert again.exit_code == 1 and loads_json(again.stdout)["error"]["code"] == (
        "release.in_progress")

    for verb, state, share in [("pause", "paused", 10), ("resume", "running", 10),
                               ("promote", "running", 50)]:
        moved = _run([verb, TOOL, "--registry", url, "--json", "--actor", f"{verb}-er"], env)
        assert moved.exit_code == 0, moved.output
        assert (loads_json(moved.stdout)["state"], loads_json(moved.stdout)["share"],
                loads_json(moved.stdout)["actor"]) == (state, share, f"{verb}-er")
    resumed_twice = _run(["resume", TOOL, "--registry", url, "--json"], env)
    assert resumed_twice.exit_code == 1
    assert loads_json(resumed_twice.stdout)["error"]["code"] == "release.state_invalid"

    status = _run(["status", TOOL, "--registry", url, "--json"], env)
    assert status.exit_code == 0
    assert loads_json(status.stdout)["lastDecision"] is None
    human = _run(["status", TOOL, "--registry", url], env)
    assert "running at step 2/3 (50%)" in human.stdout and "no decision yet" in human.stdout

    aborted = _run(["abort", TOOL, "--registry", url, "--json"], env)
    assert aborted.exit_code == 0 and loads_json(aborted.stdout)["state"] == "aborted"
    with Registry.open(url) as registry:
        candidate = registry.get(TOOL, "1.1.0")
    assert candidate is not None and candidate.status is Status.DEPRECATED

    history = _run(["history", TOOL, "--registry", url, "--json"], env)
    assert history.exit_code == 0
    [only] = loads_json(history.stdout)["rollouts"]
    assert (only["state"], only["decisions"]) == ("aborted", [])


@pytest.mark.parametrize(("args", "code"), [
    (["--steps", "50,10,100"], "release.steps_invalid"),
    (["--steps", "5,x"], "release.steps_invalid"),
    (["--interval", "soon"], "release.interval_invalid"),
    (["--target", "9.0.0"], "registry.not_found"),
    (["--registry", "memory:"], "registry.memory_refused"),
])
def test_bad_input_is_exit_2_with_its_code(url: str, files: dict[str, str],
                                           env: dict[str, str], args: list[str],
                                           code: str) -> None:
    _healthy_target(url)
    result = _start(url, files, env, *args)
    assert result.exit_code == 2, result.output
    assert loads_json(result.stdout)["error"]["code"] == code
    assert _stored(url) == ()


def test_a_tampered_bundle_is_refused_by_its_digest(url: str, files: dict[str, str],
                                                    env: dict[str, str]) -> None:
    _healthy_target(url)
    made = loads_json(Path(files["bundle"]).read_bytes())
    made["sections"]["transcripts"]["content"]["runs"].append({"fixture": "forged"})
    Path(files["bundle"]).write_bytes(canonical_json(made))
    result = _start(url, files, env)
    assert result.exit_code == 2
    error = loads_json(result.stdout)["error"]
    assert (error["code"], error["path"]) == ("evidence.digest_mismatch",
                                              "$.sections.transcripts.digest")
    assert _stored(url) == ()


def test_status_of_a_tool_without_a_rollout_is_exit_2(url: str, env: dict[str, str]) -> None:
    result = _run(["status", TOOL, "--registry", url, "--json"], env)
    assert result.exit_code == 2
    assert loads_json(result.stdout)["error"]["code"] == "release.not_found"
