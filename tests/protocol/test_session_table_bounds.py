"""The session table's per-principal bounds (clock and ids injected): a credential or tenant
past its count or byte bound loses its own least recently used sessions, never another's; a
principal without a credential is bounded by its tenant, an unbound session by the global
line only, which still evicts anyone's idlest when every principal is under its bounds."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from toolkeeper.protocol import LegacySession, SessionTable
from toolkeeper.protocol.sessions import SessionOwner


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1  # every admission and touch a second later than the last
        return self.now


def table(**bounds: Any) -> SessionTable:
    ids = (f"s{n}" for n in itertools.count())
    return SessionTable(clock=Clock(), new_id=lambda: next(ids), **bounds)


def admit(sessions: SessionTable, owner: SessionOwner | None, weight: int = 0) -> str:
    session = LegacySession(owner=owner, weight=weight)
    sessions.admit(session)
    assert session.id is not None
    return session.id


def live(sessions: SessionTable, *ids: str) -> list[bool]:
    return [sessions.remaining(i) is not None for i in ids]  # (remaining does not touch)


A1, A2, B1 = ("acme", "k1"), ("acme", "k2"), ("globex", "k3")


def test_a_credential_past_its_count_loses_its_own_oldest_not_an_older_one_of_another() -> None:
    sessions = table(max_per_credential=2, max_per_tenant=0)
    other, mine = admit(sessions, B1), [admit(sessions, A1) for _ in range(2)]
    same_tenant = admit(sessions, A2)
    newest = admit(sessions, A1)
    assert live(sessions, other, *mine, same_tenant, newest) == [True, False, True, True, True]


def test_a_touch_moves_a_session_to_the_back_of_its_principals_order() -> None:
    sessions = table(max_per_credential=2)
    first, second = admit(sessions, A1), admit(sessions, A1)
    assert sessions.get(first) is not None
    third = admit(sessions, A1)
    assert live(sessions, first, second, third) == [True, False, True]


def test_a_tenant_past_its_count_loses_its_oldest_of_any_credential_and_keyless_ones_count(
        ) -> None:
    sessions = table(max_per_credential=10, max_per_tenant=3)
    other = admit(sessions, B1)
    keyless = admit(sessions, ("acme", None))
    a1, a2 = admit(sessions, A1), admit(sessions, A2)
    assert live(sessions, other, keyless, a1, a2) == [True] * 4
    newest = admit(sessions, ("acme", None))
    assert live(sessions, other, keyless, a1, a2, newest) == [True, False, True, True, True]
    admit(sessions, A2)
    assert live(sessions, other, a1, a2) == [True, False, True]


def test_byte_bounds_evict_the_principals_own_sessions_first() -> None:
    sessions = table(max_bytes=1000, max_bytes_per_credential=100, max_bytes_per_tenant=150)
    other = admit(sessions, B1, weight=90)
    a1 = [admit(sessions, A1, weight=40) for _ in range(2)]
    third = admit(sessions, A1, weight=40)  # 120 > 100: its credential's oldest goes
    assert live(sessions, other, *a1, third) == [True, False, True, True]
    a2 = admit(sessions, A2, weight=80)  # the tenant's 80 + 80 > 150: acme's oldest go
    assert live(sessions, other, *a1, third, a2) == [True, False, False, True, True]
    assert sessions.weight == 90 + 40 + 80


def test_the_global_line_still_evicts_anyones_idlest_and_unbound_sessions_only_meet_it(
        ) -> None:
    sessions = table(max_sessions=3, max_per_credential=2, max_per_tenant=2)
    unbound = [admit(sessions, None) for _ in range(2)]
    assert live(sessions, *unbound) == [True, True]  # no principal bound applies to them
    a1 = admit(sessions, A1)
    b1 = admit(sessions, B1)  # the table is full: the idlest of all goes
    assert live(sessions, *unbound, a1, b1) == [False, True, True, True]


def test_zero_per_principal_bounds_leave_only_the_global_one() -> None:
    sessions = table(max_sessions=4, max_per_credential=0, max_bytes_per_credential=0,
                     max_per_tenant=0, max_bytes_per_tenant=0)
    ids = [admit(sessions, A1, weight=10**6) for _ in range(5)]  # 5 MB: under 16 MiB
    assert live(sessions, *ids) == [False] + [True] * 4


def test_a_removed_or_evicted_session_leaves_its_principals_count_so_it_may_open_more() -> None:
    sessions = table(max_per_credential=2)
    first, second = admit(sessions, A1), admit(sessions, A1)
    assert sessions.remove(first)
    third = admit(sessions, A1)
    assert live(sessions, second, third) == [True, True]
    ended: list[str] = []
    sessions.ended.append(ended.append)
    fourth = admit(sessions, A1)
    assert ended == [second] and live(sessions, third, fourth) == [True, True]


@pytest.mark.parametrize("name", ["max_per_credential", "max_bytes_per_credential",
                                  "max_per_tenant", "max_bytes_per_tenant"])
def test_a_negative_bound_is_a_value_error(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        SessionTable(**{name: -1})


def test_the_configuration_defaults_are_the_tables() -> None:
    from toolkeeper.config.definitions import default_of
    from toolkeeper.protocol import sessions as table_defaults

    assert {key: default_of(f"legacy.{key}") for key in (
        "max_sessions", "max_session_bytes", "max_sessions_per_credential",
        "max_session_bytes_per_credential", "max_sessions_per_tenant",
        "max_session_bytes_per_tenant")} == {
        "max_sessions": table_defaults.DEFAULT_MAX_SESSIONS,
        "max_session_bytes": table_defaults.DEFAULT_MAX_BYTES,
        "max_sessions_per_credential": table_defaults.DEFAULT_MAX_PER_CREDENTIAL,
        "max_session_bytes_per_credential": table_defaults.DEFAULT_MAX_BYTES_PER_CREDENTIAL,
        "max_sessions_per_tenant": table_defaults.DEFAULT_MAX_PER_TENANT,
        "max_session_bytes_per_tenant": table_defaults.DEFAULT_MAX_BYTES_PER_TENANT}
