"""The call log's segments on both SQL backends: one row per appended batch, calls numbered
across segments, reads spanning many segments, retention cutting inside a segment."""

from __future__ import annotations

from registry_kit import Backend

from toolkeeper.registry.call_rows import CallQuery, CallValues, open_call_rows

JAN_1 = 1_767_225_600 * 10**6  # 2026-01-01T00:00:00Z


def row(at: int, n: int, tool: str = "calc") -> CallValues:
    return (JAN_1 + at, "acme", "", tool, "1.0.0", "modern", "sha256:00", "ok", float(n), "", None)


def stored_segments(backend: Backend) -> list[tuple[int, int]]:
    """(seq, call_count) of every segment, oldest first, read straight from the table."""
    if backend.kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(backend.url.removeprefix("sqlite://"))
        try:
            return conn.execute("SELECT seq, call_count FROM calls ORDER BY seq").fetchall()
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(backend.url) as pg:
        return [tuple(r) for r in
                pg.execute("SELECT seq, call_count FROM calls ORDER BY seq").fetchall()]


def test_each_batch_is_one_segment_and_calls_are_numbered_across_segments(
        sql_backend: Backend) -> None:
    sql_backend.open()
    rows = open_call_rows(sql_backend.url)
    rows.append([row(1, 1), row(2, 2), row(3, 3)])
    rows.append([row(4, 4)])
    rows.append([row(5, 5), row(6, 6)])
    assert stored_segments(sql_backend) == [(3, 3), (4, 1), (6, 2)]
    assert [(r.seq, r.latency_ms) for r in rows.query(CallQuery())] == [
        (6, 6.0), (5, 5.0), (4, 4.0), (3, 3.0), (2, 2.0), (1, 1.0)]
    rows.close()


def test_a_read_spans_more_segments_than_one_page_and_stops_at_the_limit(
        sql_backend: Backend) -> None:
    sql_backend.open()
    rows = open_call_rows(sql_backend.url)
    for n in range(1, 151):  # 150 one-call segments: more than one page of 64
        rows.append([row(n, n, tool="vault" if n % 50 == 0 else "calc")])
    assert [r.seq for r in rows.query(CallQuery(tool="vault"))] == [150, 100, 50]
    assert [r.seq for r in rows.query(CallQuery(limit=70))] == list(range(150, 80, -1))
    assert [r.seq for r in rows.query(CallQuery(since=JAN_1 + 148))] == [150, 149, 148]
    rows.close()


def test_age_retention_deletes_old_segments_and_cuts_the_old_start_of_a_straddling_one(
        sql_backend: Backend) -> None:
    sql_backend.open()
    rows = open_call_rows(sql_backend.url)
    rows.append([row(1, 1), row(2, 2)])
    rows.append([row(3, 3), row(5, 5), row(4, 4), row(6, 6)])
    # the first segment whole, then the 3 (the 4 stays: it follows the 5)
    assert rows.prune(JAN_1 + 5, None) == 3
    assert stored_segments(sql_backend) == [(6, 3)]
    assert [(r.seq, r.latency_ms) for r in rows.query(CallQuery())] == [
        (6, 6.0), (5, 4.0), (4, 5.0)]
    assert [r.latency_ms for r in rows.query(CallQuery(since=JAN_1 + 5))] == [6.0, 5.0]
    rows.close()


def test_retention_empties_the_newest_segment_so_numbers_are_never_reused(
        sql_backend: Backend) -> None:
    sql_backend.open()
    rows = open_call_rows(sql_backend.url)
    rows.append([row(1, 1)])
    rows.append([row(2, 2), row(3, 3)])
    assert rows.prune(JAN_1 + 10, None) == 3
    assert stored_segments(sql_backend) == [(3, 0)]
    assert rows.query(CallQuery()) == []
    rows.append([row(20, 20)])
    assert [r.seq for r in rows.query(CallQuery())] == [4]
    rows.close()


def test_row_retention_drops_the_oldest_segments_and_cuts_the_one_the_bound_falls_in(
        sql_backend: Backend) -> None:
    sql_backend.open()
    rows = open_call_rows(sql_backend.url)
    rows.append([row(1, 1), row(2, 2)])
    rows.append([row(3, 3), row(4, 4), row(5, 5)])
    rows.append([row(6, 6), row(7, 7)])
    assert rows.prune(None, 3) == 4
    assert stored_segments(sql_backend) == [(5, 1), (7, 2)]
    assert [(r.seq, r.latency_ms) for r in rows.query(CallQuery())] == [
        (7, 7.0), (6, 6.0), (5, 5.0)]
    assert rows.prune(None, 3) == 0
    rows.close()
