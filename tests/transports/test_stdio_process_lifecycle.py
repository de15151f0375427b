"""The stdio transport's lifecycle, ``toolkeeper serve --stdio`` as a real process (signals,
a reader that closes stdout, handlers that print, end of input with calls in flight, a slow
plain handler) and the line framing in process (CRLF, batches, split values, huge ids, the
size bound's edge). Tests marked xfail(strict) pin known bugs; the others pin what holds.

Issue: "stdio: newline-delimited JSON-RPC on stdin/stdout, both eras (the first request
decides), logs on stderr." MCP stdio transport: "The server MUST NOT write anything to its
stdout that is not a valid MCP message"; shutdown: the client closes stdin, then SIGTERM, then
SIGKILL."""

from __future__ import annotations

import asyncio
import io
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stdio_process_kit import (
    BOUND_S,
    ENVELOPE,
    INIT,
    INITIALIZED,
    Served,
    call,
    encode,
    lines_are_json,
    run_redirected,
    spawn,
)
from stream_kit import Lines, tool_call
from stream_kit import demo_gateway as stream_demo_gateway

from toolkeeper.server import ToolContext
from toolkeeper.transports import serve_stdio
from toolkeeper.transports.runner import GRACEFUL_SHUTDOWN_S

EXIT_BOUND_S = 2.0
"""How long a server that should stop at once gets (the bug: it never does)."""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = spawn(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def _tools_list(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list",
            "params": {"_meta": ENVELOPE}}


# --- as a real process: bugs -----------------------------------------------------------------

def test_sigint_ends_the_stdio_server_gracefully_with_a_call_in_flight_and_stdin_open(
        served: Served) -> None:
    if not Path("/proc/self/task").is_dir():
        pytest.skip("needs Linux /proc to see the reader block on stdin")
    served.send(call("hunt.block", 1, progressToken="b"))
    assert served.message()["method"] == "notifications/progress"  # a call is in flight
    assert served.blocked_reading_stdin()  # as after any pause: Ctrl-C comes later
    served.process.send_signal(signal.SIGINT)
    # stdin is still open, so only the signal ends it: gracefully, as HTTP does (the call in
    # flight gets the grace period, then is cancelled), with status 0
    assert served.exited(GRACEFUL_SHUTDOWN_S + EXIT_BOUND_S) == 0


def test_a_handler_that_prints_does_not_corrupt_the_protocol_stream(served: Served) -> None:
    served.send(call("hunt.chatty", 1))
    served.close_stdin()
    lines = served.rest()
    assert served.exited() == 0
    assert lines_are_json(lines) == []  # every stdout line is one JSON-RPC message
    assert [json.loads(x)["id"] for x in lines] == [1]
    assert "stray output from a handler" in served.stderr()  # where stray output belongs


def test_a_reader_that_closes_stdout_costs_no_traceback_per_lost_response(
        served: Served) -> None:
    served.send(_tools_list(0))
    assert served.message()["id"] == 0
    assert served.process.stdout is not None
    served.process.stdout.close()  # the client stops reading
    served.send(*(call("hunt.boom", i) for i in range(1, 6)))
    # The first call logs its failure, then its response finds the pipe closed: the server
    # stops there (nobody can hear the rest), saying so once.
    assert served.wait_stderr("tool hunt.boom 1.0.0 raised", count=1)
    assert served.exited() == 1
    assert served.stderr().count("stdio: output failed (Broken pipe): stopping") == 1
    assert "BrokenPipeError" not in served.stderr()
    assert "Task exception was never retrieved" not in served.stderr()


def test_a_reader_that_closes_stdout_ends_the_server_while_stdin_stays_open(
        served: Served) -> None:
    served.send(_tools_list(0))
    assert served.message()["id"] == 0
    assert served.process.stdout is not None
    served.process.stdout.close()
    served.send(*(call("hunt.brief", i) for i in range(1, 6)))
    assert served.exited(EXIT_BOUND_S) is not None


def test_end_of_input_ends_the_server_within_a_grace_period_even_if_a_call_never_finishes(
        served: Served) -> None:
    served.send(call("hunt.block", 1, progressToken="b"))
    assert served.message()["method"] == "notifications/progress"
    served.close_stdin()
    assert served.exited(GRACEFUL_SHUTDOWN_S + EXIT_BOUND_S) is not None  # HTTP's grace bound


# --- as a real process: what held ------------------------------------------------------------

def test_end_of_input_still_writes_the_reply_of_a_call_in_flight_then_exits_0(
        served: Served) -> None:
    served.send(call("hunt.brief", 1, progressToken="p"))
    assert served.message()["method"] == "notifications/progress"  # it is running
    served.close_stdin()
    lines = served.rest()
    assert served.exited() == 0
    assert [json.loads(x)["id"] for x in lines] == [1]
    assert json.loads(lines[0])["result"]["content"][0]["text"] == "finished"


def test_a_blocked_call_does_not_hold_up_others_and_a_cancelled_one_is_never_answered(
        served: Served) -> None:
    served.send(call("hunt.block", 1, progressToken="b"))
    assert served.message()["params"]["progressToken"] == "b"
    served.send(_tools_list(2), call("hunt.brief", 3))
    assert [served.message()["id"], served.message()["id"]] == [2, 3]
    served.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": 1}})
    served.close_stdin()
    assert served.rest() == []  # no response to the cancelled call
    assert served.exited() == 0


def test_sigterm_ends_the_server_gracefully_with_a_call_in_flight(served: Served) -> None:
    served.send(call("hunt.block", 1, progressToken="b"))
    assert served.message()["method"] == "notifications/progress"
    served.process.send_signal(signal.SIGTERM)
    assert served.exited(GRACEFUL_SHUTDOWN_S + EXIT_BOUND_S) == 0


def test_a_handler_failure_reaches_stderr_only_never_stdout(served: Served) -> None:
    served.send(call("hunt.boom", 1))
    served.close_stdin()
    lines = served.rest()
    assert served.exited() == 0
    reply = json.loads(lines[0])
    assert reply["result"]["isError"] is True
    assert b"secret-detail-xyz" not in b"".join(lines) and b"Traceback" not in b"".join(lines)
    assert "secret-detail-xyz" in served.stderr()  # logged for the operator


def test_a_legacy_session_over_the_process_hears_progress_then_its_answer(
        served: Served) -> None:
    served.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "hunt.brief", "arguments": {}, "_meta": {"progressToken": 7}}})
    served.close_stdin()
    lines = served.rest()
    assert served.exited() == 0
    assert lines_are_json(lines) == []
    assert [json.loads(x).get("id", json.loads(x).get("method")) for x in lines] == [
        "init", "notifications/progress", 2]


