"""The kernel's tool cache: ``ttlMs`` and ``cacheScope`` in the modern era (mcp-wire 7.6), no
expiry in the legacy era, and what a call does with a stale listing (it keeps its pin)."""

from __future__ import annotations

import asyncio
from typing import Any

from kernel_session_kit import FakeSession, demo_descriptor

from toolkeeper.client.cache import MAX_TTL_MS, SharedListings, ToolCache, credential_key
from toolkeeper.client.kernel import Kernel
from toolkeeper.protocol.versions import Era

PAYMENTS = demo_descriptor("payments.lookup-1.0.0.json")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _session(era: Era = Era.MODERN, ttl_ms: int | None = 1000, scope: str = "private"
             ) -> FakeSession:
    session = FakeSession(era=era, ttl_ms=ttl_ms, cache_scope=scope)
    session.publish(PAYMENTS)
    return session


def _tools(kernel: Kernel) -> list[Any]:
    return asyncio.run(kernel.tools())


def test_a_modern_listing_is_served_from_the_cache_until_its_ttl_passes() -> None:
    clock, session = Clock(), _session(ttl_ms=1000)
    kernel = Kernel(session, clock=clock)
    _tools(kernel)
    clock.now += 0.999
    _tools(kernel)
    assert session.lists == 1
    clock.now += 0.001
    _tools(kernel)
    assert session.lists == 2


def test_a_zero_ttl_listing_is_stale_at_once_but_calls_keep_their_pin() -> None:
    clock, session = Clock(), _session(ttl_ms=0)
    kernel = Kernel(session, clock=clock)
    _tools(kernel)
    _tools(kernel)
    assert session.lists == 2
    outcome = asyncio.run(kernel.call("payments.lookup", {"reference": "PMT-771"}))
    assert outcome.ok and session.lists == 2  # the pin, not a re-list, guards the call
    assert session.sent[0].meta == {"schemaVersion": "1.0.0"}


def test_a_legacy_listing_never_expires_on_its_own() -> None:
    clock, session = Clock(), _session(era=Era.LEGACY, ttl_ms=None)
    kernel = Kernel(session, clock=clock)
    _tools(kernel)
    clock.now += 10 ** 6
    _tools(kernel)
    assert session.lists == 1
    kernel.tools_changed()
    _tools(kernel)
    assert session.lists == 2


def test_ttls_are_floored_at_zero_and_capped_at_a_day() -> None:
    clock = Clock()
    cache = ToolCache(modern=True, clock=clock)
    assert cache.store([PAYMENTS], -5, "private").stale_at == clock.now
    assert cache.store([PAYMENTS], 10 ** 12, "private").stale_at == clock.now + MAX_TTL_MS / 1000


def test_a_public_listing_is_shared_across_credentials_and_a_private_one_is_not() -> None:
    clock, shared = Clock(), SharedListings()
    public, private = _session(scope="public"), _session(scope="private")
    asyncio.run(Kernel(public, shared=shared, endpoint="a", token="t1", clock=clock).tools())
    asyncio.run(Kernel(public, shared=shared, endpoint="a", token="t2", clock=clock).tools())
    assert public.lists == 1
    asyncio.run(Kernel(private, shared=shared, endpoint="b", token="t1", clock=clock).tools())
    asyncio.run(Kernel(private, shared=shared, endpoint="b", token="t2", clock=clock).tools())
    asyncio.run(Kernel(private, shared=shared, endpoint="b", token="t1", clock=clock).tools())
    assert private.lists == 2  # t2 listed for itself; t1's second connection reused t1's


def test_shared_listings_expire_and_are_dropped_on_a_change() -> None:
    clock, shared = Clock(), SharedListings()
    session = _session(scope="public", ttl_ms=1000)
    first = Kernel(session, shared=shared, endpoint="a", clock=clock)
    asyncio.run(first.tools())
    first.tools_changed()
    asyncio.run(Kernel(session, shared=shared, endpoint="a", clock=clock).tools())
    assert session.lists == 2
    clock.now += 2
    asyncio.run(Kernel(session, shared=shared, endpoint="a", clock=clock).tools())
    assert session.lists == 3


def test_a_zero_ttl_listing_is_never_shared() -> None:
    clock, shared = Clock(), SharedListings()
    session = _session(scope="public", ttl_ms=0)
    asyncio.run(Kernel(session, shared=shared, endpoint="a", clock=clock).tools())
    asyncio.run(Kernel(session, shared=shared, endpoint="a", clock=clock).tools())
    assert session.lists == 2


def test_private_listings_are_keyed_by_a_digest_never_the_credential() -> None:
    key = credential_key("secret-token-value")
    assert "secret-token-value" not in key and key.startswith("sha256:")
    assert credential_key(None) == "anonymous"
