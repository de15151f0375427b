"""The durable call and refusal logs keep each row's rollout step (migration 10): segments
written before it are read with none, and retention rewrites them in the new layout."""

from __future__ import annotations

from typing import Any

import msgspec
from registry_kit import Backend

from toolkeeper.registry.call_rows import (
    CallQuery,
    RefusalQuery,
    open_call_rows,
    open_refusal_rows,
)

JAN_1 = 1_767_225_600 * 10**6  # 2026-01-01T00:00:00Z


def execute(backend: Backend, sql: str, params: tuple[Any, ...]) -> None:
    """Run one statement straight on the backend's database (as an older toolkeeper wrote)."""
    if backend.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(backend.url.removeprefix("sqlite://"))
        try:
            with conn:
                conn.execute(sql, params)
        finally:
            conn.close()
        return
    import psycopg

    with psycopg.connect(backend.url) as pg:
        pg.execute(sql.replace("?", "%s"), params)


def old_segment(backend: Backend, table: str, seq: int, rows: list[tuple[Any, ...]]) -> None:
    ats = [row[0] for row in rows]
    execute(backend, f"INSERT INTO {table} (seq, call_count, at_min, at_max, body)"
                     " VALUES (?, ?, ?, ?, ?)",
            (seq, len(rows), min(ats), max(ats), msgspec.msgpack.encode(rows)))


def call(at: int, step: int | None = None) -> tuple[Any, ...]:
    base = (JAN_1 + at, "acme", "", "pay", "1.0.0", "modern", "sha256:00", "ok", float(at), "")
    return base if step == -1 else (*base, step)


def test_calls_logged_before_migration_10_have_no_rollout_step(sql_backend: Backend) -> None:
    sql_backend.open()
    old_segment(sql_backend, "calls", 2, [call(1, -1), call(2, -1)])
    rows = open_call_rows(sql_backend.url)
    rows.append([call(3, 25), call(4, None)])
    assert [(r.seq, r.rollout_step) for r in rows.query(CallQuery())] == [
        (4, None), (3, 25), (2, None), (1, None)]
    assert rows.query(CallQuery(limit=1))[0].to_dict()["rollout_step"] is None
    assert rows.prune(JAN_1 + 2, None) == 1  # cuts inside the old segment: rewritten
    assert [(r.seq, r.latency_ms, r.rollout_step) for r in rows.query(CallQuery())] == [
        (4, 4.0, None), (3, 3.0, 25), (2, 2.0, None)]
    rows.close()


def test_refusals_keep_their_rollout_step(sql_backend: Backend) -> None:
    sql_backend.open()
    old = (JAN_1, "acme", "key", "pay", "2.0.0", "schema_version_unknown", "modern", "1", None)
    old_segment(sql_backend, "refusals", 1, [old])
    rows = open_refusal_rows(sql_backend.url)
    rows.append([(JAN_1 + 1, "acme", "key", "pay", None, "release.halted", "modern", "2", None,
                  50)])
    found = rows.query(RefusalQuery())
    assert [(r.reason, r.rollout_step) for r in found] == [
        ("release.halted", 50), ("schema_version_unknown", None)]
    assert found[0].to_dict()["rollout_step"] == 50
    assert rows.prune(None, 1) == 1
    assert [r.seq for r in rows.query(RefusalQuery())] == [2]
    rows.close()
