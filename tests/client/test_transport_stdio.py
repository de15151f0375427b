"""The stdio transport: bounded waits, a server that dies is a connection error, server
requests are answered, and the server process is stopped by its pid."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.client import ClientConnectionError, ClientTimeoutError
from toolkeeper.client.raw import RawRequest
from toolkeeper.client.stdio_transport import StdioTransport
from toolkeeper.errors import ProtocolViolationError

KIT = str(Path(__file__).with_name("stdio_server_kit.py"))
REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _start(kind: str) -> StdioTransport:
    return await StdioTransport.start([sys.executable, KIT, kind], env=None,
                                      max_line_bytes=1 << 20, close_s=2.0)


def _exchange(kind: str, timeout: float = 5.0) -> tuple[Any, int]:
    async def run() -> tuple[Any, int]:
        transport = await _start(kind)
        try:
            return await transport.exchange(REQUEST, {}, timeout=timeout,
                                            max_bytes=1 << 20), transport.pid
        finally:
            await transport.aclose()

    return asyncio.run(run())


def test_a_server_that_never_answers_is_a_timeout_and_is_stopped_by_pid() -> None:
    pids: list[int] = []

    async def run() -> None:
        transport = await _start("silent")
        pids.append(transport.pid)
        try:
            await transport.exchange(REQUEST, {}, timeout=0.3, max_bytes=1 << 20)
        finally:
            await transport.aclose()

    with pytest.raises(ClientTimeoutError):
        asyncio.run(run())
    assert not _alive(pids[0])


def test_a_server_that_exits_is_a_connection_error() -> None:
    with pytest.raises(ClientConnectionError) as caught:
        _exchange("exits")
    assert caught.value.code == "client.connection"


def test_server_requests_are_answered_ping_with_a_result_and_the_rest_with_32601() -> None:
    exchange, pid = _exchange("asks-first")
    ping, roots = exchange.messages[-1]["result"]["answers"]
    assert ping == {"jsonrpc": "2.0", "id": "s1", "result": {}}
    assert roots["id"] == "s2" and roots["error"]["code"] == -32601
    assert not _alive(pid)


def test_responses_whose_ids_are_arrays_or_objects_are_ignored_and_the_real_answer_arrives(
) -> None:
    async def run() -> list[Any]:
        transport = await _start("stray-ids")
        try:
            answers = []
            for rid in (1, 2):
                exchange = await transport.exchange({**REQUEST, "id": rid}, {}, timeout=5.0,
                                                    max_bytes=1 << 20)
                answers.append(exchange.messages[-1]["result"])
            return answers
        finally:
            await transport.aclose()

    assert asyncio.run(run()) == [{"echo": 1}, {"echo": 2}]


def test_a_request_to_a_server_that_stops_reading_its_input_times_out() -> None:
    big = {**REQUEST, "params": {"pad": "x" * (4 << 20)}}  # more than any pipe buffer

    async def run() -> None:
        transport = await _start("deaf")
        try:
            async with asyncio.timeout(30):  # the test's own guard, far above the bound
                await transport.exchange(big, {}, timeout=1.0, max_bytes=1 << 20)
        finally:
            await transport.aclose()

    async def notify() -> None:
        transport = await _start("deaf")
        try:
            async with asyncio.timeout(30):
                await transport.notify({"jsonrpc": "2.0", "method": "n", "params": big},
                                       {}, timeout=1.0)
        finally:
            await transport.aclose()

    for attempt in (run, notify):
        with pytest.raises(ClientTimeoutError):
            asyncio.run(attempt())


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_server_writing_an_endless_line_is_too_large_and_closing_it_leaves_no_pipe_open(
        ) -> None:
    pids: list[int] = []
    left_open: list[set[str]] = []

    async def run() -> None:
        before = _open_fds()
        transport = await _start("endless-line")
        pids.append(transport.pid)
        try:
            await transport.exchange(REQUEST, {}, timeout=10.0, max_bytes=1 << 20)
        finally:
            await transport.aclose()
            await asyncio.sleep(0)  # the pipes' connection_lost callbacks run here
            left_open.append(_open_fds() - before)

    with pytest.raises(ProtocolViolationError) as caught:
        asyncio.run(run())
    assert caught.value.code == "client.too_large"
    assert not _alive(pids[0])
    assert left_open == [set()]


def test_a_raw_exchange_flooded_with_notifications_is_too_large_at_its_byte_bound() -> None:
    async def run() -> None:
        transport = await _start("notification-flood")
        try:
            await transport.send_raw(RawRequest(b'{"jsonrpc":"2.0","id":1,"method":"m"}'),
                                     timeout=60.0, max_bytes=1 << 20)
        finally:
            await transport.aclose()

    with pytest.raises(ProtocolViolationError) as caught:
        asyncio.run(run())
    assert (caught.value.code, caught.value.data) == ("client.too_large", {"maxBytes": 1 << 20})


def test_a_request_flooded_with_notifications_is_too_large_at_its_byte_bound() -> None:
    """The notifications collected while a request waits count against its byte bound, as
    an HTTP answer's bytes do: a server that floods them is refused, not read until the
    timeout."""
    async def run() -> None:
        transport = await _start("notification-flood")
        try:
            async with asyncio.timeout(30.0):
                await transport.exchange({"jsonrpc": "2.0", "id": 1, "method": "m"}, {},
                                         timeout=60.0, max_bytes=1 << 20)
        finally:
            await transport.aclose()

    with pytest.raises(ProtocolViolationError) as caught:
        asyncio.run(run())
    assert caught.value.code == "client.too_large"


def test_a_close_cancelled_while_it_waits_for_the_server_still_stops_it() -> None:
    """A server that ignores the end of its input is being waited for when the close is
    cancelled (a gateway shutting down cancels its sync tasks): the process is killed, not
    left running without its parent."""
    pids: list[int] = []

    async def run() -> int | None:
        transport = await StdioTransport.start([sys.executable, KIT, "deaf"], env=None,
                                               max_line_bytes=1 << 20, close_s=30.0)
        pids.append(transport.pid)
        closing = asyncio.create_task(transport.aclose())
        await asyncio.sleep(0)  # a yield, no wall time: the close now waits on the process
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        process = transport._process
        async with asyncio.timeout(10):
            return await process.wait()

    assert asyncio.run(run()) is not None
    assert not _alive(pids[0])
