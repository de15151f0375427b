"""Replay logs of resumable legacy streams: ids, exact replay after an id, and the bounds
(events and bytes per stream, bytes of all streams, the retention window of finished streams).
An id that cannot be answered exactly finds nothing, never a replay with a hole."""

from __future__ import annotations

import pytest

from toolkeeper.transports.replay import ReplayConfig, ReplayLogs, parse_event_id


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _logs(**bounds: float) -> tuple[ReplayLogs, Clock]:
    clock = Clock()
    return ReplayLogs(ReplayConfig(**bounds), clock), clock  # type: ignore[arg-type]


def _ids(frames: list[bytes]) -> list[str]:
    return [frame.split(b"\r\n", 1)[0].removeprefix(b"id: ").decode() for frame in frames]


def test_events_after_an_id_are_replayed_in_order_and_only_from_that_stream() -> None:
    logs, _ = _logs()
    one, two = logs.open("s"), logs.open("s")
    for n in range(3):
        one.record(b'{"n":%d}' % n)
        two.record(b'{"m":%d}' % n)
    found = logs.find("s", one.event_id(1).decode())
    assert found is not None and found[0] is one
    assert _ids(found[1]) == [f"{one.number}-2", f"{one.number}-3"]
    assert logs.find("s", one.event_id(3).decode()) == (one, [])
    assert logs.find("other", one.event_id(1).decode()) is None


@pytest.mark.parametrize("event_id", ["", "1", "-1", "1-", "a-1", "1-b", "1-2-3", "１-1",
                                      "1-" + "9" * 50])
def test_an_id_this_server_never_minted_is_not_parsed(event_id: str) -> None:
    assert parse_event_id(event_id) is None


def test_a_position_not_reached_yet_finds_nothing() -> None:
    logs, _ = _logs()
    log = logs.open("s")
    log.record(b"{}")
    assert logs.find("s", log.event_id(2).decode()) is None


def test_a_stream_keeps_its_newest_events_and_an_id_before_the_kept_ones_finds_nothing() -> None:
    logs, _ = _logs(max_events=2)
    log = logs.open("s")
    for _ in range(4):
        log.record(b"{}")
    assert logs.find("s", log.event_id(1).decode()) is None  # event 2 is gone: a hole
    found = logs.find("s", log.event_id(2).decode())
    assert found is not None and _ids(found[1]) == [f"{log.number}-3", f"{log.number}-4"]


def test_a_stream_is_bounded_in_bytes_but_keeps_its_newest_event() -> None:
    logs, _ = _logs(max_bytes=100)
    log = logs.open("s")
    log.record(b'"' + b"x" * 200 + b'"')
    assert log.bytes > 100 and logs.bytes == log.bytes  # the newest is always kept
    log.record(b"{}")
    assert log.bytes <= 100 and logs.bytes == log.bytes


def test_over_the_total_budget_the_oldest_finished_streams_go_first() -> None:
    logs, _ = _logs(total_bytes=300)
    old, newer, live = logs.open("s"), logs.open("s"), logs.open("s")
    old.record(b'"' + b"a" * 60 + b'"', final=True)
    newer.record(b'"' + b"b" * 60 + b'"', final=True)
    for _ in range(2):
        live.record(b'"' + b"c" * 60 + b'"')
    assert logs.find("s", old.event_id(0).decode()) is None
    assert logs.find("s", newer.event_id(0).decode()) is not None
    assert logs.bytes <= 300 and logs.bytes == newer.bytes + live.bytes


def test_a_live_stream_over_the_total_budget_drops_its_own_oldest_events() -> None:
    logs, _ = _logs(total_bytes=200)
    live = logs.open("s")
    for _ in range(5):
        live.record(b'"' + b"c" * 60 + b'"')
    assert logs.bytes == live.bytes <= 200
    assert logs.find("s", live.event_id(4).decode()) is not None
    assert logs.find("s", live.event_id(1).decode()) is None


def test_a_finished_stream_is_resumable_for_the_window_then_forgotten() -> None:
    logs, clock = _logs(resume_window_s=10)
    log = logs.open("s")
    log.record(b"{}", final=True)
    clock.now = 9.5
    assert logs.find("s", log.event_id(0).decode()) is not None
    clock.now = 10.5
    assert logs.find("s", log.event_id(0).decode()) is None
    assert (len(logs), logs.bytes) == (0, 0)


def test_an_ended_session_forgets_its_streams_and_what_they_record_later() -> None:
    logs, _ = _logs()
    log = logs.open("s")
    log.record(b"{}")
    logs.end_session("s")
    log.record(b"{}", final=True)
    assert (len(logs), logs.bytes) == (0, 0)
    assert logs.find("s", log.event_id(0).decode()) is None


@pytest.mark.parametrize("bounds", [{"max_events": -1}, {"retry_ms": -1},
                                    {"resume_window_s": 0}, {"total_bytes": -5}])
def test_bounds_out_of_range_are_refused(bounds: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ReplayConfig(**bounds)  # type: ignore[arg-type]


def test_no_events_kept_means_no_resumability() -> None:
    assert not ReplayConfig(max_events=0).enabled and ReplayConfig().enabled