# --- in process: line framing ----------------------------------------------------------------

def _run(raw: bytes, *, max_line_bytes: int = 4 * 1024 * 1024) -> list[dict[str, Any]]:
    stdout = io.BytesIO()
    asyncio.run(asyncio.wait_for(serve_stdio(
        stream_demo_gateway().kernel, stdin=io.BytesIO(raw), stdout=stdout,
        max_line_bytes=max_line_bytes), BOUND_S))
    return [json.loads(x) for x in stdout.getvalue().splitlines()]


def _ids(out: list[dict[str, Any]]) -> list[Any]:
    return [m.get("id") for m in out]


def _codes(out: list[dict[str, Any]]) -> list[int | None]:
    return [m["error"]["code"] if "error" in m else None for m in out]


def test_crlf_line_endings_and_a_last_line_without_newline_are_served() -> None:
    out = _run(encode(_tools_list(1))[:-1] + b"\r\n" + encode(_tools_list(2))[:-1])
    assert (_ids(out), _codes(out)) == ([1, 2], [None, None])


def test_a_huge_integer_id_is_echoed_exactly() -> None:
    huge = 123456789012345678901234567890
    out = _run(b'{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":%s}}\n'
               % (huge, json.dumps(ENVELOPE).encode()))
    assert (_ids(out), _codes(out)) == ([huge], [None])


