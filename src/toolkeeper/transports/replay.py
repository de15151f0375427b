"""Replay logs of resumable legacy SSE streams (2025-11-25 transport, "Resumability and
Redelivery"; SEP-1699), without I/O: what a stream sent, under which event ids, and for how
long a client may come back for it.

An event id is ``<stream>-<seq>``: the stream's number (unique in the process) and the
event's position in it, counted from 1; the priming event names position 0 (nothing sent yet).
A ``Last-Event-ID`` of ``s-k`` asks for the events of stream ``s`` after ``k``, and only
those: the events of another stream are never replayed (the transport's MUST NOT). Streams
belong to a legacy session; an id is looked up only among the streams of the session asking.

Bounds (:class:`ReplayConfig`, the ``[legacy]`` configuration section):

* each stream keeps at most ``max_events`` events and ``max_bytes`` bytes of frames, the
  oldest dropped first;
* all streams together keep at most ``total_bytes``: past it, the streams that finished
  longest ago are dropped first, then the stream being written drops its own oldest events;
* a finished stream stays resumable for ``resume_window_s`` after its final event.

A ``Last-Event-ID`` this cannot answer exactly (an unknown or malformed id, a stream dropped,
or events after the id already dropped) finds nothing: no replay with a hole in it.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from toolkeeper.transports.sse import priming_frame, sse_frame_with_id

__all__ = ["ReplayConfig", "ReplayLog", "ReplayLogs", "parse_event_id"]

_MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    """The bounds of resumable streams; ``max_events`` 0 turns resumability off (legacy
    streams then carry no ids and no priming event, as before 2025-11-25)."""

    retry_ms: int = 1000
    """The ``retry`` hint of the priming event: how long a client waits before it
    reconnects (the official SDK client waits 1 s when there is none)."""
    max_events: int = 256
    max_bytes: int = _MIB
    total_bytes: int = 64 * _MIB
    resume_window_s: float = 60.0
    """How long a finished stream stays resumable; also how long a stream whose client has
    gone waits for it to resume before its request is cancelled."""

    def __post_init__(self) -> None:
        for name in ("retry_ms", "max_events", "max_bytes", "total_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)}")
        if not self.resume_window_s > 0:
            raise ValueError(f"resume_window_s must be positive, not {self.resume_window_s}")

    @property
    def enabled(self) -> bool:
        return self.max_events > 0 and self.max_bytes > 0 and self.total_bytes > 0


def parse_event_id(event_id: str) -> tuple[int, int] | None:
    """``(stream, seq)`` of an id this module minted, or None for anything else."""
    stream, sep, seq = event_id.partition("-")
    if not (sep and stream.isascii() and stream.isdigit() and seq.isascii() and seq.isdigit()
            and len(event_id) <= 40):
        return None
    return int(stream), int(seq)


class ReplayLog:
    """The frames one stream sent, by position, within its bounds."""

    __slots__ = ("_events", "_logs", "bytes", "dropped", "finished", "last", "number",
                 "session_id")

    def __init__(self, logs: ReplayLogs, session_id: str, number: int) -> None:
        self._logs = logs
        self.session_id = session_id
        self.number = number
        self._events: deque[tuple[int, bytes]] = deque()
        self.bytes = 0
        self.last = 0
        """The position of the latest event (0: none yet)."""
        self.finished = False
        self.dropped = False
        """Forgotten by :class:`ReplayLogs` (its session ended, its client never came back):
        what it records from then on is not kept."""

    def event_id(self, seq: int) -> bytes:
        return f"{self.number}-{seq}".encode()

    def priming(self, retry_ms: int | None) -> bytes:
        """The priming frame naming the current position (what a client already has)."""
        return priming_frame(self.event_id(self.last), retry_ms)

    def record(self, message_json: bytes, *, final: bool = False) -> bytes:
        """Give the next event its id and keep its frame (``final``: the response, the
        stream's last event); the frame is returned for the live connection, if any."""
        self.last += 1
        frame = sse_frame_with_id(self.event_id(self.last), message_json)
        if self.dropped:
            self.finished = self.finished or final
            return frame
        self._events.append((self.last, frame))
        self.bytes += len(frame)
        config = self._logs.config
        freed = 0
        while len(self._events) > config.max_events or (
                self.bytes > config.max_bytes and len(self._events) > 1):
            freed += self._drop_oldest()
        self._logs.charge(self, len(frame) - freed)
        if final:
            self.finished = True
            self._logs.finish(self)
        return frame

    def _drop_oldest(self) -> int:
        _, frame = self._events.popleft()
        self.bytes -= len(frame)
        return len(frame)

    def trim(self) -> int:
        """Drop the oldest event (never the newest); the bytes freed."""
        return self._drop_oldest() if len(self._events) > 1 else 0

    def after(self, seq: int) -> list[bytes] | None:
        """Every frame after position ``seq``, in order; None when that cannot be exact (a
        position never reached, or events after it already dropped)."""
        if seq > self.last:
            return None
        first = self._events[0][0] if self._events else self.last + 1
        if seq + 1 < first:
            return None
        return [frame for position, frame in self._events if position > seq]


class ReplayLogs:
    """Every replay log of the process, by session, within the total budget and the
    retention window (expired logs are dropped whenever a log is opened or looked up)."""

    def __init__(self, config: ReplayConfig, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.config = config
        self._clock = clock
        self._numbers = 0
        self._sessions: dict[str, dict[int, ReplayLog]] = {}
        self._finished: OrderedDict[ReplayLog, float] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return sum(len(logs) for logs in self._sessions.values())

    def open(self, session_id: str) -> ReplayLog:
        self._expire()
        self._numbers += 1
        log = ReplayLog(self, session_id, self._numbers)
        self._sessions.setdefault(session_id, {})[log.number] = log
        return log

    def find(self, session_id: str, event_id: str) -> tuple[ReplayLog, list[bytes]] | None:
        """The log a ``Last-Event-ID`` of this session names, and its frames after that id;
        None when it cannot be answered exactly."""
        self._expire()
        parsed = parse_event_id(event_id)
        if parsed is None:
            return None
        log = self._sessions.get(session_id, {}).get(parsed[0])
        frames = None if log is None else log.after(parsed[1])
        return None if log is None or frames is None else (log, frames)

    def drop(self, log: ReplayLog) -> None:
        """Forget a log (its request was abandoned, or its session ended)."""
        logs = self._sessions.get(log.session_id)
        if logs is None or logs.pop(log.number, None) is None:
            return
        if not logs:
            del self._sessions[log.session_id]
        self._finished.pop(log, None)
        self.bytes -= log.bytes
        log.dropped = True

    def end_session(self, session_id: str) -> None:
        for log in list(self._sessions.get(session_id, {}).values()):
            self.drop(log)

    def charge(self, log: ReplayLog, delta: int) -> None:
        """``log`` grew by ``delta`` bytes: keep the total within budget (finished logs
        first, oldest first; then ``log`` itself, oldest events first)."""
        self.bytes += delta
        while self.bytes > self.config.total_bytes and self._finished:
            oldest = next(iter(self._finished))
            if oldest is log:
                break
            self.drop(oldest)
        while self.bytes > self.config.total_bytes:
            freed = log.trim()
            if not freed:
                break
            self.bytes -= freed

    def finish(self, log: ReplayLog) -> None:
        self._finished[log] = self._clock()

    def _expire(self) -> None:
        cutoff = self._clock() - self.config.resume_window_s
        while self._finished:
            log, finished_at = next(iter(self._finished.items()))
            if finished_at > cutoff:
                return
            self.drop(log)
