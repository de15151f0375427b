"""The call recorder: a call's path only queues; the flusher pairs, batches, retries, prunes."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from toolkeeper.errors import StoreError
from toolkeeper.observability.recorder import CallRecorder
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import (
    CallQuery,
    CallValues,
    MemoryCallRows,
    at_text,
    open_call_rows,
)
from toolkeeper.server.calllog import CallRecord

T0 = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z


def record(tool: str = "calc", **fields: object) -> CallRecord:
    base: dict[str, object] = {"tool": tool, "version": "1.2.0", "principal": "acme",
                               "arguments_digest": "sha256:00", "era": "modern"}
    base.update(fields)
    return CallRecord(**base)  # type: ignore[arg-type]  # the fields above, by name


class CountingRows(MemoryCallRows):
    """Memory rows that remember each batch and can be told to fail."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []
        self.failing = False

    def append(self, rows: Sequence[CallValues]) -> None:
        if self.failing:
            raise StoreError("down", code="calllog.store")
        self.batches.append(len(rows))
        super().append(rows)


def test_a_call_is_written_only_by_the_flusher_with_every_field() -> None:
    rows = CountingRows()
    recorder = CallRecorder(rows, clock_ns=lambda: T0)
    handle = recorder.dispatched(record(credential="key_1", request_id="r-7"))
    recorder.completed(handle, "ok", 12.5)
    assert rows.batches == []  # nothing written on the call's path
    recorder.flush()
    [row] = rows.query(CallQuery())
    assert row.to_dict() == {
        "seq": 1, "at": "2026-01-01T00:00:00.000000Z", "tenant": "acme", "credential": "key_1",
        "tool": "calc", "version": "1.2.0", "era": "modern", "arguments_digest": "sha256:00",
        "outcome": "ok", "latency_ms": 12.5, "request_id": "r-7", "rollout_step": None}


def test_a_running_call_waits_for_its_completion() -> None:
    rows = MemoryCallRows()
    recorder = CallRecorder(rows)
    handle = recorder.dispatched(record(request_id=3))
    recorder.flush()
    assert rows.query(CallQuery()) == []
    recorder.completed(handle, "exception", 1.0)
    recorder.flush()
    assert [(r.outcome, r.to_dict()["request_id"]) for r in rows.query(CallQuery())] == [
        ("exception", 3)]


def test_rows_are_written_in_batches_of_at_most_max_batch() -> None:
    rows = CountingRows()
    recorder = CallRecorder(rows, max_batch=4)
    for _ in range(10):
        recorder.completed(recorder.dispatched(record()), "ok", 1.0)
    recorder.flush()
    assert rows.batches == [4, 4, 2]


def test_a_failed_write_is_retried_and_what_overflows_is_dropped_and_counted() -> None:
    rows = CountingRows()
    recorder = CallRecorder(rows, max_batch=1)  # holds at most 100 rows across failures
    rows.failing = True
    for _ in range(150):
        recorder.completed(recorder.dispatched(record()), "ok", 1.0)
    recorder.flush()
    assert recorder.dropped == 50
    rows.failing = False
    recorder.flush()
    assert len(rows.query(CallQuery(limit=1000))) == 100


class SignallingRows(MemoryCallRows):
    """Memory rows that say when a batch has been written."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def append(self, rows: Sequence[CallValues]) -> None:
        super().append(rows)
        self.written.set()


def test_the_flusher_thread_writes_on_its_own_and_stop_writes_the_rest() -> None:
    rows = SignallingRows()
    recorder = CallRecorder(rows, flush_interval_ms=10)
    recorder.start()
    recorder.completed(recorder.dispatched(record("first")), "ok", 1.0)
    assert rows.written.wait(30)  # no flush() from the test: the thread wrote it
    assert [r.tool for r in rows.query(CallQuery())] == ["first"]
    recorder.completed(recorder.dispatched(record("last")), "ok", 1.0)
    recorder.stop()
    assert [r.tool for r in rows.query(CallQuery())] == ["last", "first"]


@pytest.mark.parametrize(("days", "keep", "left"), [
    (1, 0, ["new"]),            # the row two days old is gone
    (0, 1, ["new"]),            # only the newest row is kept
    (0, 0, ["new", "old"]),     # 0 and 0: keep everything
])
def test_retention_prunes_by_age_and_by_rows_in_sqlite(tmp_path: Path, days: int, keep: int,
                                                         left: list[str]) -> None:
    url = f"sqlite://{tmp_path / 'r.db'}"
    Registry.open(url).close()
    now = [T0 - 2 * 86_400 * 10**9]
    recorder = CallRecorder(open_call_rows(url), clock_ns=lambda: now[0],
                            retention_days=days, retention_rows=keep)
    recorder.completed(recorder.dispatched(record("old")), "ok", 1.0)
    recorder._pruned_at = float("inf")  # not yet: the old row is written first
    recorder.flush()
    now[0] = T0
    recorder._pruned_at = 0.0
    recorder.completed(recorder.dispatched(record("new")), "ok", 1.0)
    recorder.stop()
    reader = open_call_rows(url, read_only=True)
    assert [r.tool for r in reader.query(CallQuery())] == left
    reader.close()


def test_at_text_is_utc_iso_with_microseconds_truncated() -> None:
    assert at_text((T0 + 1_999) // 1000) == "2026-01-01T00:00:00.000001Z"
    assert at_text(T0 // 1000 - 1) == "2025-12-31T23:59:59.999999Z"
