"""A schema host for reference tests: a TCP server on 127.0.0.1 that counts the connections it
is offered. ``answering`` serves a JSON schema (an enum) to any HTTP GET; ``silent`` accepts and
never answers (a host that hangs), holding each connection until the host is stopped."""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SchemaHost", "schema_host"]

REMOTE_ENUM = ["remote-only-value"]


class _Handler(socketserver.StreamRequestHandler):
    server: SchemaHost

    def handle(self) -> None:
        self.server.count()
        if self.server.silent:
            self.server.released.wait(10)
            return
        while self.rfile.readline().strip():  # request line and headers
            pass
        body = json.dumps({"enum": REMOTE_ENUM}).encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)


class SchemaHost(socketserver.ThreadingTCPServer):
    daemon_threads = True

    def __init__(self, *, silent: bool) -> None:
        self.silent = silent
        self.released = threading.Event()
        self.connections = 0
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def count(self) -> None:
        with self._lock:
            self.connections += 1

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


@contextmanager
def schema_host(*, silent: bool = False) -> Iterator[SchemaHost]:
    host = SchemaHost(silent=silent)
    thread = threading.Thread(target=host.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield host
    finally:
        host.released.set()
        host.shutdown()
        host.server_close()
        thread.join(5)
