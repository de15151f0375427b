"""The cursor caches of a paged ``tools/list``: a later page's cursor is reused for a bounded
part of its life, and a cursor that opened once is not decrypted again, yet neither cache ever
accepts a cursor the sealer would refuse (another principal, an expired cursor, a changed
list), and each holds a bounded number of entries."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_kit import USER, Driver, contract

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import build_gateway
from toolkeeper.server.cursors import ListCursors, reuse_window_s
from toolkeeper.server.views import View

KEY = bytes(range(32))
VIEW = View.build(tuple(contract(f"t{i}", "1.0.0", {"type": "object"}) for i in range(7)), 2)
CHANGED = View.build(VIEW.specs[:6], 2)
OWNER = Principal(USER.tenant, USER.scopes, USER.clearance, "key-1")
THIEF = Principal(USER.tenant, USER.scopes, USER.clearance, "key-2")
TTL = 600.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class CountingSealer(Sealer):
    """A Sealer that counts the tokens it decrypts and seals."""

    def __init__(self, keys: list[bytes]) -> None:
        super().__init__(keys)
        self.opened = 0
        self.sealed = 0

    def open_expiring(self, token: str, purpose: str, binding: Any, *,
                      now: float) -> tuple[Any, float]:
        self.opened += 1
        return super().open_expiring(token, purpose, binding, now=now)

    def seal(self, purpose: str, binding: Any, payload: Any, *, ttl_s: float,
             now: float) -> str:
        self.sealed += 1
        return super().seal(purpose, binding, payload, ttl_s=ttl_s, now=now)


def _cursors(**options: Any) -> tuple[ListCursors, CountingSealer, Clock]:
    sealer, clock = CountingSealer([KEY]), Clock()
    return ListCursors(sealer, ttl_s=TTL, clock=clock, **options), sealer, clock


def _reason(cursors: ListCursors, cursor: str, view: View = VIEW,
            principal: Principal = OWNER) -> str:
    with pytest.raises(JsonRpcError) as caught:
        cursors.open(cursor, view, principal)
    assert (caught.value.rpc_code, caught.value.rpc_data["relist"]) == (-32602, True)
    return caught.value.rpc_data["reason"]  # type: ignore[no-any-return]


def test_a_cursor_that_opened_once_is_not_decrypted_again() -> None:
    cursors, sealer, _ = _cursors()
    cursor = cursors.seal(VIEW, OWNER, 2)
    assert [cursors.open(cursor, VIEW, OWNER) for _ in range(3)] == [2, 2, 2]
    assert sealer.opened == 1


def test_the_next_cursor_is_reused_within_its_window_and_sealed_afresh_after() -> None:
    cursors, sealer, clock = _cursors()
    first = cursors.seal(VIEW, OWNER, 1)
    clock.now += reuse_window_s(TTL) - 0.001
    assert cursors.seal(VIEW, OWNER, 1) == first and sealer.sealed == 1
    clock.now += 0.001
    assert cursors.seal(VIEW, OWNER, 1) != first and sealer.sealed == 2


def test_the_reuse_window_is_a_tenth_of_the_ttl_and_at_most_a_minute() -> None:
    assert (reuse_window_s(60.0), reuse_window_s(3600.0)) == (6.0, 60.0)


def test_a_reused_cursor_keeps_the_expiry_it_was_sealed_with() -> None:
    cursors, _, clock = _cursors()
    sealed_at = clock.now
    first = cursors.seal(VIEW, OWNER, 1)
    clock.now += reuse_window_s(TTL) / 2
    assert cursors.seal(VIEW, OWNER, 1) == first
    clock.now = sealed_at + TTL - 0.001
    assert cursors.open(first, VIEW, OWNER) == 1
    clock.now = sealed_at + TTL
    assert _reason(cursors, first) == "expired"


def test_a_cursor_sealed_before_the_clock_went_back_is_not_reused() -> None:
    cursors, _, clock = _cursors()
    first = cursors.seal(VIEW, OWNER, 1)
    clock.now -= 1.0
    assert cursors.seal(VIEW, OWNER, 1) != first


def test_the_next_cursor_is_never_reused_for_another_principal_or_list() -> None:
    cursors, _, _ = _cursors()
    mine = cursors.seal(VIEW, OWNER, 1)
    theirs = cursors.seal(VIEW, THIEF, 1)
    assert theirs != mine
    assert _reason(cursors, mine, principal=THIEF) == "principal_mismatch"
    assert cursors.open(theirs, VIEW, THIEF) == 1
    changed = cursors.seal(CHANGED, OWNER, 1)
    assert changed != mine and cursors.open(changed, CHANGED, OWNER) == 1
    assert _reason(cursors, mine, view=CHANGED) == "generation_mismatch"


def test_an_accepted_cursor_is_refused_for_another_principal_afterwards() -> None:
    cursors, _, _ = _cursors()
    cursor = cursors.seal(VIEW, OWNER, 1)
    assert cursors.open(cursor, VIEW, OWNER) == 1
    assert _reason(cursors, cursor, principal=THIEF) == "principal_mismatch"
    assert cursors.open(cursor, VIEW, OWNER) == 1


def test_an_accepted_cursor_is_refused_once_it_expires() -> None:
    cursors, _, clock = _cursors()
    cursor = cursors.seal(VIEW, OWNER, 1)
    assert cursors.open(cursor, VIEW, OWNER) == 1
    clock.now += TTL
    assert _reason(cursors, cursor) == "expired"


def test_an_accepted_cursor_is_refused_for_a_changed_list() -> None:
    cursors, _, _ = _cursors()
    cursor = cursors.seal(VIEW, OWNER, 1)
    assert cursors.open(cursor, VIEW, OWNER) == 1
    assert _reason(cursors, cursor, view=CHANGED) == "generation_mismatch"


def test_an_accepted_cursor_opens_on_no_gateway_with_another_key() -> None:
    cursors, _, clock = _cursors()
    cursor = cursors.seal(VIEW, OWNER, 1)
    assert cursors.open(cursor, VIEW, OWNER) == 1
    other = ListCursors(Sealer([b"k" * 32]), ttl_s=TTL, clock=clock)
    assert _reason(other, cursor) == "unsealable"


def test_both_caches_hold_at_most_their_bound() -> None:
    cursors, _, _ = _cursors(max_cached=4)
    principals = [Principal(USER.tenant, USER.scopes, USER.clearance, f"key-{n}")
                  for n in range(10)]
    tokens = [cursors.seal(VIEW, principal, 1) for principal in principals]
    for token, principal in zip(tokens, principals, strict=True):
        assert cursors.open(token, VIEW, principal) == 1
    assert cursors.cache_sizes() == (4, 4)
    assert cursors.open(tokens[0], VIEW, principals[0]) == 1  # evicted: opened the long way


def test_a_cursor_accepted_before_a_publish_is_refused_after_it(registry: Registry) -> None:
    for index in range(25):
        registry.publish(contract(f"t{index:02d}", "1.0.0", {"type": "object"}))
    driver = Driver(build_gateway(registry, sealer=Sealer([KEY]), list_page_size=10,
                                  resolve_principal=lambda facts: USER).kernel)
    cursor = driver.request("tools/list")["result"]["nextCursor"]
    assert "tools" in driver.request("tools/list", cursor=cursor)["result"]
    registry.publish(contract("t00a", "1.0.0", {"type": "object"}))
    error = driver.request("tools/list", cursor=cursor)["error"]
    assert (error["code"], error["data"]["reason"], error["data"]["relist"]) == \
        (-32602, "generation_mismatch", True)


def test_a_cursor_one_principal_used_is_refused_to_another_on_the_same_gateway(
        registry: Registry) -> None:
    for index in range(25):
        registry.publish(contract(f"t{index:02d}", "1.0.0", {"type": "object"}))
    caller = [OWNER]
    driver = Driver(build_gateway(registry, sealer=Sealer([KEY]), list_page_size=10,
                                  resolve_principal=lambda facts: caller[0]).kernel)
    cursor = driver.request("tools/list")["result"]["nextCursor"]
    assert "tools" in driver.request("tools/list", cursor=cursor)["result"]
    caller[0] = THIEF
    error = driver.request("tools/list", cursor=cursor)["error"]
    assert (error["code"], error["data"]["reason"], error["data"]["relist"]) == \
        (-32602, "principal_mismatch", True)
    second = driver.request("tools/list")["result"]["nextCursor"]
    assert second != cursor  # the thief's own walk gets its own cursor
