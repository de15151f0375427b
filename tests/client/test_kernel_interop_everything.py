"""Issue 15 acceptance 3, second half: the kernel and ``toolkeeper tools``/``call`` against
``@modelcontextprotocol/server-everything`` (npm, pinned; started here over Streamable HTTP on
127.0.0.1 and over stdio). It speaks the legacy era only (its modern probe answer is no
JSON-RPC response): there the kernel lists, repairs, gives the model its turn and calls, and
strict modern selection refuses it rather than downgrading."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_everything_kit import everything_argv, everything_http
from kernel_live_kit import BOUNDS, toolkeeper_cli

from peer_kit import Peers
from toolkeeper.client import EraSelectionError, Target, connect
from toolkeeper.client.kernel import Kernel
from toolkeeper.client.kernel_outcome import CallOutcome
from toolkeeper.client.model import ScriptedModel
from toolkeeper.contracts.spec import SideEffect
from toolkeeper.protocol.versions import Era


@pytest.fixture(scope="module")
def everything(peers: Peers) -> Path:
    return peers.everything()


@pytest.fixture(scope="module")
def everything_url(everything: Path) -> Iterator[str]:
    with everything_http(everything) as url:
        yield url


async def _governed(target: Target, era: str) -> tuple[Era, list[CallOutcome], Any, Any]:
    model = ScriptedModel([{"message": "hello"}])
    async with await connect(target, era=era, legacy_allowed=True, timeouts=BOUNDS) as session:
        kernel = Kernel(session, model=model)
        tools = {t.name: t for t in await kernel.tools()}
        effects = {name: (tools[name].version, tools[name].side_effect)
                   for name in ("echo", "get-sum")}
        outcomes = [await kernel.call("get-sum", {"a": "2", "b": 3}),
                    await kernel.call("echo", {"message": 5})]
        return session.era, outcomes, effects, model.turns


def _check(era: Era, outcomes: list[CallOutcome], effects: Any, turns: Any) -> None:
    assert era is Era.LEGACY
    assert effects == {"echo": (None, SideEffect.READ), "get-sum": (None, SideEffect.READ)}
    total, echoed = outcomes
    assert [(r.path, r.rule) for r in total.repairs] == [("$.a", "coerce.string_to_number")]
    assert total.ok and total.result is not None and total.schema_version is None
    assert total.result["content"][0]["text"] == "The sum of 2 and 3 is 5."
    assert len(turns) == 1 and [(e.path, e.keyword) for e in turns[0].errors] == [
        ("$.message", "type")]
    assert echoed.ok and echoed.result is not None
    assert echoed.result["content"][0]["text"] == "Echo: hello"


@pytest.mark.parametrize("choice", ["legacy", "auto"])
def test_the_kernel_governs_calls_to_server_everything_over_http(everything_url: str,
                                                                 choice: str) -> None:
    _check(*asyncio.run(_governed(Target.from_url(everything_url), choice)))


def test_the_kernel_governs_calls_to_server_everything_over_stdio(everything: Path) -> None:
    target = Target.from_stdio(everything_argv(everything, "stdio"))
    _check(*asyncio.run(_governed(target, "legacy")))


def test_strict_modern_selection_refuses_server_everything_instead_of_downgrading(
        everything_url: str) -> None:
    async def strict() -> None:
        async with await connect(Target.from_url(everything_url), era="modern",
                                 timeouts=BOUNDS):
            pass

    with pytest.raises(EraSelectionError) as caught:
        asyncio.run(strict())
    assert caught.value.data["decision"]["era"] is None


def test_tools_and_call_commands_work_against_server_everything(everything_url: str) -> None:
    era = ["--era", "legacy"]
    listed = toolkeeper_cli("tools", everything_url, *era, "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    tools = {t["name"]: t["schemaVersion"] for t in json.loads(listed.stdout)["tools"]}
    assert tools["get-sum"] is None and tools["echo"] is None
    called = toolkeeper_cli("call", everything_url, "get-sum", '{"a": "40", "b": 2}', *era,
                            "--json")
    assert called.returncode == 0, called.stderr.decode()
    out = json.loads(called.stdout)
    assert (out["ok"], out["era"], out["schemaVersion"]) == (True, "2025-11-25", None)
    assert out["repairs"] == [{"path": "$.a", "rule": "coerce.string_to_number",
                               "before": "40", "after": 40}]
    refused = toolkeeper_cli("call", everything_url, "echo", '{"message": 5}', *era, "--json")
    assert refused.returncode == 1
    assert [(e["path"], e["keyword"]) for e in json.loads(refused.stdout)["errors"]] == [
        ("$.message", "type")]


def _listed_names(result: Any) -> set[str]:
    assert result.returncode == 0, result.stderr.decode()
    listed = json.loads(result.stdout)
    assert (listed["era"], listed["decision"]["verdict"]) == ("2025-11-25",
                                                               "legacy.initialized")
    return {t["name"] for t in listed["tools"]}


def test_the_tools_command_lists_server_everything_with_the_default_auto(
        everything: Path, everything_url: str) -> None:
    assert {"echo", "get-sum"} <= _listed_names(toolkeeper_cli("tools", everything_url,
                                                               "--json"))
    stdio = toolkeeper_cli("tools", "--json", "--stdio", "--",
                           *everything_argv(everything, "stdio"))
    assert {"echo", "get-sum"} <= _listed_names(stdio)


def test_the_tools_command_with_strict_refuses_server_everything_and_says_why(
        everything_url: str) -> None:
    refused = toolkeeper_cli("tools", everything_url, "--strict", "--json")
    assert refused.returncode == 2
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "client.era_unselected"
    assert error["data"]["decision"]["verdict"] == "refused.strict_unproven"
    assert error["data"]["decision"]["legacyEvidence"] is None  # never probed legacy
    assert "--strict" in error["data"]["remedy"]
    text = toolkeeper_cli("tools", everything_url, "--strict")
    assert text.returncode == 2 and b"--strict" in text.stderr
