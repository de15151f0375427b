"""``toolkeeper tools``: the listed tools with their versions (null when the server publishes
none), the era decision in ``--json``, and exit 2 on a connection or protocol failure."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import toolkeeper
from toolkeeper.cli.main import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))  # wire_server_kit

from wire_server_kit import start

_SRC = str(Path(toolkeeper.__file__).resolve().parent.parent)


def _demo_stdio(tmp_path: Path) -> list[str]:
    return ["env", f"PYTHONPATH={_SRC}", sys.executable, "-m", "toolkeeper", "serve", "--demo",
            "--stdio", "--registry", f"sqlite:///{tmp_path / 'registry.db'}"]


def test_tools_json_lists_every_demo_tool_with_its_version_and_the_era(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["tools", "--json", "--era", "legacy", "--stdio", "--",
                                      *_demo_stdio(tmp_path)], env=dict(os.environ))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["era"] == "2025-11-25"
    assert out["decision"]["verdict"] == "legacy.initialized"
    assert [(t["name"], t["schemaVersion"]) for t in out["tools"]] == [
        ("db.query", "4.0.0"), ("payments.lookup", "1.0.0"), ("tickets.create", "1.0.0")]


def test_tools_text_names_the_era_and_one_tool_per_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["tools", "--stdio", "--", *_demo_stdio(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# era 2026-07-28")
    assert [line.split("\t")[:2] for line in lines[1:]] == [
        ["db.query", "4.0.0"], ["payments.lookup", "1.0.0"], ["tickets.create", "1.0.0"]]


def test_tools_exits_2_with_a_stable_code_and_the_url_tried_when_nothing_listens() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    result = CliRunner().invoke(cli, ["tools", "--json", url])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert (error["code"], error["data"]["url"]) == ("client.connection_refused", url)
    text = CliRunner().invoke(cli, ["tools", url])
    assert text.exit_code == 2 and url in text.stderr


def test_the_url_a_refusal_names_carries_no_user_information_or_query() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(
        cli, ["tools", "--json", f"http://ada:s3cret@127.0.0.1:{port}/mcp?token=s3cret"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["data"]["url"] == f"http://127.0.0.1:{port}/mcp"
    assert "s3cret" not in result.stdout


def test_tools_refuses_a_target_that_is_not_a_url() -> None:
    result = CliRunner().invoke(cli, ["tools", "--json", "ftp://example.org/x"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "client.bad_target"


def test_a_refused_target_holds_no_credential_the_url_carried() -> None:
    for args in (["tools", "--json", "ftp://ops:hunter2-pass@example.org/x?token=tk-8812"],
                 ["call", "--json", "ftp://ops:hunter2-pass@example.org/x?token=tk-8812",
                  "echo", "{}"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2
        assert json.loads(result.stdout)["error"]["code"] == "client.bad_target"
        assert "hunter2-pass" not in result.output and "tk-8812" not in result.output


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999/mcp",
                                 "http://127.0.0.1:abc/mcp", "https://[zz]:1/mcp"])
def test_a_malformed_url_is_a_bad_target_with_exit_2_not_a_traceback(url: str) -> None:
    for args in (["tools", "--json", url], ["call", "--json", url, "echo", "{}"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, result.output
        assert json.loads(result.stdout)["error"]["code"] == "client.bad_target"


def test_tools_json_lists_a_dropped_tool_with_its_schema_path_and_reason(tmp_path: Path) -> None:
    with start("modern-bad-annotation", tmp_path) as (url, _):
        result = CliRunner().invoke(cli, ["tools", "--json", "--era", "modern", url])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [t["name"] for t in out["tools"]] == ["good"]
    assert [(d["name"], d["path"]) for d in out["dropped"]] == [("bad", ".properties.n")]
    assert isinstance(out["dropped"][0]["reason"], str) and out["dropped"][0]["reason"]


def test_tools_text_shows_a_dropped_tool_on_a_line_of_its_own(tmp_path: Path) -> None:
    with start("modern-bad-annotation", tmp_path) as (url, _):
        result = CliRunner().invoke(cli, ["tools", "--era", "modern", url])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines[1:]] == ["good", "# dropped bad",
                                                          "# warning good"]
    assert lines[2].split("\t")[1] == ".properties.n"


@pytest.mark.parametrize("extra", [["--era", "legacy"], ["--allow-legacy"]])
def test_strict_with_a_legacy_flag_is_refused_before_anything_is_sent(extra: list[str]) -> None:
    result = CliRunner().invoke(cli, ["tools", "--json", "--strict", *extra,
                                      "http://127.0.0.1:9/mcp"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "cli.bad_input"
