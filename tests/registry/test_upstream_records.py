"""Upstream rows in every registry backend: upstreams, their tools and drifts are stored,
replaced and read back by every instance over the same data (each replica's view of an
upstream's health too); a tool row is deleted alone; a corrupted row is
``upstream.state_unreadable``; one sync of an upstream runs at a time."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import psycopg
import pytest
from registry_kit import Backend

from toolkeeper.errors import StoreError
from toolkeeper.registry.upstream_records import (
    DriftRecord,
    HealthRecord,
    UpstreamRecord,
    UpstreamStore,
    UpstreamToolRecord,
    upstream_store,
)

DEFINITION = {"name": "files", "url": "http://127.0.0.1:1/mcp", "prefix": "f."}


def _store(backend: Backend) -> UpstreamStore:
    return upstream_store(backend.store())


def _tool(name: str = "read", *, version: str = "1.0.0", digest: str = "a" * 64,
          present: bool = True) -> UpstreamToolRecord:
    return UpstreamToolRecord("files", name, f"f.{name}", version, digest,
                              {"name": name, "inputSchema": {"type": "object"}}, present,
                              digest, {version: digest})


def _drift(drift_id: str, tool: str = "read", *, seen_at: str = "2026-01-01T00:00:00Z",
           status: str = "pending") -> DriftRecord:
    return DriftRecord(drift_id, "files", tool, seen_at, "a" * 64, "b" * 64,
                       {"name": tool}, {"name": tool, "description": "new"}, "patch",
                       ("descriptive",), ({"rule": "contract.doc.changed",
                                           "path": "$.description"},), status)


def test_an_upstream_is_stored_replaced_and_seen_by_every_instance(backend: Backend) -> None:
    one, other = _store(backend), _store(backend)
    record = UpstreamRecord("files", DEFINITION, "cli", "t1", "t1")
    one.put_upstream(record)
    assert other.get_upstream("files") == record
    one.put_upstream(UpstreamRecord("files", {**DEFINITION, "prefix": "g."}, "config", "t1",
                                    "t2"))
    again = other.get_upstream("files")
    assert again is not None and again.definition["prefix"] == "g." and again.origin == "config"
    one.put_upstream(UpstreamRecord("alpha", DEFINITION, "cli", "t3", "t3"))
    assert other.upstream_names() == ("alpha", "files")
    assert other.get_upstream("missing") is None


def test_tool_rows_are_kept_per_upstream_and_tool_and_go_with_their_upstream(
        backend: Backend) -> None:
    one, other = _store(backend), _store(backend)
    one.put_upstream(UpstreamRecord("files", DEFINITION, "cli", "t1", "t1"))
    one.put_upstream_tool(_tool("write"))
    one.put_upstream_tool(_tool("read"))
    replaced = _tool("read", version="1.1.0", digest="c" * 64, present=False)
    one.put_upstream_tool(replaced)
    tools = other.upstream_tools("files")
    assert [t.tool for t in tools] == ["read", "write"]
    assert tools[0] == replaced and tools[0].present is False
    assert other.upstream_tools("other") == ()
    assert one.delete_upstream("files") is True
    assert other.upstream_tools("files") == () and other.get_upstream("files") is None
    assert one.delete_upstream("files") is False


def test_drifts_are_listed_oldest_first_and_replaced_by_id(backend: Backend) -> None:
    one, other = _store(backend), _store(backend)
    one.put_drift(_drift("d2", seen_at="2026-01-02T00:00:00Z"))
    one.put_drift(_drift("d1", seen_at="2026-01-01T00:00:00Z"))
    one.put_drift(_drift("d3", "write"))
    decided = replace(_drift("d1"), status="approved", decided_by="ops", decided_at="t9",
                      published_version="1.0.1")
    one.put_drift(decided)
    assert [d.id for d in other.drifts("files")] == ["d1", "d3", "d2"]
    assert [d.id for d in other.drifts("files", "read")] == ["d1", "d2"]
    assert other.drifts("files", "read")[0] == decided
    assert other.drifts("nobody") == ()


def test_a_tool_row_is_deleted_alone(backend: Backend) -> None:
    one, other = _store(backend), _store(backend)
    one.put_upstream_tool(_tool("read"))
    one.put_upstream_tool(_tool("write"))
    one.delete_upstream_tool("files", "read")
    one.delete_upstream_tool("files", "absent")
    assert [t.tool for t in other.upstream_tools("files")] == ["write"]


def test_each_replicas_health_view_is_kept_and_replaced(backend: Backend) -> None:
    one, other = _store(backend), _store(backend)
    one.put_upstream_health(HealthRecord("files", "host-b:2", {"state": "idle"}, "t1"))
    one.put_upstream_health(HealthRecord("files", "host-a:1", {"state": "idle"}, "t1"))
    failed = HealthRecord("files", "host-a:1", {"state": "failed", "restarts": 6}, "t2")
    other.put_upstream_health(failed)
    assert one.upstream_health("files") == (
        failed, HealthRecord("files", "host-b:2", {"state": "idle"}, "t1"))
    assert one.upstream_health("other") == ()
    other.delete_upstream_health("files", "host-b:2")
    assert one.upstream_health("files") == (failed,)
    one.put_upstream(UpstreamRecord("files", DEFINITION, "cli", "t1", "t1"))
    assert one.delete_upstream("files") is True
    assert other.upstream_health("files") == ()


def test_a_corrupted_tool_row_is_unreadable_state(sql_backend: Backend) -> None:
    store = _store(sql_backend)
    store.put_upstream_tool(_tool("read"))
    sql = "UPDATE upstream_tools SET descriptor = '{not json' WHERE tool = 'read'"
    if sql_backend.kind == "sqlite":
        with sqlite3.connect(sql_backend.url.removeprefix("sqlite://")) as conn:
            conn.execute(sql)
    else:
        with psycopg.connect(sql_backend.url, autocommit=True) as pg:
            pg.execute(sql)
    with pytest.raises(StoreError) as caught:
        _store(sql_backend).upstream_tools("files")
    assert caught.value.code == "upstream.state_unreadable"
    assert caught.value.data["upstream"] == "files"


def test_one_sync_of_an_upstream_runs_at_a_time(backend: Backend) -> None:
    one, other = _store(backend), _store(backend)
    with one.upstream_sync_lock("files"):
        for store in (one, other):
            with pytest.raises(StoreError) as caught, store.upstream_sync_lock("files"):
                pass
            assert caught.value.code == "upstream.sync_busy"
        with other.upstream_sync_lock("docs"):  # another upstream is not held back
            pass
    with other.upstream_sync_lock("files"):  # released
        pass


def test_a_store_that_keeps_no_upstreams_is_refused() -> None:
    with pytest.raises(StoreError) as caught:
        upstream_store(object())
    assert caught.value.code == "registry.upstreams_unsupported"
