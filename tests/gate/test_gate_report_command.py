"""``gate report BUNDLE --html FILE``: writes the page and exits 0; a bundle that is not one, or
whose digests do not hold, exits 2 with every refusal's code and path, as do a decision made on
another bundle, a decision or matrix that is not one, an unwritable FILE and a missing
matplotlib. Without ``--decision`` the page shows the gate's own decision, under the keys it is told to
trust."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from report_kit import DECISION, KEY, SIGNER, make_bundle, matrix

from toolkeeper.cli.gate_report_cmd import report_cmd
from toolkeeper.gate.decision import decide


def _run(tmp_path: Path, bundle: Any, *extra: str, decision: Any = DECISION) -> Any:
    (tmp_path / "bundle.json").write_text(json.dumps(bundle))
    args = [str(tmp_path / "bundle.json"), "--html", str(tmp_path / "report.html"), "--json"]
    if decision is not None:
        (tmp_path / "decision.json").write_text(json.dumps(decision))
        args += ["--decision", str(tmp_path / "decision.json")]
    return CliRunner().invoke(report_cmd, [*args, *extra], catch_exceptions=False)


def _error(result: Any) -> dict[str, Any]:
    assert result.exit_code == 2, result.output
    error: dict[str, Any] = json.loads(result.stdout)["error"]
    return error


def test_the_report_is_written_and_the_command_exits_0(tmp_path: Path) -> None:
    (tmp_path / "matrix.json").write_text(json.dumps(matrix()))
    made = make_bundle()
    result = _run(tmp_path, made, "--matrix", str(tmp_path / "matrix.json"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"html": str(tmp_path / "report.html"),
                                         "outcome": "rollback", "evidenceDigest": made["digest"]}
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Decision: rollback" in page and 'id="matrix"' in page


def test_without_a_decision_file_the_gate_decides_under_the_trusted_keys(
        tmp_path: Path) -> None:
    made = make_bundle()
    (tmp_path / "signer.key").write_text(KEY.hex())
    result = _run(tmp_path, made, "--trust", f"{SIGNER}={tmp_path / 'signer.key'}",
                  decision=None)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["outcome"] == "rollback"  # its rollback target proven
    untrusted = _run(tmp_path, made, decision=None)
    assert json.loads(untrusted.stdout)["outcome"] == decide(made, {}).to_dict()["outcome"]
    assert json.loads(untrusted.stdout)["outcome"] == "halt"
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Decision: halt" in page


@pytest.mark.parametrize(("value", "code", "path"), [
    ([1, 2], "evidence.malformed", "$.sections"),
    ({"sections": {}, "digest": "sha256:" + "0" * 64}, "evidence.malformed",
     "$.sections.healthWindows"),
])
def test_a_value_that_is_not_a_bundle_is_refused(tmp_path: Path, value: Any, code: str,
                                                  path: str) -> None:
    error = _error(_run(tmp_path, value))
    assert (error["code"], error["path"]) == (code, path)
    assert all(r["code"] == code for r in error["data"]["refusals"])
    assert not (tmp_path / "report.html").exists()


def test_a_changed_section_is_refused_with_the_digest_that_no_longer_holds(
        tmp_path: Path) -> None:
    changed = copy.deepcopy(make_bundle())
    changed["sections"]["proxyEvidence"]["content"]["reports"][0]["issues"] = []
    error = _error(_run(tmp_path, changed))
    assert error["code"] == "evidence.digest_mismatch"
    assert error["data"]["refusals"] == [{"code": "evidence.digest_mismatch",
                                          "path": "$.sections.proxyEvidence.digest"}]


def test_a_changed_bundle_digest_is_refused(tmp_path: Path) -> None:
    changed = {**make_bundle(), "digest": "sha256:" + "1" * 64}
    error = _error(_run(tmp_path, changed))
    assert (error["code"], error["path"]) == ("evidence.digest_mismatch", "$.digest")


def test_a_decision_on_another_bundle_is_refused(tmp_path: Path) -> None:
    other = {**DECISION, "evidenceDigest": "sha256:" + "2" * 64}
    error = _error(_run(tmp_path, make_bundle(), decision=other))
    assert (error["code"], error["path"]) == ("gate.decision_mismatch", "$.evidenceDigest")


@pytest.mark.parametrize("decision", [{"outcome": "ship it"}, ["rollback"]])
def test_a_decision_that_is_not_one_is_refused(tmp_path: Path, decision: Any) -> None:
    error = _error(_run(tmp_path, make_bundle(), decision=decision))
    assert (error["code"], error["path"]) == ("gate.decision_invalid", "$.outcome")


def test_a_matrix_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    (tmp_path / "matrix.json").write_text("[]")
    error = _error(_run(tmp_path, make_bundle(), "--matrix", str(tmp_path / "matrix.json")))
    assert (error["code"], error["path"]) == ("gate.matrix_invalid", "$")


def test_an_unwritable_html_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bundle.json").write_text(json.dumps(make_bundle()))
    (tmp_path / "decision.json").write_text(json.dumps(DECISION))
    result = CliRunner().invoke(report_cmd, [
        str(tmp_path / "bundle.json"), "--html", str(tmp_path / "missing" / "report.html"),
        "--decision", str(tmp_path / "decision.json"), "--json"])
    error = _error(result)
    assert (error["code"], error["data"]) == ("cli.bad_output", {"option": "--html"})


def test_without_matplotlib_the_command_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # ``import matplotlib`` fails
    error = _error(_run(tmp_path, make_bundle()))
    assert error["code"] == "gate.needs_matplotlib"
    assert "toolkeeper[gate]" in error["message"]
