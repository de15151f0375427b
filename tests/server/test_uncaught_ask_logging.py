"""An ask the client refuses and the handler does not catch is one WARNING line with its code,
not an ERROR with a traceback: the official ``mcp`` client in the legacy era (2025-11-25), over
real HTTP on 127.0.0.1, answers every elicitation with a JSON-RPC error; the handler (``greet``
of the ask kit) lets the :class:`~toolkeeper.errors.AskError` through, and its call ends as
the generic ``isError`` result. The traceback is logged at DEBUG only."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anyio
import mcp_types as types
import pytest
from ask_kit import Served, outcomes, serving
from mcp import Client
from mcp.client import ClientRequestContext

from toolkeeper.registry import Registry

BOUND_S = 60.0
CALLS = 150
LOGGER = "toolkeeper.server"


@pytest.fixture
def served(registry: Registry) -> Iterator[Served]:
    with serving(registry) as server:
        yield server


async def _refuse(context: ClientRequestContext, params: types.ElicitRequestParams
                  ) -> types.ErrorData:
    return types.ErrorData(code=-1, message="User refused")


async def _calls(url: str, count: int) -> list[bool]:
    refused = []
    with anyio.fail_after(BOUND_S):
        async with Client(url, mode="legacy", elicitation_callback=_refuse) as client:
            for _ in range(count):
                result = await client.call_tool("greet", {"a": 1})
                refused.append(result.is_error)
    return refused


def _ask_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and "ask.client_error" in r.getMessage()]


def test_150_refused_asks_log_150_warning_lines_and_no_traceback(
        served: Served, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    assert anyio.run(_calls, served.url, CALLS) == [True] * CALLS
    assert outcomes(served) == ["exception"] * CALLS
    lines = _ask_lines(caplog)
    assert [r.levelno for r in lines] == [logging.WARNING] * CALLS
    assert all(r.getMessage().startswith("tool greet 1.0.0: ") for r in lines)
    assert [r for r in caplog.records if r.exc_info or r.exc_text] == []
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert "Traceback" not in caplog.text


def test_at_debug_the_uncaught_ask_also_logs_its_traceback(
        served: Served, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    assert anyio.run(_calls, served.url, 1) == [True]
    traced = [r for r in caplog.records if r.name == LOGGER and r.exc_info]
    assert [(r.levelno, type(r.exc_info[1]).__name__) for r in traced if r.exc_info] == [
        (logging.DEBUG, "AskError")]
    assert [r.levelno for r in _ask_lines(caplog)] == [logging.WARNING]
