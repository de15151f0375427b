"""Issue 15 acceptance 3, first half: the kernel and ``toolkeeper tools``/``call`` against a
server written with the official Python SDK (started here on 127.0.0.1, and over stdio), in
both eras. The server knows nothing of contract versions: the kernel lists, validates,
repairs, gives the model its turn and calls, and never sends a ``schemaVersion``."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_live_kit import BOUNDS, ENV, toolkeeper_cli

from process_kit import serving_announced_port
from toolkeeper.client import Target, connect
from toolkeeper.client.kernel import Kernel
from toolkeeper.client.kernel_outcome import CallOutcome
from toolkeeper.client.model import ScriptedModel
from toolkeeper.contracts.spec import SideEffect
from toolkeeper.protocol.versions import Era

SERVER = str(Path(__file__).resolve().parent / "kernel_sdk_server.py")
ERAS = [("modern", Era.MODERN), ("legacy", Era.LEGACY)]


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with serving_announced_port([sys.executable, SERVER, "http"], ENV) as url:
        yield url


class _Recording:
    """The session, with every ``tools/call``'s ``_meta`` kept."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.era = session.era
        self.version = session.version
        self.metas: list[Any] = []

    async def list_tools(self) -> Any:
        return await self._session.list_tools()

    async def call_tool(self, name: str, arguments: Any, *, meta: Any = None,
                        request_id: Any = None) -> Any:
        self.metas.append(meta)
        return await self._session.call_tool(name, arguments, meta=meta, request_id=request_id)

    def tools_changed(self) -> Any:
        return self._session.tools_changed()


async def _governed(target: Target, era: str) -> tuple[Era, list[CallOutcome], Any, Any]:
    model = ScriptedModel([{"reference": "PMT-771", "include_legs": True},
                           {"a": "two", "b": 3}])  # the second answer is still wrong
    async with await connect(target, era=era, legacy_allowed=True, timeouts=BOUNDS) as session:
        recording = _Recording(session)
        kernel = Kernel(recording, model=model)
        effects = {t.name: (t.version, t.side_effect) for t in await kernel.tools()}
        outcomes = [await kernel.call("lookup", {"reference": "PMT771", "include_legs": "true"}),
                    await kernel.call("add", {"a": "2", "b": 3}),
                    await kernel.call("add", {"a": "two", "b": 3})]
        return session.era, outcomes, effects, (recording.metas, model.turns)


def _check(era: Era, outcomes: list[CallOutcome], effects: Any, seen: Any, *, expected: Era
           ) -> None:
    metas, turns = seen
    assert era is expected
    assert effects == {"lookup": (None, SideEffect.READ), "add": (None, SideEffect.DESTRUCTIVE)}
    lookup, add, bad = outcomes
    assert [(r.path, r.rule) for r in lookup.repairs] == [
        ("$.include_legs", "coerce.string_to_boolean")]
    assert len(turns) == 2 and [(e.path, e.keyword) for e in turns[0].errors] == [
        ("$.reference", "pattern")]
    assert lookup.ok and lookup.result is not None
    assert lookup.result["structuredContent"] == {"reference": "PMT-771", "legs": 2}
    assert add.ok and add.result is not None and add.result["structuredContent"] == {"result": 5}
    assert not bad.sent and bad.model_turns == 1
    assert [(e.path, e.keyword) for e in bad.errors] == [("$.a", "type")]
    assert metas == [None, None]  # two calls sent, neither with an invented schemaVersion
    assert lookup.schema_version is None and lookup.to_dict()["schemaVersion"] is None


@pytest.mark.parametrize(("choice", "expected"), ERAS)
def test_the_kernel_governs_calls_to_an_sdk_server_over_http(sdk_url: str, choice: str,
                                                             expected: Era) -> None:
    _check(*asyncio.run(_governed(Target.from_url(sdk_url), choice)), expected=expected)


@pytest.mark.parametrize(("choice", "expected"), ERAS)
def test_the_kernel_governs_calls_to_an_sdk_server_over_stdio(choice: str, expected: Era
                                                              ) -> None:
    target = Target.from_stdio([sys.executable, SERVER, "stdio"], env=ENV)
    _check(*asyncio.run(_governed(target, choice)), expected=expected)


@pytest.mark.parametrize(("choice", "version"), [("modern", "2026-07-28"),
                                                 ("legacy", "2025-11-25")])
def test_tools_and_call_commands_work_against_an_sdk_server(sdk_url: str, choice: str,
                                                            version: str) -> None:
    era = ["--era", choice]
    listed = toolkeeper_cli("tools", sdk_url, *era, "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    assert [(t["name"], t["schemaVersion"]) for t in json.loads(listed.stdout)["tools"]] == [
        ("lookup", None), ("add", None)]
    called = toolkeeper_cli("call", sdk_url, "add", '{"a": "40", "b": 2}', *era, "--json")
    assert called.returncode == 0, called.stderr.decode()
    out = json.loads(called.stdout)
    assert (out["ok"], out["era"], out["schemaVersion"]) == (True, version, None)
    assert out["repairs"] == [{"path": "$.a", "rule": "coerce.string_to_integer",
                               "before": "40", "after": 40}]
    assert out["result"]["structuredContent"] == {"result": 42}
    refused = toolkeeper_cli("call", sdk_url, "lookup", '{"reference": "PMT771"}', *era,
                             "--json")
    assert refused.returncode == 1
    assert [(e["path"], e["keyword"]) for e in json.loads(refused.stdout)["errors"]] == [
        ("$.reference", "pattern")]
