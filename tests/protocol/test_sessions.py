"""Legacy HTTP sessions are kept least recently used first and bounded in number and idle
time (clock injected): a full table evicts its idlest session instead of refusing a new one."""

from __future__ import annotations

from typing import Any

import pytest
from kernel_kit import build_kernel, facts, initialize

from toolkeeper.protocol import (
    Accepted,
    LegacySession,
    MethodTable,
    Reply,
    ServerIdentity,
    ServerKernel,
    SessionTable,
    encode_message,
)
from toolkeeper.protocol.codes import INVALID_REQUEST


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def table(clock: Clock, *ids: str, admit: int, **options: Any) -> SessionTable:
    """A table minting ``ids`` in order, the first ``admit`` of them admitted one second apart
    from time 0."""
    names = iter(ids)
    out = SessionTable(clock=clock, new_id=lambda: next(names), **options)
    for _ in range(admit):
        out.admit(LegacySession())
        clock.now += 1
    return out


def test_an_idle_session_expires_and_a_used_one_does_not() -> None:
    clock = Clock()
    sessions = table(clock, "a", "b", admit=2, idle_timeout_s=10)  # a at 0, b at 1
    clock.now = 8
    assert sessions.get("a") is not None  # touched at 8
    clock.now = 15
    assert sessions.get("a") is not None and sessions.get("b") is None
    assert len(sessions) == 1


def test_a_full_table_evicts_the_least_recently_used_session_and_a_touch_moves_one_back(
) -> None:
    clock = Clock()
    sessions = table(clock, "a", "b", "c", "x", "y", admit=3, max_sessions=3)
    assert sessions.get("a") is not None  # order now b, c, a
    sessions.admit(LegacySession())  # x evicts b
    sessions.admit(LegacySession())  # y evicts c
    assert [sessions.get(s) is not None for s in ("a", "b", "c", "x", "y")] == [
        True, False, False, True, True]


def test_a_table_over_its_byte_budget_evicts_the_least_recently_used_sessions_first(
) -> None:
    clock = Clock()
    names = iter("abcd")
    sessions = SessionTable(max_bytes=100, clock=clock, new_id=lambda: next(names))
    for weight in (40, 40):  # a, b
        sessions.admit(LegacySession(weight=weight))
    assert sessions.get("a") is not None  # order now b, a
    sessions.admit(LegacySession(weight=30))  # c: 110 > 100 evicts b
    assert [sessions.get(s) is not None for s in "abc"] == [True, False, True]
    assert sessions.weight == 70
    sessions.admit(LegacySession(weight=500))  # d alone passes the budget: kept, the rest go
    assert [sessions.get(s) is not None for s in "abcd"] == [False, False, False, True]
    assert sessions.weight == 500 and sessions.remove("d") and sessions.weight == 0


def test_expired_and_removed_sessions_give_their_weight_back() -> None:
    clock = Clock()
    names = iter("abcd")
    sessions = SessionTable(max_bytes=100, idle_timeout_s=10, clock=clock,
                            new_id=lambda: next(names))
    for weight in (10, 20, 30):
        sessions.admit(LegacySession(weight=weight))
    assert sessions.weight == 60
    assert sessions.remove("b") and sessions.weight == 40
    clock.now = 11
    assert sessions.get("a") is None and sessions.weight == 30  # expired on lookup
    sessions.admit(LegacySession())  # d: reaps c
    assert sessions.weight == 0 and len(sessions) == 1


def test_a_session_weighs_the_json_of_the_capabilities_and_client_info_it_keeps() -> None:
    kernel = ServerKernel(MethodTable(), identity=ServerIdentity("s", "1"), capabilities={},
                          sessions=SessionTable(max_bytes=10_000))
    session_id = _open_session(kernel)
    session = kernel.sessions.get(session_id)
    assert session is not None
    assert session.weight == (len(encode_message(session.client_capabilities))
                              + len(encode_message(session.client_info or {}))) > 0
    assert kernel.sessions.weight == session.weight


