"""Legacy HTTP sessions are bounded in number and idle time (clock injected)."""

from __future__ import annotations

from kernel_kit import build_kernel, facts, initialize

from toolkeeper.protocol import (
    LegacySession,
    MethodTable,
    Reply,
    ServerIdentity,
    ServerKernel,
    SessionTable,
    encode_message,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_idle_session_expires_and_a_used_one_does_not() -> None:
    clock = Clock()
    ids = iter(["a", "b"])
    table = SessionTable(idle_timeout_s=10, clock=clock, new_id=lambda: next(ids))
    assert table.admit(LegacySession()) and table.admit(LegacySession())
    clock.now = 8
    assert table.get("a") is not None  # touched at 8
    clock.now = 15
    assert table.get("a") is not None and table.get("b") is None
    assert len(table) == 1


def test_a_full_table_refuses_new_sessions_until_one_expires() -> None:
    clock = Clock()
    table = SessionTable(max_sessions=1, idle_timeout_s=5, clock=clock)
    assert table.admit(LegacySession())
    assert not table.admit(LegacySession())
    clock.now = 6
    assert table.admit(LegacySession())


def test_initialize_on_a_full_server_is_503_and_mints_no_session() -> None:
    kernel = ServerKernel(MethodTable(), identity=ServerIdentity("s", "1"), capabilities={},
                          sessions=SessionTable(max_sessions=0))
    reply = kernel.handle_http(encode_message(initialize()), facts())
    assert isinstance(reply, Reply)
    assert (reply.status, reply.message["error"]["code"], reply.headers) == (503, -32603, ())


def test_session_ids_are_unguessable_hex() -> None:
    kernel = build_kernel()
    ids = set()
    for _ in range(20):
        reply = kernel.handle_http(encode_message(initialize()), facts())
        assert isinstance(reply, Reply)
        ids.add(reply.headers[0][1])
    assert len(ids) == 20 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
