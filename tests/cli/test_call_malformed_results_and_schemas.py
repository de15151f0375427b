"""``toolkeeper call`` against a real HTTP server on 127.0.0.1 (``wire_server_kit``'s
``legacy-odd``): a result with a malformed content block is a protocol finding, never a
success; a listed schema with an external ``$ref`` is refused before anything is sent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))

from wire_server_kit import methods_seen, start

from toolkeeper.cli.main import cli


@pytest.mark.parametrize(("tool", "path"), [("weird", "$.result.content[0].type"),
                                            ("notext", "$.result.content[0].text")])
def test_a_malformed_content_block_is_a_protocol_finding_not_a_success(
        tmp_path: Path, tool: str, path: str) -> None:
    with start("legacy-odd", tmp_path) as (url, _):
        done = CliRunner().invoke(cli, ["call", url, tool, "{}", "--json"])
    assert done.exit_code == 2, done.output
    out = json.loads(done.stdout)
    assert out["ok"] is False and out["result"] is None
    assert out["error"]["code"] == "client.protocol_violation"
    assert [p.split(":")[0] for p in out["error"]["data"]["problems"]] == [path]


def test_a_well_formed_result_from_the_same_server_is_a_success(tmp_path: Path) -> None:
    with start("legacy-odd", tmp_path) as (url, _):
        done = CliRunner().invoke(cli, ["call", url, "quiet", "{}", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["result"]["content"] == [{"type": "text", "text": "ok"}]


def test_an_external_ref_in_the_listed_schema_is_refused_before_anything_is_sent(
        tmp_path: Path) -> None:
    with start("legacy-odd", tmp_path) as (url, log):
        done = CliRunner().invoke(cli, ["call", url, "remote", '{"a": 1}', "--json"])
        seen = methods_seen(log)
    assert done.exit_code == 2, done.output
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "client.schema_not_self_contained"
    assert (error["data"]["tool"], error["data"]["cause"]) == ("remote", "schema.ref_external")
    assert error["data"]["path"].startswith("$.properties.a")
    assert "tools/call" not in seen and "tools/list" in seen
