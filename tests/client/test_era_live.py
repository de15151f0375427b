"""Era selection on the wire (SPEC 5.1), against small servers on 127.0.0.1: a recognised
modern error never leads to a legacy fallback, a probe that times out is inconclusive, and a
legacy-only server gets the legacy era only when it is allow-listed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from wire_server_kit import methods_seen, start

from toolkeeper.client import (
    ClientSession,
    ClientTimeouts,
    EraSelectionError,
    Target,
    connect,
)
from toolkeeper.protocol.versions import Era

FAST = ClientTimeouts(probe_s=1.0, request_s=5.0, close_s=2.0)


def _connect(url: str, **options: Any) -> ClientSession:
    async def run() -> ClientSession:
        session = await connect(Target.from_url(url), timeouts=FAST, **options)
        await session.aclose()
        return session

    return asyncio.run(run())


def _refusal(url: str, **options: Any) -> dict[str, Any]:
    with pytest.raises(EraSelectionError) as caught:
        _connect(url, **options)
    assert caught.value.code == "client.era_unselected"
    decision: dict[str, Any] = caught.value.data["decision"]
    return decision


@pytest.mark.parametrize("choice", ["auto", "modern"])
def test_a_server_answering_32020_stays_modern_and_never_gets_initialize(
        tmp_path: Path, choice: Any) -> None:
    with start("modern-error", tmp_path) as (url, log):
        session = _connect(url, era=choice, legacy_allowed=True)
        assert session.era is Era.MODERN
        assert session.decision.verdict == "modern.recognised_error"
        assert session.decision.observation is not None
        assert session.decision.observation.error_code == -32020
        assert methods_seen(log) == ["server/discover"]


def test_a_probe_that_times_out_is_inconclusive_and_refused_without_the_allow_list(
        tmp_path: Path) -> None:
    with start("slow-discover", tmp_path) as (url, log):
        decision = _refusal(url, era="auto")
        assert decision["observation"]["outcome"] == "timeout"
        assert decision["verdict"] == "refused.legacy_not_allowed"
        assert decision["era"] is None and decision["legacyEvidence"] is None
        assert "initialize" not in methods_seen(log)


def test_a_refusal_of_the_legacy_probe_names_the_argument_and_the_flag_that_allow_it(
        tmp_path: Path) -> None:
    with start("slow-discover", tmp_path) as (url, _), \
            pytest.raises(EraSelectionError) as caught:
        _connect(url, era="auto")
    remedy = caught.value.data["remedy"]
    assert "legacy_allowed=True" in remedy and "--strict" in remedy


def test_strict_mode_refuses_an_inconclusive_probe_even_when_allow_listed(
        tmp_path: Path) -> None:
    with start("slow-discover", tmp_path) as (url, log):
        decision = _refusal(url, era="modern", legacy_allowed=True)
        assert decision["verdict"] == "refused.strict_unproven"
        assert "initialize" not in methods_seen(log)


def test_a_timed_out_probe_on_an_allow_listed_endpoint_gets_one_legacy_probe(
        tmp_path: Path) -> None:
    with start("slow-discover", tmp_path) as (url, log):
        session = _connect(url, era="auto", legacy_allowed=True)
        assert session.era is Era.LEGACY and session.version == "2025-11-25"
        decision = session.decision.to_json()
        assert decision["observation"]["outcome"] == "timeout"
        assert decision["legacyEvidence"]["negotiatedVersion"] == "2025-11-25"
        assert methods_seen(log)[:2] == ["server/discover", "initialize"]


def test_a_legacy_only_server_off_the_allow_list_is_refused(tmp_path: Path) -> None:
    with start("legacy-only", tmp_path) as (url, log):
        decision = _refusal(url, era="auto")
        assert decision["observation"]["outcome"] == "unrecognised"
        assert decision["observation"]["httpStatus"] == 400
        assert methods_seen(log) == ["server/discover"]


def test_a_legacy_only_server_on_the_allow_list_is_listed_and_called_in_the_legacy_era(
        tmp_path: Path) -> None:
    async def run(url: str) -> tuple[ClientSession, Any, Any]:
        async with await connect(Target.from_url(url), era="auto", legacy_allowed=True,
                                 timeouts=FAST) as session:
            listing = await session.list_tools()
            reply = await session.call_tool("echo", {"text": "hi"})
            return session, listing, reply

    with start("legacy-only", tmp_path) as (url, log):
        session, listing, reply = asyncio.run(run(url))
        assert session.era is Era.LEGACY
        assert session.decision.verdict == "legacy.initialized"
        assert [tool["name"] for tool in listing.tools] == ["echo"]
        assert reply.result is not None and reply.result["content"][0]["text"] == "hi"
        assert methods_seen(log) == ["server/discover", "initialize",
                                     "notifications/initialized", "tools/list", "tools/call"]


def test_a_discover_answer_over_the_byte_bound_is_unrecognised(tmp_path: Path) -> None:
    with start("huge-discover", tmp_path) as (url, _):
        decision = _refusal(url, era="auto")
        assert decision["observation"]["outcome"] == "unrecognised"
        assert decision["observation"]["detail"] == "client.too_large"


def test_the_tools_command_falls_back_to_legacy_by_default_and_strict_refuses_naming_the_flag(
        tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from toolkeeper.cli.main import cli

    with start("legacy-only", tmp_path) as (url, _):
        result = CliRunner().invoke(cli, ["tools", "--json", url])
        assert result.exit_code == 0, result.output
        listed = json.loads(result.stdout)
        assert listed["decision"]["verdict"] == "legacy.initialized"
        assert [(t["name"], t["schemaVersion"]) for t in listed["tools"]] == [("echo", None)]
        refused = CliRunner().invoke(cli, ["tools", "--json", "--strict", url])
        assert refused.exit_code == 2
        error = json.loads(refused.stdout)["error"]
        assert error["code"] == "client.era_unselected"
        assert error["data"]["decision"]["verdict"] == "refused.strict_unproven"
        assert "--strict" in error["data"]["remedy"]
