"""``toolkeeper call`` (issue 15): the exact ``--json`` object and the exit codes 0/1/2/3, driven
in process over an in-memory session (the connection is the client's business, pinned by its
own tests), plus the failures that need no server at all."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kernel_live_kit import toolkeeper_cli
from kernel_session_kit import FakeSession, demo_descriptor

from toolkeeper.cli import call_cmd
from toolkeeper.cli.main import cli
from toolkeeper.errors import ClientTimeoutError

KEYS = {"ok", "era", "tool", "schemaVersion", "repairs", "errors", "relisted", "incompatible",
        "result", "error"}
PAYMENTS = demo_descriptor("payments.lookup-1.0.0.json")


class _Connected:
    def __init__(self, session: FakeSession) -> None:
        self.session = session

    async def __aenter__(self) -> FakeSession:
        return self.session

    async def __aexit__(self, *exc: object) -> None:
        return None


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSession]:
    fake = FakeSession()
    fake.publish(PAYMENTS)
    seen: list[Any] = []

    async def connect(target: Any, **options: Any) -> _Connected:
        seen.append((target, options))
        return _Connected(fake)

    monkeypatch.setattr(call_cmd, "connect", connect)
    yield fake


def _call(*args: str) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(cli, ["call", "http://127.0.0.1:9/mcp", *args, "--json"])
    return done.exit_code, json.loads(done.output)


def test_a_call_that_ran_prints_the_issue_object_and_exits_0(session: FakeSession) -> None:
    code, out = _call("payments.lookup", '{"reference": "PMT-771", "urgent": true}')
    assert code == 0 and set(out) == KEYS
    assert (out["ok"], out["era"], out["tool"], out["schemaVersion"]) == (
        True, "2026-07-28", "payments.lookup", "1.0.0")
    assert out["repairs"] == [
        {"path": "$.include_legs", "rule": "fill.default", "after": False},
        {"path": "$.urgent", "rule": "drop.additional_property", "before": True}]
    assert session.sent[0].arguments == {"reference": "PMT-771", "include_legs": False}
    assert (out["errors"], out["relisted"], out["incompatible"], out["error"]) == (
        [], False, None, None)
    assert out["result"]["isError"] is False


def test_an_is_error_result_exits_1(session: FakeSession) -> None:
    session.handler = lambda name, args: {"content": [{"type": "text", "text": "no"}],
                                          "isError": True}
    code, out = _call("payments.lookup", '{"reference": "PMT-771"}')
    assert code == 1 and out["ok"] is False and out["result"]["isError"] is True


def test_arguments_that_stay_invalid_exit_1_and_nothing_is_sent(session: FakeSession) -> None:
    code, out = _call("payments.lookup", '{"reference": "PMT771"}')
    assert code == 1 and session.sent == []
    assert [(e["path"], e["keyword"]) for e in out["errors"]] == [("$.reference", "pattern")]


def test_no_repair_leaves_every_error_in_place(session: FakeSession) -> None:
    done = CliRunner().invoke(cli, ["call", "http://127.0.0.1:9/mcp", "payments.lookup",
                                    '{"reference": "PMT-771", "urgent": true}', "--json",
                                    "--no-repair"])
    out = json.loads(done.output)
    assert done.exit_code == 1 and out["repairs"] == [] and session.sent == []
    assert [(e["path"], e["keyword"]) for e in out["errors"]] == [
        ("$.urgent", "additionalProperties")]


def test_a_contract_that_moved_incompatibly_exits_3(session: FakeSession) -> None:
    # The session lists 1.0.0, then refuses it: the one re-list finds 2.0.0 without the
    # include_legs the caller gave.
    moved = demo_descriptor("payments.lookup-1.0.0.json")
    moved["_meta"] = {"schemaVersion": "2.0.0"}
    del moved["inputSchema"]["properties"]["include_legs"]
    original = session.list_tools

    async def list_then_move() -> Any:
        listing = await original()
        session.publish(moved, retire_previous=True)
        return listing

    session.list_tools = list_then_move  # type: ignore[method-assign]
    code, out = _call("payments.lookup", '{"reference": "PMT-771", "include_legs": true}')
    assert code == 3 and out["relisted"] is True and out["ok"] is False
    assert (out["incompatible"]["from"], out["incompatible"]["to"]) == ("1.0.0", "2.0.0")
    assert {"rule", "path", "bump", "reason"} == set(out["incompatible"]["changes"][0])
    assert out["error"]["data"]["action"] == "relist"


def test_a_json_rpc_error_answer_exits_2(session: FakeSession) -> None:
    session.callable_versions["payments.lookup"] = set()  # every pin refused, twice
    code, out = _call("payments.lookup", '{"reference": "PMT-771"}')
    assert code == 2 and out["error"]["code"] == -32602


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_refused_connection_exits_2_with_the_client_error_code() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mcp"
    done = CliRunner().invoke(cli, ["call", url, "t", "{}", "--json"])
    out = json.loads(done.output)
    assert done.exit_code == 2 and set(out) == KEYS
    assert out["era"] is None and out["error"]["code"] == "client.connection_refused"
    assert out["error"]["data"]["url"] == url


@pytest.mark.parametrize(("words", "code"), [
    (["http://127.0.0.1:9/mcp", "t", "{"], "cli.bad_arguments"),
    (["t", "{}"], "cli.bad_input"),
    (["http://127.0.0.1:9/mcp", "\udcff", "{}"], "cli.bad_input"),
    (["http://127.0.0.1:9/mcp", "\udcff", "{"], "cli.bad_input"),
    (["http://127.0.0.1:9/mcp", "t", '{"a": "\udcff"}'], "cli.bad_arguments"),
])
def test_bad_command_lines_exit_2_with_a_stable_code_in_the_issue_object(words: list[str], code: str) -> None:
    done = CliRunner().invoke(cli, ["call", *words, "--json"])
    out = json.loads(done.output)
    assert done.exit_code == 2 and out["error"]["code"] == code
    assert set(out) == KEYS and (out["ok"], out["era"], out["result"]) == (False, None, None)


def test_a_call_over_stdio_to_the_demo_gateway_runs_with_its_repairs(tmp_path: Path) -> None:
    server = [sys.executable, "-m", "toolkeeper", "serve", "--demo", "--stdio", "--registry",
              f"sqlite:///{tmp_path / 'registry.db'}"]
    done = toolkeeper_cli("call", "--json", "--stdio", "--", *server, "payments.lookup",
                          '{"reference": "PMT-771", "include_legs": "true"}')
    out = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr.decode()
    assert (out["ok"], out["era"], out["schemaVersion"]) == (True, "2026-07-28", "1.0.0")
    assert [(r["path"], r["rule"]) for r in out["repairs"]] == [
        ("$.include_legs", "coerce.string_to_boolean")]
    assert len(out["result"]["structuredContent"]["legs"]) == 2


def test_a_connection_failure_after_the_era_was_selected_names_that_era(session: FakeSession
                                                                        ) -> None:
    write = {k: v for k, v in PAYMENTS.items() if k != "annotations"} | {"name": "t.write"}
    session.publish(write)  # no annotations: destructive, one attempt only
    session.fail_attempts = {1: (ClientTimeoutError("slow"), True)}
    code, out = _call("t.write", '{"reference": "PMT-771"}')
    assert code == 2 and set(out) == KEYS
    assert (out["era"], out["error"]["code"], out["ok"]) == ("2026-07-28", "client.timeout",
                                                             False)
    assert len(session.executed) == 1
