"""A listing with malformed descriptors (seed 004: a non-empty name unique in the list, an
object-rooted ``inputSchema``) keeps every other tool: each malformed one is dropped with its
path and reason, and a tool without a description is a warning, against a real HTTP server on
127.0.0.1 (``wire_server_kit``'s ``legacy-odd``)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))

from wire_server_kit import start

from toolkeeper.cli.main import cli
from toolkeeper.client import ClientTimeouts, Target, connect

FAST = ClientTimeouts(probe_s=2.0, request_s=5.0, close_s=2.0)
LISTED = ["echo", "quiet", "weird", "notext", "remote"]
DROPPED = [("broken", "$.tools[1].inputSchema"), ("", "$.tools[2].name"),
           ("echo", "$.tools[3].name")]


def test_the_session_drops_each_malformed_descriptor_and_keeps_the_rest(tmp_path: Path
                                                                          ) -> None:
    async def listing() -> object:
        async with await connect(Target.from_url(url), era="legacy", timeouts=FAST) as s:
            return await s.list_tools()

    with start("legacy-odd", tmp_path) as (url, _):
        listed = asyncio.run(listing())
    assert [t["name"] for t in listed.tools] == LISTED  # type: ignore[attr-defined]
    dropped = listed.dropped  # type: ignore[attr-defined]
    assert [(d["name"], d["path"]) for d in dropped] == DROPPED
    assert all(d["reason"] for d in dropped)
    assert [(w["name"], w["path"]) for w in listed.warnings] == [  # type: ignore[attr-defined]
        ("quiet", "$.tools[4].description")]


def test_tools_json_shows_the_other_tools_with_annotations_and_names_the_dropped_ones(
        tmp_path: Path) -> None:
    with start("legacy-odd", tmp_path) as (url, _):
        result = CliRunner().invoke(cli, ["tools", "--json", url])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [t["name"] for t in out["tools"]] == LISTED
    assert [(d["name"], d["path"]) for d in out["dropped"]] == DROPPED
    annotations = {t["name"]: t["annotations"] for t in out["tools"]}
    assert annotations["quiet"] == {"readOnlyHint": True, "title": "Quiet"}
    assert annotations["echo"] is None
    assert [(w["name"], w["path"]) for w in out["warnings"]] == [
        ("quiet", "$.tools[4].description")]


def test_tools_text_lists_the_other_tools_and_a_dropped_line_for_each_malformed_one(
        tmp_path: Path) -> None:
    with start("legacy-odd", tmp_path) as (url, _):
        result = CliRunner().invoke(cli, ["tools", url])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()[1:]
    assert [line.split("\t")[0] for line in lines] == [
        *LISTED, "# dropped broken", "# dropped ", "# dropped echo", "# warning quiet"]
    assert lines[len(LISTED)].split("\t")[1] == "$.tools[1].inputSchema"
