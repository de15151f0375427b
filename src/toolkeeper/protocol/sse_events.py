"""Reading server-sent events (the client side of :mod:`toolkeeper.transports.sse`), sans-IO.

:class:`SseDecoder` is fed bytes as they arrive and returns the events completed so far, per
the WHATWG event-stream rules both MCP eras use (mcp-wire 9); call :meth:`SseDecoder.end`
when the stream ends. The rules: lines end in CRLF, LF or CR;
a line starting with ``:`` is a comment (keepalive); ``data`` lines of one event are joined
with LF; a blank line dispatches the event; an event whose data is empty (the legacy priming
event) is not dispatched but its ``id`` is remembered; ``retry`` sets the reconnection delay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["SseDecoder", "SseEvent"]

_BOM: Final = "\ufeff"


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its type (``message`` by default), data and last event id."""

    event: str
    data: str
    last_id: str | None


class SseDecoder:
    """Incremental event-stream decoder: :meth:`feed` bytes, get completed events."""

    def __init__(self) -> None:
        self._pending = b""
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self.last_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events completed by ``chunk`` (a partial line waits for the next chunk; a CR at
        the end of a chunk waits too, as it may be the first half of a CRLF)."""
        buffer = self._pending + chunk
        events: list[SseEvent] = []
        start = 0
        size = len(buffer)
        while start < size:
            cr = buffer.find(b"\r", start)
            lf = buffer.find(b"\n", start)
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                break
            end = min(ends)
            if end == cr:
                if end + 1 == size:
                    break
                step = 2 if buffer[end + 1:end + 2] == b"\n" else 1
            else:
                step = 1
            self._line(buffer[start:end].decode("utf-8", "replace"), events)
            start = end + step
        self._pending = buffer[start:]
        return events

    def end(self) -> list[SseEvent]:
        """The stream ended: a CR held back as a possible CRLF half was a line end after all.
        An event without its closing blank line is discarded (WHATWG)."""
        events: list[SseEvent] = []
        if self._pending.endswith(b"\r"):
            events = self.feed(b"\n")
        self._pending, self._data, self._event = b"", [], ""
        return events

    def _line(self, line: str, events: list[SseEvent]) -> None:
        if not self._started:
            self._started = True
            line = line.removeprefix(_BOM)
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            return
        name, sep, value = line.partition(":")
        if sep:
            value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)

    def _dispatch(self, events: list[SseEvent]) -> None:
        data, event = "\n".join(self._data), self._event or "message"
        self._data, self._event = [], ""
        if data:
            events.append(SseEvent(event, data, self.last_id))
