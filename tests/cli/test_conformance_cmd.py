"""``toolkeeper conformance run``: the --json report object with exactly issue 16's fields,
exit 0/1/2, the Markdown page, and the mutation test (a flipped expected code or status in a
copy of a fixture makes the run fail)."""

from __future__ import annotations

import json
import shlex
import socket
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.cli.main import cli
from toolkeeper.conformance import canonical_text

CORPUS = resources.files("toolkeeper.conformance").joinpath("transcripts")
CASE_FIELDS = {"name", "class", "mode", "requirements", "level", "citation", "outcome",
               "boundary", "expectedCode", "observedStatus", "observedCode", "tool",
               "arguments", "finding"}


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["conformance", "run", *args])


def _copy(directory: Path, *names: str) -> None:
    for name in names:
        (directory / f"{name}.json").write_bytes(CORPUS.joinpath(f"{name}.json").read_bytes())


def _mutate(directory: Path, name: str, change: Any) -> None:
    path = directory / f"{name}.json"
    value = json.loads(path.read_text("utf-8"))
    change(value)
    path.write_text(canonical_text(value), encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_json_report_has_exactly_the_issue_fields_and_exit_0_against_the_demo_app() -> None:
    result = _invoke("--app", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"target", "era", "eraDecision", "eras", "live", "selfcheck",
                           "total", "cases"}
    assert report["target"] == "app:toolkeeper-demo"
    assert report["era"] == "2026-07-28"
    assert report["eraDecision"]["verdict"] == "modern.discovered"
    live, selfcheck = report["live"], report["selfcheck"]
    assert live["failed"] == live["warned"] == live["noted"] == selfcheck["failed"] == 0
    assert report["eras"] == []
    assert report["total"] == len(report["cases"]) >= 40
    assert live["passed"] + live["skipped"] == sum(c["mode"] == "live" for c in report["cases"])
    assert selfcheck["passed"] == sum(c["mode"] == "recorded" for c in report["cases"])
    for case in report["cases"]:
        assert set(case) == CASE_FIELDS
    mismatch = next(c for c in report["cases"] if c["name"] == "negative-header-body-mismatch")
    assert mismatch == {"name": "negative-header-body-mismatch", "class": "negative",
                        "mode": "live", "requirements": mismatch["requirements"],
                        "level": "MUST", "citation": {
                            "file": "2026-07-28/basic/transports/streamable-http.mdx",
                            "section": "Server Validation"},
                        "outcome": "pass", "boundary": "transport", "expectedCode": -32020,
                        "observedStatus": 400, "observedCode": -32020,
                        "tool": mismatch["tool"], "arguments": {}, "finding": None}
    assert isinstance(mismatch["tool"], str)


@pytest.mark.parametrize(("name", "change", "finding"), [
    ("negative-header-body-mismatch",
     lambda v: v["expect"].__setitem__("code", -32602), "expect.code"),
    ("negative-header-body-mismatch",
     lambda v: v["expect"].__setitem__("status", 404), "expect.status"),
    ("negative-unknown-method",
     lambda v: v["expect"].__setitem__("code", -32600), "expect.code"),
    ("negative-response-id-type",
     lambda v: v["expect"].__setitem__("code", "response.jsonrpc"), "response.id"),
    ("golden-modern-extension-notification",
     lambda v: v["expect"].__setitem__("status", 200), "expect.status"),
])
def test_a_flipped_expectation_in_a_copy_of_a_fixture_makes_the_run_fail(
        tmp_path: Path, name: str, change: Any, finding: str) -> None:
    _copy(tmp_path, name, "golden-modern-tools-list")
    assert _invoke("--app", "--transcripts", str(tmp_path)).exit_code == 0
    _mutate(tmp_path, name, change)
    result = _invoke("--app", "--json", "--transcripts", str(tmp_path))
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    case = next(c for c in report["cases"] if c["name"] == name)
    assert case["outcome"] == "fail"
    assert case["finding"].split(":")[0] == finding
    assert report["live"]["failed"] + report["selfcheck"]["failed"] == 1
    assert report["live"]["passed"] == 1


def test_a_broken_should_warns_and_exits_1_only_under_strict(tmp_path: Path) -> None:
    _copy(tmp_path, "negative-unknown-tool")
    _mutate(tmp_path, "negative-unknown-tool",
            lambda v: v["expect"].__setitem__("code", -32099))
    result = _invoke("--app", "--json", "--transcripts", str(tmp_path))
    assert result.exit_code == 0, result.output
    case = json.loads(result.stdout)["cases"][0]
    assert (case["outcome"], case["level"]) == ("warn", "SHOULD")
    assert case["finding"].startswith("expect.code: ")
    strict = _invoke("--app", "--strict", "--transcripts", str(tmp_path))
    assert strict.exit_code == 1, strict.output
    assert strict.stdout.splitlines()[0].startswith(
        "WARN  negative-unknown-tool [SHOULD]  expect.code: ")


def test_a_tool_the_target_does_not_list_is_a_usage_error() -> None:
    result = _invoke("--app", "--json", "--tool", "no.such.tool")
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"]["code"] == "conformance.tool_not_listed"


def test_a_non_canonical_fixture_is_refused_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "golden-modern-tools-list.json").write_text(
        json.dumps(json.loads(CORPUS.joinpath("golden-modern-tools-list.json").read_text())))
    result = _invoke("--app", "--json", "--transcripts", str(tmp_path))
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "conformance.not_canonical"


