"""Two replicas on one PostgreSQL registry: an upstream added and a drift quarantined on one
are seen on the other, the other's approval publishes there, and the sync lock holds across
their sessions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from toolkeeper.errors import StoreError
from toolkeeper.registry import Registry
from toolkeeper.upstreams.descriptor import descriptor_digest
from toolkeeper.upstreams.governance import Upstreams
from toolkeeper.upstreams.model import UpstreamDefinition

pytestmark = pytest.mark.postgres


def _tool(description: str) -> dict[str, Any]:
    return {"name": "search", "description": description, "inputSchema": {"type": "object"}}


@pytest.fixture
def replicas(pg_url: str) -> Iterator[tuple[Upstreams, Upstreams]]:
    one, other = Registry.open(pg_url), Registry.open(pg_url)
    yield Upstreams(one), Upstreams(other)
    one.close()
    other.close()


def test_an_approval_on_one_replica_is_served_by_the_other(
        replicas: tuple[Upstreams, Upstreams]) -> None:
    one, other = replicas
    one.add(UpstreamDefinition(name="files", command=("x",), prefix="f."), origin="config",
            actor="ops")
    one.apply_listing("files", [_tool("old")], actor="sync")
    one.apply_listing("files", [_tool("new")], actor="sync")
    [pending] = other.pending("files")
    other.approve("files", "search", descriptor_digest(_tool("new")), actor="key:k1")
    latest = one.registry.latest("f.search")
    assert latest is not None and latest.description == "new"
    assert [b.version for b in one.bindings()] == ["1.0.0", "1.0.1"]
    assert one.drifts("files")[0].decided_by == "key:k1"
    assert pending.status == "pending"


def test_the_sync_lock_holds_across_replicas(replicas: tuple[Upstreams, Upstreams]) -> None:
    one, other = replicas
    with one.sync_lock("files"):
        with pytest.raises(StoreError) as caught, other.sync_lock("files"):
            pass
        assert caught.value.code == "upstream.sync_busy"
    with other.sync_lock("files"):
        pass
