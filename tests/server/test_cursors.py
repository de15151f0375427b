"""``tools/list`` cursors on their own: a cursor names a page of one view for one principal,
until it expires; any other token, even an authentic one, is refused with a re-list."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_kit import USER, contract

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.sealing import Sealer
from toolkeeper.server.cursors import (
    CURSOR_PURPOSE,
    ListCursors,
    _principal_digest,  # white-box: what a cursor is bound to
)
from toolkeeper.server.views import View

SEALER = Sealer([bytes(range(32))])
VIEW = View.build(tuple(contract(f"t{i}", "1.0.0", {"type": "object"}) for i in range(5)), 2)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _reason(cursors: ListCursors, cursor: Any, view: View = VIEW) -> str:
    with pytest.raises(JsonRpcError) as caught:
        cursors.open(cursor, view, USER)
    assert caught.value.rpc_code == -32602
    assert caught.value.rpc_data["relist"] is True
    return caught.value.rpc_data["reason"]  # type: ignore[no-any-return]


def test_a_view_longer_than_the_page_size_has_a_digest_and_its_pages() -> None:
    assert [len(p.tools_json) > 2 for p in VIEW.pages] == [True, True, True]
    assert len(VIEW.digest) == 32
    assert View.build(VIEW.specs).digest == "" and len(View.build(VIEW.specs).pages) == 1


def test_the_digest_changes_with_the_page_size_and_the_tools() -> None:
    assert View.build(VIEW.specs, 3).digest != VIEW.digest
    assert View.build(VIEW.specs[:4], 2).digest != VIEW.digest
    assert View.build(VIEW.specs, 2).digest == VIEW.digest


def test_a_cursor_opens_to_its_page_until_it_expires() -> None:
    clock = Clock()
    cursors = ListCursors(SEALER, ttl_s=60.0, clock=clock)
    cursor = cursors.seal(VIEW, USER, 2)
    clock.now += 59.0
    assert cursors.open(cursor, VIEW, USER) == 2
    clock.now += 1.0
    assert _reason(cursors, cursor) == "expired"


def test_a_token_sealed_for_another_purpose_is_not_a_cursor() -> None:
    clock = Clock()
    cursors = ListCursors(SEALER, clock=clock)
    binding = {"principal": _principal_digest(USER), "generation": VIEW.digest}
    token = SEALER.seal("tools/call", binding, 1, ttl_s=60.0, now=clock())
    assert _reason(cursors, token) == "purpose_mismatch"


@pytest.mark.parametrize("page", [0, 3, "1", 1.0, None], ids=["first", "past-end", "text",
                                                              "float", "null"])
def test_an_authentic_cursor_naming_no_later_page_is_malformed(page: Any) -> None:
    clock = Clock()
    binding = {"principal": _principal_digest(USER), "generation": VIEW.digest}
    token = SEALER.seal(CURSOR_PURPOSE, binding, page, ttl_s=60.0, now=clock())
    assert _reason(ListCursors(SEALER, clock=clock), token) == "malformed"
