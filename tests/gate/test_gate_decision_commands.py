"""``toolkeeper gate bundle``, ``evaluate``, ``sign`` and ``verify`` as a user runs them: the
bundle refused at once when a file is not the evidence it is given as; each outcome's exit
code; a signed decision verified offline against its bundle, and refused when a byte of that
bundle's evidence changed (its digests recomputed, not read), when the signer is not trusted,
and when the file is not an envelope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from decision_kit import KEY, KEY_ID, POLICY, evidence, make, window
from toolkeeper.cli.main import cli
from toolkeeper.contracts.canonical import canonical_json


def _run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), env=env)


@pytest.fixture
def keyed(tmp_path: Path) -> dict[str, str]:
    key = tmp_path / "gate.key"
    key.write_text(KEY.hex())
    return {"TOOLKEEPER_GATE_KEY_ID": KEY_ID, "TOOLKEEPER_GATE_KEY_FILE": str(key)}


def _files(tmp_path: Path, **changes: Any) -> dict[str, Path]:
    parts = {**evidence(), **changes}
    files = {}
    for name, content in (("policy", POLICY), ("windows", parts["healthWindows"]),
                          ("run", parts["transcripts"]["runs"][0]),
                          ("sdk", parts["sdkDiffs"]["reports"][0]),
                          ("proxy", parts["proxyEvidence"]["reports"][0]),
                          ("rollback", parts["rollbackEvidence"])):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_bytes(canonical_json(content))
    return files


def _bundle_args(files: dict[str, Path], out: Path, **swap: str) -> list[str]:
    chosen = {**{k: str(v) for k, v in files.items()}, **swap}
    return ["gate", "bundle", "--policy", chosen["policy"], "--windows", chosen["windows"],
            "--transcripts", chosen["run"], "--sdk-diff", chosen["sdk"], "--proxy",
            chosen["proxy"], "--rollback-evidence", chosen["rollback"], "--out", str(out)]


def test_a_bundle_made_from_the_files_is_the_bundle_of_their_evidence(tmp_path: Path) -> None:
    files, out = _files(tmp_path), tmp_path / "bundle.json"
    done = _run(*_bundle_args(files, out))
    assert done.exit_code == 0, done.output
    assert json.loads(out.read_text()) == make()


@pytest.mark.parametrize(("option", "instead", "code"), [
    pytest.param("rollback", "run", "rollback.field_invalid", id="report-as-rollback-evidence"),
    pytest.param("windows", "run", "evidence.malformed", id="report-as-windows"),
    pytest.param("proxy", "rollback", "evidence.malformed", id="evidence-as-proxy"),
    pytest.param("policy", "run", "gate.policy_invalid", id="report-as-policy"),
])
def test_a_file_that_is_not_what_it_is_given_as_is_refused_at_once(
        tmp_path: Path, option: str, instead: str, code: str) -> None:
    files, out = _files(tmp_path), tmp_path / "bundle.json"
    done = _run(*_bundle_args(files, out, **{option: str(files[instead])}))
    assert done.exit_code == 2
    assert f"[{code}]" in done.output
    assert not out.exists()


def test_each_outcome_has_its_exit_code(tmp_path: Path, keyed: dict[str, str]) -> None:
    base = window("4.0.0", 60)
    cases = {0: {}, 1: {"healthWindows": {"candidate": window("4.1.0", 60, errors=12,
                                                              baseline=base), "baseline": base}},
             4: {"healthWindows": {"candidate": window("4.1.0", 3, baseline=base),
                                   "baseline": base}}}
    for code, changes in cases.items():
        path = tmp_path / f"bundle-{code}.json"
        path.write_bytes(canonical_json(make(**changes)))
        done = _run("gate", "evaluate", str(path), "--json", env=keyed)
        assert done.exit_code == code, done.output
    untrusted = _run("gate", "evaluate", str(tmp_path / "bundle-1.json"), "--json")
    assert untrusted.exit_code == 3  # the target's signer is not trusted: halt
    assert json.loads(untrusted.stdout)["outcome"] == "halt"


def test_a_signed_decision_verifies_against_its_bundle_only(
        tmp_path: Path, keyed: dict[str, str]) -> None:
    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(canonical_json(make()))
    envelope = tmp_path / "decision.dsse.json"
    assert _run("gate", "sign", str(bundle), "--out", str(envelope), env=keyed).exit_code == 0
    ok = _run("gate", "verify", str(envelope), "--bundle", str(bundle), "--json", env=keyed)
    assert ok.exit_code == 0 and json.loads(ok.stdout)["verified"] is True
    tampered = json.loads(bundle.read_text())
    content = tampered["sections"]["healthWindows"]["content"]["candidate"]["observed"]
    content["samples"][0]["outcome"] = "exception"  # its digest left as it was
    changed = tmp_path / "tampered.json"
    changed.write_text(json.dumps(tampered))
    refused = _run("gate", "verify", str(envelope), "--bundle", str(changed), "--json",
                   env=keyed)
    assert refused.exit_code == 1
    assert json.loads(refused.stdout)["refusals"] == [
        {"code": "attestation.evidence_mismatch", "path": "$.payload.predicate.inputs"},
        {"code": "evidence.digest_mismatch",
         "path": "bundle:$.sections.healthWindows.digest"}]
    other = tmp_path / "other.json"
    other.write_bytes(canonical_json(make(rollbackEvidence={**evidence()["rollbackEvidence"],
                                                            "routeRestore": "x"})))
    assert _run("gate", "verify", str(envelope), "--bundle", str(other),
                env=keyed).exit_code == 1


def test_signing_needs_a_key_and_verifying_an_envelope(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(canonical_json(make()))
    done = _run("gate", "sign", str(bundle), "--out", str(tmp_path / "x.json"), "--json")
    assert done.exit_code == 2
    assert json.loads(done.stdout)["error"]["code"] == "gate.no_signing_key"
    assert "[REDACTED]" not in done.stdout
    assert not (tmp_path / "x.json").exists()
    notes = tmp_path / "notes.json"
    notes.write_text('{"payload": "e30="}')
    malformed = _run("gate", "verify", str(notes), "--json")
    assert malformed.exit_code == 2
    assert json.loads(malformed.stdout)["error"]["code"] == "attestation.malformed"


def test_an_unwritable_output_is_one_code(tmp_path: Path, keyed: dict[str, str]) -> None:
    files = _files(tmp_path)
    missing = tmp_path / "no-such-dir" / "bundle.json"
    done = _run(*_bundle_args(files, missing), env=keyed)
    assert done.exit_code == 2 and "[cli.bad_output]" in done.output