@pytest.mark.parametrize("bad_id", [1.5, True, None, {"a": 1}])
def test_an_id_that_is_not_an_integer_or_string_is_invalid_request_with_id_null(
        bad_id: Any) -> None:
    out = _run(encode(_tools_list(bad_id), _tools_list(2)))
    assert (_ids(out), _codes(out)) == ([None, 2], [-32600, None])


def test_a_batch_is_refused_as_invalid_request_and_the_stream_goes_on() -> None:
    out = _run(b"[" + encode(_tools_list(1))[:-1] + b"]\n[]\n" + encode(_tools_list(3)))
    assert (_ids(out), _codes(out)) == ([None, None, 3], [-32600, -32600, None])


def test_a_json_value_split_across_lines_is_two_parse_errors_and_decides_no_era() -> None:
    out = _run(b'{"jsonrpc":"2.0",\n"id":1,"method":"ping"}\n' + encode(_tools_list(2)))
    assert (_ids(out), _codes(out)) == ([None, None, 2], [-32700, -32700, None])


def test_a_line_of_exactly_the_size_bound_is_served_and_one_byte_more_is_refused() -> None:
    one = encode(_tools_list(1))
    limit = len(one) - 1  # the line without its newline
    assert _codes(_run(one, max_line_bytes=limit)) == [None]
    out = _run(one + encode(_tools_list(2)), max_line_bytes=limit - 1)
    assert (_ids(out), _codes(out)) == ([None, None], [-32600, -32600])


def test_a_legacy_stream_ignores_client_responses_and_refuses_a_second_initialize() -> None:
    out = _run(encode(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 5, "result": {}},
                      {"jsonrpc": "2.0", "id": 6, "error": {"code": 1, "message": "x"}},
                      {**INIT, "id": "again"}, {"jsonrpc": "2.0", "id": 7, "method": "ping"}))
    assert (_ids(out), _codes(out)) == (["init", "again", 7], [None, -32600, None])


def test_an_enveloped_request_on_a_legacy_stream_is_invalid_request() -> None:
    out = _run(encode(INIT, INITIALIZED, _tools_list(3)))
    assert (_ids(out), _codes(out)) == (["init", 3], [None, -32600])


# --- in process: notifications of a finished request -----------------------------------------

def test_no_notification_of_a_request_is_written_after_its_response() -> None:
    late_done: list[asyncio.Task[None]] = []

    async def scenario() -> list[dict[str, Any]]:
        release = asyncio.Event()

        async def leaky(arguments: dict[str, Any], ctx: ToolContext) -> str:
            async def after() -> None:  # a background job the handler left behind
                await release.wait()
                await ctx.progress(5, None, "late")
                await ctx.log("info", "late")
            late_done.append(asyncio.ensure_future(after()))
            return "done"

        lines = Lines()
        run = asyncio.ensure_future(lines.server(stream_demo_gateway({"t.leaky": leaky})).run())
        lines.put(tool_call("t.leaky", 1, progressToken="tok",
                            **{"io.modelcontextprotocol/logLevel": "debug"}))
        await asyncio.wait_for(lines.wrote.wait(), BOUND_S)
        assert lines.answers(1)  # answered
        release.set()
        await asyncio.wait_for(late_done[0], BOUND_S)
        lines.put(None)
        await asyncio.wait_for(run, BOUND_S)
        return lines.out

    out = asyncio.run(scenario())
    assert [m.get("id", m.get("method")) for m in out] == [1]  # progress MUST stop at completion


# --- as a real process: unusable standard streams --------------------------------------------

def test_a_stdout_that_refuses_writes_ends_the_server_without_a_traceback(
        tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    done = run_redirected(tmp_path, ">/dev/full", encode(_tools_list(1)))
    assert done.returncode != 0
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize("redirect", ["<&-", ">&-"])
def test_a_closed_standard_stream_at_start_is_refused_without_a_traceback(
        tmp_path: Path, redirect: str) -> None:
    done = run_redirected(tmp_path, redirect, None if redirect == "<&-" else b"")
    assert done.returncode != 0
    assert b"Traceback" not in done.stderr
