"""A forwarding HTTP proxy on 127.0.0.1 that loses answers: it forwards every request to an
upstream MCP endpoint, and for the first ``tools/call`` of each tool named in ``drop`` it waits
for the upstream's complete answer (so the tool has run) and then closes the client's
connection without a byte of it: the response lost on the way back."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

__all__ = ["dropping_proxy"]

_HOP = frozenset({"host", "content-length", "connection", "transfer-encoding", "keep-alive"})


def _handler(upstream: str, drop: set[str], lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            with httpx.Client(timeout=30.0) as client:
                answer = client.request(self.command, upstream, content=body, headers=headers)
            if self._lose(body):
                self.close_connection = True
                return
            self.send_response(answer.status_code)
            for key, value in answer.headers.items():
                if key.lower() not in _HOP:
                    self.send_header(key, value)
            self.send_header("content-length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        def _lose(self, body: bytes) -> bool:
            try:
                message = json.loads(body)
            except ValueError:
                return False
            if not isinstance(message, dict) or message.get("method") != "tools/call":
                return False
            name = (message.get("params") or {}).get("name")
            with lock:
                if name in drop:
                    drop.discard(name)
                    return True
            return False

        do_POST = do_GET = do_DELETE = _forward

    return Forward


@contextmanager
def dropping_proxy(upstream: str, drop: set[str]) -> Iterator[str]:
    """Run the proxy in a thread; yields its URL; shut down on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream, set(drop),
                                                            threading.Lock()))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
