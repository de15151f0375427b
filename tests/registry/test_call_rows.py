"""The calls table on both SQL backends: append, filter newest first, prune, read-only."""

from __future__ import annotations

import pytest
from registry_kit import Backend

from toolkeeper.errors import StoreError
from toolkeeper.registry.call_rows import CallQuery, CallValues, open_call_rows

DAY_US = 86_400 * 10**6
JAN_1 = 1_767_225_600 * 10**6  # 2026-01-01T00:00:00Z


def row(n: int, tool: str = "calc", tenant: str = "acme", outcome: str = "ok") -> CallValues:
    return (JAN_1 + (n - 1) * DAY_US, tenant, "", tool, "1.0.0", "legacy", "sha256:00", outcome,
            float(n), f'"r{n}"', None)


def test_rows_are_stored_filtered_and_pruned(sql_backend: Backend) -> None:
    sql_backend.open()  # the registry exists (and is migrated) first
    rows = open_call_rows(sql_backend.url)
    rows.append([row(1), row(2, tool="vault"), row(3, tenant="globex", outcome="error"),
                 row(4)])
    assert [r.latency_ms for r in rows.query(CallQuery())] == [4.0, 3.0, 2.0, 1.0]
    assert [r.latency_ms for r in rows.query(CallQuery(tool="calc", tenant="acme"))] == [4.0, 1.0]
    assert [r.latency_ms for r in rows.query(CallQuery(outcome="error"))] == [3.0]
    assert [r.latency_ms for r in rows.query(CallQuery(since=JAN_1 + DAY_US, limit=2))] == [4.0, 3.0]
    newest = rows.query(CallQuery(limit=1))[0].to_dict()
    assert (newest["at"], newest["credential"], newest["request_id"]) == (
        "2026-01-04T00:00:00.000000Z", None, "r4")
    assert rows.prune(JAN_1 + DAY_US, None) == 1
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


def test_a_batch_of_any_size_is_stored_whole_in_order_with_nulls(sql_backend: Backend) -> None:
    sql_backend.open()
    rows = open_call_rows(sql_backend.url)
    batch = [(JAN_1 + n, "acme", "" if n % 2 else f"key_{n}", "calc", "1.0.0", "modern",
              "sha256:00", "ok", float(n), "" if n % 3 else str(n), None if n % 5 else 25)
             for n in range(87)]
    rows.append(batch)  # 64 + 16 + 4 rows by chunk, then 3 one by one
    stored = rows.query(CallQuery(limit=1000))
    assert [r.values() for r in reversed(stored)] == batch
    assert [(r.credential, r.request_id) for r in stored[-3:]] == [
        ("key_2", None), (None, None), ("key_0", "0")]
    assert [r.seq for r in reversed(stored)] == list(range(1, 88))
    rows.close()
