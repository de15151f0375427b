"""A response in one write: the connection's transport as uvicorn's protocol sees it, holding a
response's head until its body follows.

uvicorn writes the status line and headers when the app sends ``http.response.start`` and the
body when it sends ``http.response.body``: two writes, so two system calls and two TCP segments
for every answer, although the gateway sends the two messages back to back (the second segment
also costs the client a second wake-up). :class:`OneWrite` holds the first write after a
request's head is complete (:meth:`OneWrite.hold_next`, called by the runner's protocol
classes) and sends it together with the next one. A head with nothing after it in the same
event-loop step (a stream whose first event comes later, a response without a body) is sent at
the loop's next turn, so nothing waits longer than that; an interim response (``100
Continue``) is sent at once and the head after it is held; closing the connection sends what
is held first, aborting it drops it.

Everything else is the transport's own (``is_closing``, ``get_extra_info``, reading and
writing flow control, the write buffer's size).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

__all__ = ["OneWrite"]

_INTERIM: Final = b"HTTP/1.1 1"
"""How an interim (1xx) response begins: complete in itself, and awaited by the client."""
_INTERIM_LENGTH: Final = len(_INTERIM)


class OneWrite:
    """``transport`` for the protocol of one connection on ``loop``."""

    __slots__ = ("_held", "_hold", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._hold = False

    def hold_next(self) -> None:
        """Hold the next write (a response's head) until the write after it."""
        self._hold = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
        elif self._hold:
            if data[:_INTERIM_LENGTH] == _INTERIM:  # 100 Continue: out now, the head to come
                self._transport.write(data)
                return
            self._hold = False
            self._held = bytes(data)
            self._loop.call_soon(self.release)
        else:
            self._transport.write(data)

    def release(self) -> None:
        """Send what is held now, if anything is."""
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def close(self) -> None:
        self.release()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def get_write_buffer_size(self) -> int:
        held = self._held
        return self._transport.get_write_buffer_size() + (0 if held is None else len(held))

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def write_eof(self) -> None:
        self.release()
        self._transport.write_eof()

    def writelines(self, data: Any) -> None:
        self.write(b"".join(data))
