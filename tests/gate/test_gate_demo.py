"""``toolkeeper gate demo``: seed 004's reference scenario run for real (a ``toolkeeper serve``
gateway under load, the harness, the official Python SDK's view in the SDK diff, a real nginx,
call-log health windows, rollback evidence from the registry) ends in ``rollback`` (exit 1);
``--fixed`` (the correct proxy, a client view that keeps ``futureHint``) in ``promote`` (exit
0); its attested decision verifies offline and fails on a changed byte; without nginx it names
the package and exits 2 before anything starts."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from nginx_kit import require_nginx

SEED_ISSUES = ["proxy changed the origin JSON-RPC body",
               "proxy collapsed a protocol error into HTTP 500"]


def _toolkeeper(*args: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolkeeper", *args], capture_output=True,
                          text=True, timeout=600, env=env)


def _demo(out: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    done = _toolkeeper("gate", "demo", "--json", "--out", str(out), *flags)
    return done.returncode, json.loads(done.stdout)


def test_the_seed_scenario_rolls_back_and_its_decision_verifies(tmp_path: Path) -> None:
    require_nginx()
    code, result = _demo(tmp_path / "demo")
    assert code == 1, result
    assert (result["transcriptsPassed"], result["transcriptsTotal"]) == (15, 15)
    assert result["transcriptsLive"] == {"passed": 11, "total": 11}
    assert result["transcriptsSelfcheck"] == {"passed": 4, "total": 4}
    assert result["sdkDroppedFields"] == ["futureHint"]
    assert result["proxyIssues"] == SEED_ISSUES
    assert result["rollbackVerified"] is True
    assert result["releaseAction"] == "rollback"
    assert result["evidenceDigest"].startswith("sha256:")
    assert {r["rule"] for r in result["reasons"]} == {"proxy.findings", "sdk_diff.acceptable"}
    windows = result["healthWindows"]
    assert windows["baseline"] == {"version": "1.0.0", "status": "healthy", "samples": 40,
                                   "errors": 0}
    # the load's 40 calls and the harness's one unpinned call reach the candidate
    assert (windows["candidate"]["status"], windows["candidate"]["samples"]) == ("healthy", 41)

    out = tmp_path / "demo"
    envelope, bundle = out / "decision.dsse.json", out / "bundle.json"
    assert json.loads((out / "decision.json").read_text())["evidenceDigest"] == \
        result["evidenceDigest"] == json.loads(bundle.read_text())["digest"]
    verified = _toolkeeper("gate", "verify", str(envelope), "--bundle", str(bundle),
                           "--demo-key", "--json")
    assert verified.returncode == 0, verified.stdout
    assert json.loads(verified.stdout)["outcome"] == "rollback"
    untrusted = _toolkeeper("gate", "verify", str(envelope), "--json")
    assert untrusted.returncode == 1
    assert json.loads(untrusted.stdout)["refusals"] == [
        {"code": "attestation.untrusted_signer", "path": "$.signatures[0].keyid"}]
    signed = json.loads(envelope.read_text())
    statement = json.loads(base64.b64decode(signed["payload"]))
    statement["predicate"]["outcome"] = "promote"
    signed["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    envelope.write_text(json.dumps(signed))
    forged = _toolkeeper("gate", "verify", str(envelope), "--demo-key", "--json")
    assert forged.returncode == 1
    assert json.loads(forged.stdout)["refusals"] == [
        {"code": "attestation.bad_signature", "path": "$.signatures[0].sig"}]
    evaluated = _toolkeeper("gate", "evaluate", str(bundle), "--demo-key", "--json")
    assert evaluated.returncode == 1
    assert json.loads(evaluated.stdout)["evidenceDigest"] == result["evidenceDigest"]
    assert (out / "report.html").is_file() and (out / "matrix.json").is_file()


def test_the_fixed_scenario_promotes(tmp_path: Path) -> None:
    require_nginx()
    code, result = _demo(tmp_path / "demo", "--fixed")
    assert code == 0, result
    assert result["releaseAction"] == "promote"
    assert result["proxyIssues"] == [] and result["sdkDroppedFields"] == []
    assert result["rollbackVerified"] is True
    assert result["reasons"] == []
    assert (result["transcriptsPassed"], result["transcriptsTotal"]) == (15, 15)


def test_without_nginx_the_demo_names_the_package_and_starts_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "TOOLKEEPER_NGINX": str(tmp_path / "no-nginx-here")}
    out = tmp_path / "demo"
    done = _toolkeeper("gate", "demo", "--json", "--out", str(out), env=env)
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "gate.demo_needs_nginx"
    assert error["data"] == {"package": "nginx"}
    assert not any(out.iterdir())
