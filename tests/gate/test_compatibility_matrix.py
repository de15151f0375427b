"""The compatibility matrix of run records and real ``conformance run`` reports: one cell per
spec revision x client x server x transport, each read as a tier of the official SDK tiering's
conformance thresholds (100%: tier 1, at least 80%: tier 2, exactly, in integers), sorted by
key; a duplicate cell and an invalid run are refused with their codes and paths; the digest and
the Markdown are the same bytes for the same runs."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

from toolkeeper.client import Target
from toolkeeper.conformance import Report, RunOptions, builtin_corpus, run_transcripts
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.matrix import Defaults, Party, build_matrix, run_schema, tier_of
from toolkeeper.gate.matrix_markdown import matrix_markdown, pass_percent
from toolkeeper.registry import Registry
from toolkeeper.server import build_app

STDIO_COMMAND = (sys.executable, "-m", "toolkeeper", "serve", "--demo", "--stdio",
                 "--registry", "memory:")
HARNESS = Defaults(Party("toolkeeper", "0.1.0"))
DIGEST = "sha256:" + "ab" * 32


def record(**changes: Any) -> dict[str, Any]:
    """A valid run record: mcp 2.3.0 against toolkeeper 0.1.0 over Streamable HTTP."""
    value: dict[str, Any] = {
        "version": 1, "specRevision": "2026-07-28",
        "client": {"name": "mcp", "version": "2.3.0"},
        "server": {"name": "toolkeeper", "version": "0.1.0"},
        "transport": "streamable-http", "negotiatedRevision": "2026-07-28",
        "live": {"passed": 10, "failed": 0, "warned": 0, "noted": 0, "skipped": 1},
        "required": {"passed": 8, "total": 8}, "expectedFailures": [],
        "transcriptDigest": DIGEST}
    value.update(changes)
    return value


def demo_app() -> Any:
    """The demo gateway (memory registry, demo estate and handlers) as an ASGI app."""
    registry = Registry.open("memory:")
    install_demo(registry)
    return build_app(registry, demo_handlers())[0]


@pytest.fixture(scope="module")
def app_report() -> Report:
    """The harness, for real, against the demo gateway in process: one era, the default corpus."""
    return asyncio.run(run_transcripts(Target.from_asgi(demo_app()), builtin_corpus(),
                                       RunOptions(era="2026-07-28"),
                                       label="app:toolkeeper-demo"))


@pytest.fixture(scope="module")
def stdio_report() -> dict[str, Any]:
    """``toolkeeper conformance run --stdio ... --json`` as a user runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "toolkeeper", "conformance", "run", "--stdio",
         " ".join(STDIO_COMMAND), "--era", "2026-07-28", "--json"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    value: dict[str, Any] = json.loads(done.stdout)
    return value


def test_the_run_record_schema_is_a_valid_json_schema_and_accepts_a_record() -> None:
    jsonschema.Draft202012Validator.check_schema(run_schema())
    jsonschema.validate(record(), run_schema())


def test_a_report_is_one_cell_of_its_era_with_the_reports_own_digest(app_report: Report) -> None:
    matrix = build_matrix([("app.json", app_report.to_json())], HARNESS)
    [cell] = matrix["cells"]
    ran = [case for case in app_report.cases
           if case.mode == "live" and case.level == "MUST" and case.outcome != "skip"
           and case.citation is not None and case.citation["file"].startswith("2026-07-28/")]
    assert cell["specRevision"] == "2026-07-28" and cell["negotiatedRevision"] == "2026-07-28"
    assert cell["client"] == cell["server"] == {"name": "toolkeeper", "version": "0.1.0"}
    assert cell["transport"] == "streamable-http"
    assert cell["required"] == {"passed": sum(c.outcome == "pass" for c in ran),
                                "total": len(ran)} and len(ran) > 0
    assert cell["live"]["failed"] == 0 and cell["tier"] == 1
    assert cell["transcriptDigest"] == app_report.digest
    assert cell["expectedFailures"] == []  # the harness has no expected failures
    assert matrix["summary"]["meetsTier2"] is True


def test_a_stdio_report_reads_its_transport_and_names_the_server_by_its_target(
        stdio_report: dict[str, Any]) -> None:
    matrix = build_matrix([("stdio.json", stdio_report)], HARNESS)
    [cell] = matrix["cells"]
    assert cell["transport"] == "stdio"
    assert cell["server"] == {"name": stdio_report["target"], "version": None}
    overridden = build_matrix([("stdio.json", stdio_report)], Defaults(
        Party("toolkeeper", "0.1.0"), Party("toolkeeper", "0.1.0"), "stdio"))
    assert overridden["cells"][0]["server"] == {"name": "toolkeeper", "version": "0.1.0"}


def test_a_report_of_both_eras_is_one_cell_per_revision(app_report: Report) -> None:
    both = asyncio.run(run_transcripts(Target.from_asgi(demo_app()), builtin_corpus(),
                                       RunOptions(), label="app:toolkeeper-demo"))
    cells = build_matrix([("auto.json", both.to_json())], HARNESS)["cells"]
    assert [(c["specRevision"], c["negotiatedRevision"]) for c in cells] == [
        ("2025-11-25", None), ("2026-07-28", "2026-07-28")]  # only the selected era's is known