def test_an_unreachable_target_exits_2_with_a_stable_code() -> None:
    result = _invoke("--url", f"http://127.0.0.1:{_free_port()}/mcp", "--json")
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "conformance.unreachable"
    assert error["data"] == {"cause": "client.connection_refused"}
    missing = _invoke("--stdio", "/nonexistent/toolkeeper-no-such-server", "--json")
    assert missing.exit_code == 2
    assert json.loads(missing.stdout)["error"]["code"] == "conformance.unreachable"


@pytest.mark.parametrize("era", ["auto", "2026-07-28", "2025-11-25"])
def test_a_stdio_command_that_exits_at_once_is_unreachable_not_skipped(era: str) -> None:
    command = shlex.join([sys.executable, "-c", "pass"])
    result = _invoke("--stdio", command, "--era", era, "--json")
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"] == {
        "code": "conformance.unreachable", "data": {"cause": "client.connection"},
        "message": "the target cannot be reached (the connection closed)"}


@pytest.mark.parametrize("args", [(), ("--app", "--url", "http://127.0.0.1:9/mcp"),
                                  ("--stdio", "'unclosed"), ("--url", "ftp://x/mcp")])
def test_a_bad_target_choice_exits_2(args: tuple[str, ...]) -> None:
    result = _invoke(*args, "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] in ("cli.bad_target", "client.bad_target")


def test_markdown_page_has_a_row_per_case_and_text_output_a_summary(tmp_path: Path) -> None:
    _copy(tmp_path, "golden-modern-tools-list", "negative-unknown-method")
    page = tmp_path / "out" / "report.md"
    page.parent.mkdir()
    result = _invoke("--app", "--transcripts", str(tmp_path), "--markdown", str(page))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "live: 2 passed, 0 failed, 0 warned, 0 noted, 0 skipped; selfcheck: 0 passed, 0 failed "
        "against app:toolkeeper-demo (era 2026-07-28)"]
    rows = [line for line in page.read_text().splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == [
        "| golden-modern-tools-list", "| negative-unknown-method"]


def test_stdio_command_is_one_shell_quoted_string() -> None:
    command = shlex.join([sys.executable, "-m", "toolkeeper", "serve", "--demo", "--stdio",
                          "--registry", "memory:"])
    result = _invoke("--stdio", command, "--era", "2025-11-25", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["era"] == "2025-11-25" and report["live"]["failed"] == 0
