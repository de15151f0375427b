"""Paginated ``tools/list`` (both eras): a list longer than the page size is walked with sealed
cursors, every tool exactly once and in order; each page is serialized once per view; a cursor
from a changed list, for another principal, tampered or sealed under another key is refused
with -32602 and a re-list instruction, never answered with a page of another list."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_kit import USER, Driver, contract, gateway_for

from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import Gateway

PAGE = 10
NAMES = [f"t{index:02d}" for index in range(25)]
ERAS = {"modern": {}, "legacy": {"legacy": True},
        "unstructured": {"legacy": True, "legacy_version": "2025-03-26"}}
KEY = bytes(range(32))


@pytest.fixture
def estate(registry: Registry) -> Registry:
    """The test estate (calc, vault) plus 25 tools: 27 visible to USER, three pages of 10."""
    for name in NAMES:
        registry.publish(contract(name, "1.0.0", {"type": "object"}))
    return registry


def _paged(registry: Registry, principal: Principal = USER, **options: Any) -> Gateway:
    options.setdefault("sealer", Sealer([KEY]))
    options.setdefault("list_page_size", PAGE)
    return gateway_for(registry, principal=principal, **options)


def _walk(driver: Driver) -> list[list[str]]:
    """The names of each page, following nextCursor from the first page to the last."""
    pages: list[list[str]] = []
    params: dict[str, Any] = {}
    for _ in range(100):
        result = driver.request("tools/list", **params)["result"]
        pages.append([tool["name"] for tool in result["tools"]])
        if "nextCursor" not in result:
            return pages
        params = {"cursor": result["nextCursor"]}
    raise AssertionError("the walk never ended")


def _refusal(driver: Driver, cursor: Any) -> dict[str, Any]:
    error = driver.request("tools/list", cursor=cursor)["error"]
    assert (error["code"], error["data"]["path"], error["data"]["relist"]) == \
        (-32602, "$.params.cursor", True)
    return error["data"]  # type: ignore[no-any-return]


def _first_cursor(driver: Driver) -> str:
    cursor = driver.request("tools/list")["result"]["nextCursor"]
    assert isinstance(cursor, str)
    return cursor


@pytest.mark.parametrize("era", sorted(ERAS))
def test_a_multi_page_walk_returns_every_tool_exactly_once_in_order(estate: Registry, era: str
                                                                    ) -> None:
    whole = [t["name"] for t in Driver(gateway_for(estate).kernel, **ERAS[era]).tools()]
    pages = _walk(Driver(_paged(estate).kernel, **ERAS[era]))
    assert [len(page) for page in pages] == [10, 10, 7]
    assert [name for page in pages for name in page] == whole == sorted(whole)


@pytest.mark.parametrize("era", sorted(ERAS))
def test_each_page_carries_the_same_descriptors_as_the_one_page_list(estate: Registry, era: str
                                                                     ) -> None:
    whole = Driver(gateway_for(estate).kernel, **ERAS[era]).tools()
    driver = Driver(_paged(estate).kernel, **ERAS[era])
    first = driver.request("tools/list")["result"]
    second = driver.request("tools/list", cursor=first["nextCursor"])["result"]
    assert first["tools"] + second["tools"] == whole[:20]


def test_a_list_that_fits_one_page_has_no_cursor(estate: Registry) -> None:
    result = Driver(_paged(estate, list_page_size=27).kernel).request("tools/list")["result"]
    assert "nextCursor" not in result and len(result["tools"]) == 27


def test_modern_pages_keep_the_lists_cache_bookkeeping(estate: Registry) -> None:
    driver = Driver(_paged(estate, list_ttl_ms=5_000).kernel)
    second = driver.request("tools/list", cursor=_first_cursor(driver))["result"]
    assert (second["ttlMs"], second["cacheScope"], second["resultType"]) == \
        (5_000, "private", "complete")


def test_each_page_is_serialized_once_per_view(estate: Registry) -> None:
    gateway = _paged(estate)
    driver = Driver(gateway.kernel)
    first_walk = _walk(driver)
    pages = gateway.views.view(USER).pages
    assert _walk(driver) == first_walk and gateway.views.builds == 1
    assert [p.tools_json for p in gateway.views.view(USER).pages] == [p.tools_json for p in pages]
    assert all(again is before for again, before in
               zip(gateway.views.view(USER).pages, pages, strict=True))


@pytest.mark.parametrize("era", sorted(ERAS))
def test_a_cursor_from_before_a_publish_is_refused_with_a_relist(estate: Registry, era: str
                                                                 ) -> None:
    driver = Driver(_paged(estate).kernel, **ERAS[era])
    cursor = _first_cursor(driver)
    estate.publish(contract("t00a", "1.0.0", {"type": "object"}))  # lands on the first page
    assert _refusal(driver, cursor)["reason"] == "generation_mismatch"
    pages = _walk(driver)  # the re-list from the start sees the new list whole
    assert [n for page in pages for n in page].count("t00a") == 1


def test_a_cursor_from_a_list_that_now_fits_one_page_is_refused(estate: Registry) -> None:
    cursor = _first_cursor(Driver(_paged(estate).kernel))
    one_page = Driver(_paged(estate, list_page_size=100).kernel)
    assert _refusal(one_page, cursor)["reason"] == "generation_mismatch"


def test_a_cursor_is_refused_for_another_credential_of_the_same_entitlement(estate: Registry
                                                                             ) -> None:
    owner = Principal(USER.tenant, USER.scopes, USER.clearance, "key-1")
    other = Principal(USER.tenant, USER.scopes, USER.clearance, "key-2")
    sealer = Sealer([KEY])
    cursor = _first_cursor(Driver(_paged(estate, owner, sealer=sealer).kernel))
    thief = Driver(_paged(estate, other, sealer=sealer).kernel)
    assert _refusal(thief, cursor)["reason"] == "principal_mismatch"


def test_a_cursor_is_refused_for_another_tenant(estate: Registry) -> None:
    sealer = Sealer([KEY])
    cursor = _first_cursor(Driver(_paged(estate, sealer=sealer).kernel))
    other = Principal("globex", USER.scopes, USER.clearance)
    assert _refusal(Driver(_paged(estate, other, sealer=sealer).kernel), cursor)["reason"] in \
        {"principal_mismatch", "generation_mismatch"}


def test_a_tampered_cursor_is_refused(estate: Registry) -> None:
    driver = Driver(_paged(estate).kernel)
    cursor = _first_cursor(driver)
    flipped = cursor[:10] + ("A" if cursor[10] != "A" else "B") + cursor[11:]
    assert _refusal(driver, flipped)["reason"] == "unsealable"


@pytest.mark.parametrize("cursor", ["", "abc", 5, ["x"], {"page": 1}],
                         ids=["empty", "junk", "integer", "array", "object"])
def test_a_cursor_that_is_not_a_sealed_token_is_malformed(estate: Registry, cursor: Any) -> None:
    assert _refusal(Driver(_paged(estate).kernel), cursor)["reason"] == "malformed"


def test_a_cursor_sealed_under_another_key_is_refused(estate: Registry) -> None:
    cursor = _first_cursor(Driver(_paged(estate, sealer=Sealer([b"k" * 32])).kernel))
    assert _refusal(Driver(_paged(estate).kernel), cursor)["reason"] == "unsealable"


def test_a_replica_with_the_same_key_and_list_continues_the_walk(estate: Registry) -> None:
    first = Driver(_paged(estate, sealer=Sealer([KEY])).kernel)
    result = first.request("tools/list")["result"]
    replica = Driver(_paged(estate, sealer=Sealer([b"n" * 32, KEY])).kernel)  # rotated
    second = replica.request("tools/list", cursor=result["nextCursor"])["result"]
    assert [t["name"] for t in second["tools"]] == NAMES[9:19]  # after calc


def test_the_gateway_without_a_sealer_seals_with_an_ephemeral_key(estate: Registry) -> None:
    assert gateway_for(estate).sealer.ephemeral_key
    assert not _paged(estate).sealer.ephemeral_key


@pytest.mark.slow
def test_a_ten_thousand_tool_estate_lists_in_pages_and_a_publish_between_fetches_is_refused(
        ) -> None:
    registry = Registry.open("memory:")
    names = [f"bulk.{index:05d}" for index in range(10_000)]
    for name in names:
        registry.publish(contract(name, "1.0.0", {"type": "object"}))
    driver = Driver(_paged(registry, list_page_size=100).kernel)
    pages = _walk(driver)
    assert len(pages) == 100 and [n for page in pages for n in page] == names
    cursor = _first_cursor(driver)
    registry.publish(contract("bulk.zzzzz", "1.0.0", {"type": "object"}))  # on the last page
    assert _refusal(driver, cursor)["reason"] == "generation_mismatch"
    registry.close()
