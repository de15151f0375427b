"""``toolkeeper gate matrix RUNS...``: a real ``conformance run --json`` report and hand-written
run records in, the matrix out as a table, canonical JSON (``--json``) and Markdown
(``--markdown``, the same bytes on every run); exit 0 when every cell reads tier 1 or 2, 1 when
one does not, 2 with the code and paths on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from toolkeeper.cli.gate_matrix_cmd import matrix_cmd
from toolkeeper.cli.main import cli

DIGEST = "sha256:" + "cd" * 32


def _record(path: Path, **changes: Any) -> str:
    value: dict[str, Any] = {
        "version": 1, "specRevision": "2025-11-25",
        "client": {"name": "@modelcontextprotocol/sdk", "version": "1.32.2"},
        "server": {"name": "toolkeeper", "version": "0.1.0"},
        "transport": "stdio", "negotiatedRevision": "2025-11-25",
        "live": {"passed": 20, "failed": 1, "warned": 0, "noted": 0, "skipped": 2},
        "required": {"passed": 16, "total": 20},
        "expectedFailures": [{"case": "resources-list", "reason": "resources are not served"}],
        "transcriptDigest": DIGEST}
    value.update(changes)
    path.write_text(json.dumps(value))
    return str(path)


def _matrix(*args: str) -> Result:
    return CliRunner().invoke(matrix_cmd, list(args))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``toolkeeper conformance run --app --era 2026-07-28 --json``: the harness, for real,
    against the demo gateway in process."""
    done = CliRunner().invoke(cli, ["conformance", "run", "--app", "--era", "2026-07-28",
                                    "--json"])
    assert done.exit_code == 0, done.output
    path = tmp_path_factory.mktemp("runs") / "report.json"
    path.write_text(done.stdout)
    return str(path)


def test_a_report_and_a_record_make_a_matrix_that_meets_tier_2(report: str, tmp_path: Path
                                                                ) -> None:
    done = _matrix(report, _record(tmp_path / "sdk.json"), "--json")
    assert done.exit_code == 0, done.output
    matrix = json.loads(done.stdout)
    assert [(c["specRevision"], c["transport"], c["tier"]) for c in matrix["cells"]] == [
        ("2025-11-25", "stdio", 2), ("2026-07-28", "streamable-http", 1)]
    assert matrix["cells"][1]["client"]["name"] == "toolkeeper"
    assert matrix["tiering"]["thresholds"][1] == {"tier": 2, "minPassPercent": 80}
    assert matrix["digest"].startswith("sha256:") and matrix["version"] == 1


def test_the_markdown_is_byte_identical_across_two_runs(report: str, tmp_path: Path) -> None:
    runs = [report, _record(tmp_path / "sdk.json")]
    first, second = tmp_path / "one.md", tmp_path / "two.md"
    assert _matrix(*runs, "--markdown", str(first)).exit_code == 0
    assert _matrix(*reversed(runs), "--markdown", str(second)).exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    text = first.read_text()
    assert "| 2025-11-25 | @modelcontextprotocol/sdk 1.32.2 | toolkeeper 0.1.0 | stdio |" in text
    assert "16/20 (80.0%) | tier 2 |" in text


def test_a_cell_below_tier_2_exits_1_and_the_table_says_which(tmp_path: Path) -> None:
    done = _matrix(_record(tmp_path / "a.json", required={"passed": 15, "total": 19}))
    assert done.exit_code == 1
    assert "tier 3, required 15/19 (78.9%)" in done.stdout


def test_the_release_decision_is_placed_beside_the_matrix(tmp_path: Path) -> None:
    decision = tmp_path / "decision.json"
    decision.write_text(json.dumps({"outcome": "hold", "reasons": []}))
    markdown = tmp_path / "matrix.md"
    done = _matrix(_record(tmp_path / "a.json"), "--decision", str(decision),
                   "--markdown", str(markdown))
    assert done.exit_code == 0 and "release decision: hold" in done.stdout
    assert "Outcome: **hold**." in markdown.read_text()
    assert json.loads(_matrix(_record(tmp_path / "a.json"), "--decision", str(decision),
                              "--json").stdout)["decision"]["outcome"] == "hold"


def _error(done: Result) -> dict[str, Any]:
    assert done.exit_code == 2, done.output
    error: dict[str, Any] = json.loads(done.stdout)["error"]
    return error


def test_an_invalid_run_exits_2_with_its_file_and_paths(tmp_path: Path) -> None:
    bad = _record(tmp_path / "bad.json", transport="websocket", live={"passed": -1})
    error = _error(_matrix(bad, "--json"))
    assert error["code"] == "gate.matrix_run_invalid" and error["data"]["file"] == bad
    assert [e["path"] for e in error["data"]["errors"]] == [
        "$.live.failed", "$.live.noted", "$.live.passed", "$.live.skipped", "$.live.warned",
        "$.transport"]
    (tmp_path / "broken.json").write_text("{")
    error = _error(_matrix(str(tmp_path / "broken.json"), "--json"))
    assert error["code"] == "gate.matrix_run_invalid"
    assert error["data"]["file"] == str(tmp_path / "broken.json")


def test_two_runs_of_one_cell_exit_2_naming_both(tmp_path: Path) -> None:
    first, second = _record(tmp_path / "a.json"), _record(tmp_path / "b.json")
    error = _error(_matrix(first, second, "--json"))
    assert error["code"] == "gate.matrix_duplicate_cell"
    assert error["data"]["files"] == [first, second]


def test_the_client_server_and_transport_of_a_report_can_be_named(report: str) -> None:
    done = _matrix(report, "--client", "@modelcontextprotocol/conformance@0.2.0",
                   "--server", "gateway@1.2.3", "--transport", "stdio", "--json")
    [cell] = json.loads(done.stdout)["cells"]
    assert cell["client"] == {"name": "@modelcontextprotocol/conformance", "version": "0.2.0"}
    assert (cell["server"], cell["transport"]) == ({"name": "gateway", "version": "1.2.3"},
                                                   "stdio")


def test_a_report_whose_counts_are_not_counts_is_refused(tmp_path: Path) -> None:
    report = {"target": "http://127.0.0.1:1/mcp", "era": "2026-07-28", "eraDecision": None,
              "live": {"passed": "many"}, "selfcheck": {}, "cases": []}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    done = CliRunner().invoke(cli, ["gate", "matrix", str(path), "--json"])
    assert done.exit_code == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "gate.matrix_run_invalid"