def test_expired_sessions_are_reaped_from_the_front_when_a_session_is_admitted() -> None:
    clock = Clock()
    sessions = table(clock, "a", "b", "c", "d", "e", admit=3, idle_timeout_s=10)
    clock.now = 5
    assert sessions.get("a") is not None  # order b (seen at 1), c (2), a (5)
    clock.now = 11.5  # b has expired; c and a have not
    sessions.admit(LegacySession())  # d, at 11.5; b is reaped without being looked up
    assert len(sessions) == 3
    clock.now = 15.5  # c and a have expired too, d has not
    sessions.admit(LegacySession())  # e
    assert len(sessions) == 2
    assert [sessions.get(s) is not None for s in ("a", "b", "c", "d", "e")] == [
        False, False, False, True, True]


class CountedSession(LegacySession):
    """A session that counts how often its ``last_seen`` is read."""

    reads = 0

    @property
    def last_seen(self) -> float:
        CountedSession.reads += 1
        return self._seen

    @last_seen.setter
    def last_seen(self, value: float) -> None:
        self._seen = value


def test_admitting_into_a_table_of_live_sessions_inspects_only_the_front_one() -> None:
    clock = Clock()
    table = SessionTable(max_sessions=2_000, idle_timeout_s=10, clock=clock)
    for _ in range(1_000):
        table.admit(CountedSession())
    CountedSession.reads = 0
    table.admit(CountedSession())
    assert CountedSession.reads == 1  # the front session is live, so nothing behind it is expired


@pytest.mark.parametrize("max_sessions", [0, -1])
def test_a_table_that_could_hold_no_session_is_a_value_error(max_sessions: int) -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        SessionTable(max_sessions=max_sessions)


def _reply(kernel: ServerKernel, message: dict[str, Any], session_id: str | None = None
           ) -> Reply | Accepted:
    headers = ({} if session_id is None
               else {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"})
    outcome = kernel.handle_http(encode_message(message), facts(headers))
    assert isinstance(outcome, Reply | Accepted)
    return outcome


def _open_session(kernel: ServerKernel) -> str:
    reply = _reply(kernel, initialize())
    assert isinstance(reply, Reply) and reply.status == 200
    (_, session_id), = reply.headers
    ready = _reply(kernel, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
    assert isinstance(ready, Accepted)
    return session_id


def _ping(kernel: ServerKernel, session_id: str) -> tuple[int, int | None]:
    reply = _reply(kernel, {"jsonrpc": "2.0", "id": 7, "method": "ping"}, session_id)
    assert isinstance(reply, Reply)
    return reply.status, reply.message.get("error", {}).get("code")


def test_initialize_on_a_full_server_evicts_the_least_recently_used_session() -> None:
    kernel = ServerKernel(MethodTable(), identity=ServerIdentity("s", "1"), capabilities={},
                          sessions=SessionTable(max_sessions=2))
    first, second = _open_session(kernel), _open_session(kernel)
    assert _ping(kernel, first) == (200, None)  # first is now used more recently than second
    third = _open_session(kernel)  # admitted although the table was full
    assert _ping(kernel, second) == (404, INVALID_REQUEST)  # evicted: the client re-initializes
    assert _ping(kernel, first) == (200, None)
    assert _ping(kernel, third) == (200, None)
    assert len(kernel.sessions) == 2


def test_session_ids_are_unguessable_hex() -> None:
    kernel = build_kernel()
    ids = set()
    for _ in range(20):
        reply = kernel.handle_http(encode_message(initialize()), facts())
        assert isinstance(reply, Reply)
        ids.add(reply.headers[0][1])
    assert len(ids) == 20 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_every_way_a_session_ends_tells_the_end_listeners_once() -> None:
    clock = Clock()
    sessions = table(clock, "a", "b", "c", "d", "e", "f", admit=3, max_sessions=3,
                     idle_timeout_s=10)  # a at 0, b at 1, c at 2
    ended: list[str] = []
    sessions.ended.append(ended.append)
    assert sessions.remove("b") and not sessions.remove("b")  # deleted
    clock.now = 11.5
    assert sessions.remaining("a") is None  # expired: noticed without a request
    for _ in "def":  # f finds the table full (c, d, e): c is evicted
        sessions.admit(LegacySession())
    assert ended == ["b", "a", "c"]


def test_remaining_tells_a_sessions_time_left_without_touching_it() -> None:
    clock = Clock()
    sessions = table(clock, "a", admit=1, idle_timeout_s=10)  # a at 0
    clock.now = 4
    assert sessions.remaining("a") == 6
    clock.now = 10
    assert sessions.remaining("a") == 0  # not touched at 4: still due at 10
    assert sessions.remaining("nobody") is None
