"""The calls table on both SQL backends: append, filter newest first, prune, read-only."""

from __future__ import annotations

import pytest
from registry_kit import Backend

from toolkeeper.errors import StoreError
from toolkeeper.registry.call_rows import CallQuery, CallRow, open_call_rows


def row(n: int, tool: str = "calc", tenant: str = "acme", outcome: str = "ok") -> CallRow:
    return CallRow(f"2026-01-0{n}T00:00:00.000000Z", tenant, None, tool, "1.0.0", "legacy",
                   "sha256:00", outcome, float(n), f'"r{n}"')


def test_rows_are_stored_filtered_and_pruned(sql_backend: Backend) -> None:
    sql_backend.open()  # the registry exists (and is migrated) first
    rows = open_call_rows(sql_backend.url)
    rows.append([row(1), row(2, tool="vault"), row(3, tenant="globex", outcome="error"),
                 row(4)])
    assert [r.latency_ms for r in rows.query(CallQuery())] == [4.0, 3.0, 2.0, 1.0]
    assert [r.latency_ms for r in rows.query(CallQuery(tool="calc", tenant="acme"))] == [4.0, 1.0]
    assert [r.latency_ms for r in rows.query(CallQuery(outcome="error"))] == [3.0]
    assert [r.latency_ms for r in rows.query(CallQuery(since="2026-01-02T00:00:00.000000Z",
                                                       limit=2))] == [4.0, 3.0]
    assert rows.query(CallQuery(limit=1))[0].to_dict()["request_id"] == "r4"
    assert rows.prune("2026-01-02T00:00:00.000000Z", None) == 1
    assert rows.prune(None, 2) == 1
    assert [r.latency_ms for r in rows.query(CallQuery())] == [4.0, 3.0]
    rows.close()


def test_a_read_only_call_log_refuses_to_write(sql_backend: Backend) -> None:
    sql_backend.open()
    reader = open_call_rows(sql_backend.url, read_only=True)
    with pytest.raises(StoreError) as refused:
        reader.append([row(1)])
    assert refused.value.code == "calllog.store"
    reader.close()