def test_cells_are_sorted_by_revision_client_server_and_transport(app_report: Report) -> None:
    runs = [("b.json", record(transport="stdio")),
            ("a.json", record(client={"name": "fastmcp", "version": "4.2.3"})),
            ("c.json", record(specRevision="2025-11-25", negotiatedRevision="2025-11-25")),
            ("app.json", app_report.to_json())]
    keys = [(c["specRevision"], c["client"]["name"], c["server"]["name"], c["transport"])
            for c in build_matrix(runs, HARNESS)["cells"]]
    assert keys == sorted(keys) and len(keys) == 4


@pytest.mark.parametrize(("passed", "total", "tier"), [
    (8, 8, 1), (4, 5, 2), (80, 100, 2), (79, 99, 3), (799, 1000, 3), (0, 3, 3), (0, 0, None)])
def test_tier_thresholds_are_exact(passed: int, total: int, tier: int | None) -> None:
    assert tier_of(passed, total) == tier
    cell = build_matrix([("r.json", record(required={"passed": passed, "total": total}))],
                        HARNESS)["cells"][0]
    assert cell["tier"] == tier


def test_a_share_just_under_80_percent_never_shows_as_80() -> None:
    assert pass_percent(7996, 10000) == "79.9%" and pass_percent(4, 5) == "80.0%"


def test_an_unrated_or_tier_3_cell_does_not_meet_tier_2() -> None:
    for required in ({"passed": 0, "total": 0}, {"passed": 3, "total": 4}):
        runs = [("a.json", record()), ("b.json", record(transport="stdio", required=required))]
        assert build_matrix(runs, HARNESS)["summary"]["meetsTier2"] is False


def test_two_runs_for_one_cell_are_refused_naming_both_files() -> None:
    with pytest.raises(ToolkeeperError) as caught:
        build_matrix([("a.json", record()), ("b.json", record(live={
            "passed": 1, "failed": 0, "warned": 0, "noted": 0, "skipped": 0}))], HARNESS)
    assert caught.value.code == "gate.matrix_duplicate_cell"
    assert caught.value.data["files"] == ["a.json", "b.json"]
    assert caught.value.data["cell"]["client"] == {"name": "mcp", "version": "2.3.0"}


@pytest.mark.parametrize(("value", "paths"), [
    (record(transport="websocket"), ["$.transport"]),
    (record(transcriptDigest="sha256:abc"), ["$.transcriptDigest"]),
    (record(required={"passed": 9, "total": 8}), ["$.required.passed"]),
    (record(expectedFailures=[{"case": "x", "reason": "r"}, {"case": "x", "reason": "s"}]),
     ["$.expectedFailures[1].case"]),
    (record(expectedFailures=[{"case": "x"}]), ["$.expectedFailures[0].reason"]),
    (record(client={"name": "mcp"}, extra=1), ["$.client.version", "$.extra"]),
    ({"target": "t", "era": "2026-07-28", "eraDecision": None, "cases": [{"name": "c"}]},
     ["$.cases[0].level", "$.cases[0].mode", "$.cases[0].outcome"]),
    ([1, 2], ["$"]),
])
def test_an_invalid_run_is_refused_with_its_file_and_each_path(value: Any, paths: list[str]
                                                              ) -> None:
    with pytest.raises(ToolkeeperError) as caught:
        build_matrix([("runs/bad.json", value)], HARNESS)
    assert caught.value.code == "gate.matrix_run_invalid"
    assert caught.value.data["file"] == "runs/bad.json"
    assert [error["path"] for error in caught.value.data["errors"]] == paths


def test_the_decision_sits_beside_the_matrix_and_a_malformed_one_is_refused() -> None:
    decision = {"outcome": "promote", "reasons": []}
    matrix = build_matrix([("a.json", record())], HARNESS, decision)
    assert matrix["decision"] == decision
    assert "Outcome: **promote**." in matrix_markdown(matrix)
    with pytest.raises(ToolkeeperError) as caught:
        build_matrix([("a.json", record())], HARNESS, {"reasons": []})
    assert caught.value.code == "gate.matrix_decision_invalid"


def test_the_digest_covers_every_cell_and_the_markdown_is_stable(app_report: Report) -> None:
    runs = [("a.json", record(expectedFailures=[{"case": "resources-list",
                                                "reason": "resources are not served"}])),
            ("app.json", app_report.to_json())]
    first, second = build_matrix(runs, HARNESS), build_matrix(copy.deepcopy(runs), HARNESS)
    assert first == second and first["version"] == 1
    assert matrix_markdown(first).encode() == matrix_markdown(second).encode()
    assert "`resources-list`: resources are not served" in matrix_markdown(first)
    changed = build_matrix([runs[0], ("app.json", record(transport="stdio"))], HARNESS)
    assert changed["digest"] != first["digest"]
