"""One command line: ``--era auto|modern|legacy`` everywhere (dated names as aliases), one
``--stdio CMD`` form (``--stdio -- CMD ARG...`` still taken), ``--url`` for every target, the
``contracts`` group with the former top-level commands as aliases, every error under
``--json`` the one error object (usage errors and publish refusals included), and click's
shell completion."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from process_kit import SRC, serving_gateway
from toolkeeper.cli.main import cli

CORPUS = resources.files("toolkeeper.conformance").joinpath("transcripts")
GOOD_ARGS = '{"reference": "PMT-771", "include_legs": true}'
BAD_ARGS = '{"reference": "PMT771", "include_legs": "yes", "urgent": true}'


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env={"TOOLKEEPER_TOKEN": None})


_SCRIPT = Path(sys.executable).with_name("toolkeeper")
_COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [
    sys.executable, "-c", "from toolkeeper.cli.main import main; main()"]


def toolkeeper(*args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    """``toolkeeper ARGS`` as a real process (the console script when it is installed)."""
    return subprocess.run([*_COMMAND, *args], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, "PYTHONPATH": SRC, **(env or {})})


def demo_argv(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "toolkeeper", "serve", "--demo", "--stdio", "--registry",
            f"sqlite:///{tmp_path / 'registry.db'}"]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    registry = tmp_path_factory.mktemp("gw") / "registry.db"
    with serving_gateway(["--demo", "--port", "0", "--registry", f"sqlite:///{registry}"]
                         ) as url:
        yield url


def _tools(result: Any) -> tuple[str, list[str]]:
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    return out["era"], [tool["name"] for tool in out["tools"]]


DEMO_TOOLS = ["db.query", "payments.lookup", "tickets.create"]


# --- --era -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("era", "version"), [("legacy", "2025-11-25"),
                                              ("2025-11-25", "2025-11-25"),
                                              ("modern", "2026-07-28"),
                                              ("2026-07-28", "2026-07-28")])
def test_tools_takes_the_era_by_name_or_by_its_dated_alias(
        gateway: str, era: str, version: str) -> None:
    assert _tools(invoke("tools", "--url", gateway, "--era", era, "--json")) == (
        version, DEMO_TOOLS)


def _case_dir(tmp_path: Path) -> Path:
    for name in ("golden-modern-tools-list", "negative-unknown-method"):
        (tmp_path / f"{name}.json").write_bytes(CORPUS.joinpath(f"{name}.json").read_bytes())
    return tmp_path


@pytest.mark.parametrize(("era", "alias"), [("modern", "2026-07-28"),
                                            ("legacy", "2025-11-25")])
def test_conformance_run_takes_modern_and_legacy_as_the_dated_names_it_reports(
        tmp_path: Path, era: str, alias: str) -> None:
    cases = str(_case_dir(tmp_path))
    named = invoke("conformance", "run", "--app", "--era", era, "--transcripts", cases, "--json")
    dated = invoke("conformance", "run", "--app", "--era", alias, "--transcripts", cases,
                   "--json")
    assert (named.exit_code, dated.exit_code) == (0, 0), named.output
    by_name, by_date = json.loads(named.stdout), json.loads(dated.stdout)
    assert by_name["era"] == by_date["era"] == alias
    assert [c["outcome"] for c in by_name["cases"]] == [c["outcome"] for c in by_date["cases"]]


def test_every_era_option_offers_the_same_three_names() -> None:
    for command in (["tools"], ["call"], ["conformance", "run"]):
        result = invoke(*command, "--help")
        assert "--era [auto|modern|legacy]" in result.stdout, command


# --- --stdio -----------------------------------------------------------------------------------


def test_tools_stdio_takes_one_command_string_and_the_words_after_double_dash_alike(
        tmp_path: Path) -> None:
    argv = demo_argv(tmp_path)
    one_string = _tools(invoke("tools", "--stdio", shlex.join(argv), "--json"))
    words = _tools(invoke("tools", "--json", "--stdio", "--", *argv))
    assert one_string == words == ("2026-07-28", DEMO_TOOLS)


def test_call_stdio_one_string_leaves_the_last_two_words_to_the_tool(tmp_path: Path) -> None:
    result = invoke("call", "--stdio", shlex.join(demo_argv(tmp_path)), "payments.lookup",
                    GOOD_ARGS, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["ok"], out["tool"], out["schemaVersion"]) == (True, "payments.lookup", "1.0.0")


def test_conformance_run_takes_the_stdio_words_after_double_dash(tmp_path: Path) -> None:
    result = invoke("conformance", "run", "--era", "legacy", "--transcripts",
                    str(_case_dir(tmp_path)), "--json", "--stdio", "--",
                    *demo_argv(tmp_path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["era"] == "2025-11-25"


@pytest.mark.parametrize("args", [("--stdio", "'unclosed"), ("--stdio", ""),
                                  ("--stdio", "x", "--url", "http://127.0.0.1:9/mcp"),
                                  ("--url", "http://127.0.0.1:9/mcp", "http://127.0.0.1:9/x"),
                                  ()])
def test_a_target_that_names_no_one_endpoint_is_client_bad_target(args: tuple[str, ...]
                                                                   ) -> None:
    result = invoke("tools", *args, "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "client.bad_target"


# --- --url -------------------------------------------------------------------------------------


def test_tools_and_call_take_the_url_as_an_option_or_as_their_first_word(gateway: str) -> None:
    assert _tools(invoke("tools", "--url", gateway, "--json")) == _tools(
        invoke("tools", gateway, "--json"))
    by_option = invoke("call", "--url", gateway, "payments.lookup", GOOD_ARGS, "--json")
    by_word = invoke("call", gateway, "payments.lookup", GOOD_ARGS, "--json")
    assert (by_option.exit_code, by_word.exit_code) == (0, 0), by_option.output
    assert json.loads(by_option.stdout)["result"] == json.loads(by_word.stdout)["result"]


@pytest.mark.parametrize("flag", ["--url", "--origin"])
def test_conformance_proxy_takes_url_and_still_origin(flag: str) -> None:
    result = invoke("conformance", "proxy", flag, "http://127.0.0.1:9/mcp", "--app", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "cli.bad_target"


# --- the contracts group -----------------------------------------------------------------------


def test_contracts_validate_and_the_top_level_validate_give_the_same_answer(
        examples_dir: Path) -> None:
    contract = str(examples_dir / "payments.lookup.json")
    grouped = invoke("contracts", "validate", contract, BAD_ARGS, "--json")
    alias = invoke("validate", contract, BAD_ARGS, "--json")
    assert (grouped.exit_code, alias.exit_code) == (1, 1)
    assert grouped.stdout == alias.stdout
    assert [e["path"] for e in json.loads(grouped.stdout)["errors"]] == [
        "$.include_legs", "$.reference", "$.urgent"]


def test_contracts_diff_and_the_top_level_diff_give_the_same_verdict(examples_dir: Path) -> None:
    before, after = (str(examples_dir / f"db.query-{v}.json") for v in ("3.0.0", "4.0.0"))
    grouped = invoke("contracts", "diff", before, after, "--fail-on", "major", "--json")
    alias = invoke("diff", before, after, "--fail-on", "major", "--json")
    assert (grouped.exit_code, alias.exit_code) == (1, 1)
    assert grouped.stdout == alias.stdout and json.loads(grouped.stdout)["bump"] == "major"


def test_contracts_repair_prints_the_repaired_arguments_and_exits_on_what_remains(
        examples_dir: Path) -> None:
    contract = str(examples_dir / "payments.lookup.json")
    result = invoke("contracts", "repair", contract, BAD_ARGS)
    assert result.exit_code == 1  # include_legs and reference stay invalid
    assert json.loads(result.stdout) == {"include_legs": "yes", "reference": "PMT771"}
    assert "repaired $.urgent: drop.additional_property" in result.stderr.splitlines()
    as_json = invoke("contracts", "repair", contract, BAD_ARGS, "--json")
    assert json.loads(as_json.stdout) == json.loads(
        invoke("validate", contract, BAD_ARGS, "--repair", "--json").stdout)
    fine = invoke("contracts", "repair", contract, '{"reference": "PMT-771", "x": 1}')
    assert (fine.exit_code, json.loads(fine.stdout)) == (
        0, {"reference": "PMT-771", "include_legs": False})  # x dropped, the default filled


def test_the_contracts_group_lists_validate_repair_diff_and_export() -> None:
    assert sorted(cli.commands["contracts"].commands) == [  # type: ignore[attr-defined]
        "diff", "export", "repair", "validate"]


# --- one JSON error object ---------------------------------------------------------------------


@pytest.mark.parametrize(("args", "reason", "detail"), [
    (("tools", "--bogus", "--json"), "no_such_option", {"option": "--bogus"}),
    (("contracts", "validate", "--json"), "missing_parameter", {"param": "CONTRACT_OR_SCHEMA"}),
    (("tools", "--era", "2024-01-01", "--json"), "bad_parameter", {"param": "--era"}),
    (("contracts", "validat", "--json"), "no_such_command", {"name": "validat"}),
    (("--json", "nothing"), "no_such_option", {"option": "--json"}),
    (("calls", "--limit", "0", "--json"), "bad_parameter", {"param": "--limit"}),
])
def test_a_usage_error_under_json_is_the_error_object_with_code_cli_usage(
        args: tuple[str, ...], reason: str, detail: dict[str, str]) -> None:
    done = toolkeeper(*args)
    assert done.returncode == 2
    assert done.stderr == ""
    error = json.loads(done.stdout)["error"]
    assert set(error) == {"code", "message", "data"}
    assert (error["code"], error["data"]["reason"]) == ("cli.usage", reason)
    assert detail.items() <= error["data"].items()


def test_a_bad_choice_names_the_choices_and_the_command() -> None:
    data = json.loads(toolkeeper("tools", "--era", "x", "--json").stdout)["error"]["data"]
    assert data["command"] == "toolkeeper tools"
    assert data["choices"][:3] == ["auto", "modern", "legacy"]


def test_without_json_a_usage_error_stays_click_text_on_stderr_exit_2() -> None:
    done = toolkeeper("tools", "--bogus")
    assert (done.returncode, done.stdout) == (2, "")
    assert "No such option: --bogus" in done.stderr or "No such option '--bogus'" in done.stderr


def test_json_after_double_dash_belongs_to_the_stdio_command_not_to_toolkeeper() -> None:
    done = toolkeeper("tools", "--bogus", "--", "server", "--json")
    assert (done.returncode, done.stdout) == (2, "")
    assert "Usage:" in done.stderr


def test_usage_errors_under_json_use_the_same_shape_in_process() -> None:
    result = invoke("contracts", "nope", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "cli.usage"


def _contract(version: str, required: list[str]) -> dict[str, Any]:
    return {"name": "payments.lookup", "version": version, "title": "Look up a payment",
            "description": "Returns a payment.", "dataClassification": "internal",
            "sideEffect": "read",
            "inputSchema": {"type": "object", "required": required,
                            "properties": {p: {"type": "string"} for p in required}}}


def test_a_publish_refusal_under_json_is_the_error_object_with_the_guard_rule_as_code(
        tmp_path: Path) -> None:
    registry = ("--registry", f"sqlite:///{tmp_path / 'r.db'}")
    first, breaking = tmp_path / "v1.json", tmp_path / "v11.json"
    first.write_text(json.dumps(_contract("1.0.0", ["reference"])))
    breaking.write_text(json.dumps(_contract("1.1.0", ["reference", "currency"])))
    assert invoke("publish", str(first), *registry).exit_code == 0
    for args in (("publish", str(breaking)), ("publish", "--dry-run", str(breaking))):
        result = invoke(*args, *registry, "--json")
        assert result.exit_code == 1
        error = json.loads(result.stdout.splitlines()[-1])["error"]
        assert error["code"] == "publish.bump_required"
        assert (error["data"]["rule"], error["data"]["bump"],
                error["data"]["minimumVersion"]) == ("publish.bump_required", "major", "2.0.0")
        assert error["data"]["changes"] == error["changes"]
        assert {"code", "message", "data"} <= set(error)


# --- completion --------------------------------------------------------------------------------


def test_bash_completion_source_is_a_script_for_the_toolkeeper_command() -> None:
    done = toolkeeper(env={"_TOOLKEEPER_COMPLETE": "bash_source"})
    assert done.returncode == 0
    assert "_toolkeeper_completion()" in done.stdout
    assert "complete -o nosort -F _toolkeeper_completion toolkeeper" in done.stdout


@pytest.mark.parametrize(("words", "cword", "expected"), [
    ("toolkeeper contracts ", "2", ["plain,diff", "plain,export", "plain,repair",
                                    "plain,validate"]),
    ("toolkeeper tools --era ", "3", ["plain,auto", "plain,modern", "plain,legacy"]),
])
def test_bash_completion_completes_commands_and_era_names(
        words: str, cword: str, expected: list[str]) -> None:
    done = toolkeeper(env={"_TOOLKEEPER_COMPLETE": "bash_complete", "COMP_WORDS": words,
                           "COMP_CWORD": cword})
    assert done.returncode == 0
    assert done.stdout.split() == expected
