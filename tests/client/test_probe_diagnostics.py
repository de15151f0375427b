"""Diagnostics that name the cause, each by its code: a target silent to both bounded probes
is ``client.timeout`` (verdict ``unreachable.timeout``), a modern-only server's -32022 to
``initialize`` is ``era.legacy_refused``, a stdio command that cannot start is
``client.spawn_failed`` with the OS error, and a message nested past the 64-level bound is
``client.too_deep`` with the bound (on stdio the session carries on)."""

from __future__ import annotations

import asyncio
import errno
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from wire_server_kit import start

from toolkeeper.cli.main import cli
from toolkeeper.client import (
    ClientTimeouts,
    EraSelectionError,
    Target,
    connect,
)
from toolkeeper.client.stdio_transport import StdioTransport
from toolkeeper.errors import ClientConnectionError, ClientTimeoutError, ProtocolViolationError
from toolkeeper.protocol.versions import Era

FAST = ClientTimeouts(probe_s=0.5, request_s=5.0, close_s=1.0)

DEEP_THEN_PLAIN = """
import json, sys
for n, line in enumerate(sys.stdin):
    rid = json.loads(line)["id"]
    value = "bottom"
    for _ in range(70 if n == 0 else 1):
        value = [value]
    print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"v": value}}), flush=True)
"""


def _connect(target: Target, **options: Any) -> None:
    async def run() -> None:
        session = await connect(target, timeouts=FAST, **options)
        await session.aclose()

    asyncio.run(run())


def test_a_silent_stdio_command_is_client_timeout_after_both_bounded_probes() -> None:
    with pytest.raises(ClientTimeoutError) as caught:
        _connect(Target.from_stdio(["sleep", "100"]), era="auto", legacy_allowed=True)
    decision = caught.value.data["decision"]
    assert caught.value.code == "client.timeout"
    assert decision["verdict"] == "unreachable.timeout"
    assert (decision["observation"]["outcome"], decision["legacyEvidence"]["failure"]) == (
        "timeout", "client.timeout")
    assert caught.value.data["timeoutS"] == FAST.probe_s


def test_an_sse_stream_of_comments_only_is_client_timeout(tmp_path: Path) -> None:
    with start("sse-comments", tmp_path) as (url, _), \
            pytest.raises(ClientTimeoutError) as caught:
        _connect(Target.from_url(url), era="auto", legacy_allowed=True)
    assert caught.value.data["decision"]["verdict"] == "unreachable.timeout"


def test_a_modern_only_servers_refusal_of_initialize_is_era_legacy_refused(
        tmp_path: Path) -> None:
    with start("modern-only", tmp_path) as (url, _):
        with pytest.raises(EraSelectionError) as caught:
            _connect(Target.from_url(url), era="legacy")
        decision = caught.value.data["decision"]
        assert decision["verdict"] == "era.legacy_refused"
        assert decision["legacyEvidence"]["errorCode"] == -32022
        assert "--era auto" in caught.value.data["remedy"]

        async def auto() -> Era:
            async with await connect(Target.from_url(url), timeouts=FAST) as session:
                return session.era

        assert asyncio.run(auto()) is Era.MODERN


def test_a_stdio_command_that_cannot_start_is_spawn_failed_with_the_os_error() -> None:
    with pytest.raises(ClientConnectionError) as caught:
        _connect(Target.from_stdio(["/nonexistent/toolkeeper-no-such-server"]))
    assert caught.value.code == "client.spawn_failed"
    assert caught.value.data == {"kind": "FileNotFoundError", "errno": errno.ENOENT,
                                 "error": "No such file or directory"}


def test_the_tools_command_reports_spawn_failed_for_a_missing_command() -> None:
    result = CliRunner().invoke(cli, ["tools", "--json", "--stdio", "--",
                                      "/nonexistent/toolkeeper-no-such-server"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "client.spawn_failed"


def test_a_stdio_line_past_the_depth_bound_is_too_deep_and_the_session_carries_on() -> None:
    async def run() -> tuple[ProtocolViolationError, Any]:
        transport = await StdioTransport.start([sys.executable, "-c", DEEP_THEN_PLAIN],
                                               env=None, max_line_bytes=1 << 20, close_s=1.0)
        try:
            with pytest.raises(ProtocolViolationError) as caught:
                await transport.exchange({"jsonrpc": "2.0", "id": 1, "method": "x"}, {},
                                         timeout=5.0, max_bytes=1 << 20)
            after = await transport.exchange({"jsonrpc": "2.0", "id": 2, "method": "x"}, {},
                                             timeout=5.0, max_bytes=1 << 20)
        finally:
            await transport.aclose()
        return caught.value, after

    error, after = asyncio.run(run())
    assert (error.code, error.data) == ("client.too_deep", {"maxDepth": 64})
    assert after.messages[-1]["result"] == {"v": ["bottom"]}


def test_an_http_answer_past_the_depth_bound_is_too_deep(tmp_path: Path) -> None:
    with start("deep", tmp_path) as (url, _), \
            pytest.raises(EraSelectionError) as caught:
        _connect(Target.from_url(url), era="modern")
    observation = caught.value.data["decision"]["observation"]
    assert (observation["outcome"], observation["detail"]) == ("unrecognised",
                                                               "client.too_deep")
