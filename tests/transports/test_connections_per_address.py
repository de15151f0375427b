"""Open connections are capped per peer address (``server.max_connections_per_ip``, default a
quarter of ``max_connections``; :mod:`toolkeeper.transports.connection_bounds`): silent
connections from one address are answered 503 and closed past their address's share, so a
client from another address is still served, and with the share set to the whole cap (the
setting behind a reverse proxy) one address can hold every slot again.

Each server is a real ``python -m toolkeeper serve`` process listening on 127.0.0.1 only and
stopped by its pid; "another address" is a client socket bound to 127.0.0.2 as its source
(all of 127.0.0.0/8 is loopback). Waits are select loops bounded by a count of events and a
deadline.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import httpx

from process_kit import serving_gateway
from toolkeeper.transports.connection_bounds import per_ip_cap

CAP: Final = 100
SILENT: Final = 300
WATCH_S: Final = 10.0
"""The longest the refusals are waited for (the server refuses each one as it accepts it)."""
INIT: Final = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "per-address", "version": "1"}}}
LEGACY_HEADERS: Final = {"content-type": "application/json",
                         "accept": "application/json, text/event-stream"}


@contextmanager
def gateway(*options: str) -> Iterator[str]:
    """A gateway process with a cap of ``CAP`` connections and head and idle limits long
    enough that no silent connection is closed by them during a test; yields its URL."""
    with serving_gateway(["--registry", "memory:", "--port", "0", "--log-level", "warning",
                          "--max-connections", str(CAP), "--head-timeout", "120",
                          "--idle-timeout", "120", *options]) as url:
        yield url


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


@contextmanager
def silent_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections from 127.0.0.1 that never send a byte (connected before the
    block starts; closed after it)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.setblocking(False)
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def refused(socks: list[socket.socket], expected: int) -> dict[int, bytes]:
    """Watch ``socks`` until ``expected`` of them are closed by the server (or ``WATCH_S``
    passes): what the server sent on each closed one, by index."""
    received = {i: bytearray() for i in range(len(socks))}
    done: dict[int, bytes] = {}
    deadline = time.monotonic() + WATCH_S
    while len(done) < expected and time.monotonic() < deadline:
        open_ = {sock: i for i, sock in enumerate(socks) if i not in done}
        readable, _, _ = select.select(list(open_), [], [], 0.05)
        for sock in readable:
            index = open_[sock]
            try:
                while chunk := sock.recv(65536):
                    received[index] += chunk
            except BlockingIOError:
                continue
            except ConnectionResetError:
                pass
            done[index] = bytes(received[index])
    return done


def still_open(socks: list[socket.socket], closed: dict[int, bytes]) -> int:
    """How many of ``socks`` not in ``closed`` have nothing to read (neither data nor EOF)."""
    rest = [sock for i, sock in enumerate(socks) if i not in closed]
    readable, _, _ = select.select(rest, [], [], 0)
    return len(rest) - len(readable)


def initialize_from(url: str, source: str) -> int:
    """The status of a legacy ``initialize`` sent from a socket bound to ``source``."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=5) as http:
        response = http.post(url, headers=LEGACY_HEADERS, json=INIT)
        if response.status_code == 200:
            assert "mcp-session-id" in response.headers
            assert response.json()["result"]["protocolVersion"] == "2025-11-25"
        return response.status_code


def test_the_default_share_per_address_is_a_quarter_of_the_cap() -> None:
    assert [per_ip_cap(0, cap) for cap in (100, 1000, 3, 1)] == [25, 250, 1, 1]
    assert per_ip_cap(40, 100) == 40 and per_ip_cap(500, 100) == 100


def test_silent_connections_from_one_address_past_its_share_are_refused_and_another_is_served(
        ) -> None:
    share = per_ip_cap(0, CAP)
    with gateway() as url, silent_connections(port_of(url), SILENT) as socks:
        closed = refused(socks, SILENT - share)
        assert len(closed) == SILENT - share
        assert all(data.startswith(b"HTTP/1.1 503 ") and b"\r\nconnection: close\r\n" in data
                   for data in closed.values())
        assert still_open(socks, closed) == share
        assert initialize_from(url, "127.0.0.2") == 200  # room left under the cap
        assert initialize_from(url, "127.0.0.1") == 503  # its own address is full


def test_a_configured_share_holds_and_a_closed_connection_frees_its_slot() -> None:
    with gateway("--max-connections-per-ip", "10") as url, \
            silent_connections(port_of(url), 30) as socks:
        closed = refused(socks, 20)
        assert len(closed) == 20 and still_open(socks, closed) == 10
        assert initialize_from(url, "127.0.0.3") == 200
        held = next(i for i in range(len(socks)) if i not in closed)
        socks[held].close()  # one slot of 127.0.0.1 again, once the server sees the close
        statuses = (initialize_from(url, "127.0.0.1") for _ in range(50))  # round trips
        assert next((s for s in statuses if s != 503), 503) == 200


def test_with_the_share_set_to_the_cap_one_address_can_hold_every_slot() -> None:
    """The setting behind a reverse proxy (every connection from the proxy's address): the
    whole cap per address, so 300 silent connections leave no room for anyone, which is why
    the proxy must bound its own clients."""
    with gateway("--max-connections-per-ip", str(CAP)) as url, \
            silent_connections(port_of(url), SILENT) as socks:
        closed = refused(socks, SILENT - CAP)
        assert len(closed) == SILENT - CAP and still_open(socks, closed) == CAP
        assert initialize_from(url, "127.0.0.2") == 503
