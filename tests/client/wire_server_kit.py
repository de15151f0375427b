"""Small MCP-ish HTTP servers with one behaviour each, for live era-selection tests.

Run as ``python wire_server_kit.py KIND LOG``: listens on 127.0.0.1 (ephemeral port, printed as
``PORT <n>`` on stdout), appends each request's JSON-RPC method to the file LOG, and behaves as
KIND says:

* ``modern-error``: every POST is answered 400 with -32020 (a modern server whose routing
  headers the client got wrong, or a proxy that rewrote them);
* ``slow-discover``: ``server/discover`` is never answered within any probe bound; the rest
  as ``legacy-only``;
* ``legacy-only``: a 2025-11-25 server as the SDK's stateful transport is: a request other
  than ``initialize`` without a session is 400 -32600 with ``id: null``; ``initialize``
  negotiates 2025-11-25 and mints ``Mcp-Session-Id``; one ``echo`` tool without a version;
* ``huge-discover``: ``server/discover`` is answered with 2 MiB of JSON;
* ``modern-bad-annotation``: a modern server listing :data:`GOOD` and :data:`BAD_ANNOTATION`,
  whose ``x-mcp-header`` on a number property is invalid (mcp-wire 4.3);
* ``legacy-odd``: as ``legacy-only``, but ``tools/list`` holds :data:`ODD_TOOLS` (``echo``
  and ``quiet`` well formed, ``quiet`` without a description; three malformed descriptors;
  tools whose calls answer malformed content blocks; one whose schema has an external
  ``$ref``), and ``tools/call`` answers ``weird`` with a ``{"type": "weird"}`` block and
  ``notext`` with a text block without ``text``;
* ``modern-only``: ``server/discover`` lists 2026-07-28; every other request is answered 400
  with -32022 (a modern-only server refusing ``initialize``, correctly);
* ``sse-comments``: every POST is answered 200 ``text/event-stream`` that carries only
  comments, one every 50 ms, and never an event;
* ``deep``: every POST is answered with a JSON-RPC result nested 70 levels deep;
* ``legacy-asks``: as ``legacy-only``, but ``tools/call`` is answered in SSE that first sends
  the client a ``ping`` and an ``elicitation/create`` request, then waits (at most
  :data:`ANSWER_WAIT_S`) for the client's POSTed responses to both; the call's result is one
  text block, the JSON of ``{request id: the response's result or error}`` (an id unanswered
  is absent).

:func:`start` runs one and yields its URL and log; it is stopped by its pid.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["ANSWER_WAIT_S", "BAD_ANNOTATION", "GOOD", "ODD_TOOLS", "methods_seen", "start"]

ANSWER_WAIT_S = 10.0

SESSION = "0123456789abcdef"
ECHO = {"name": "echo", "description": "Echo the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                        "required": ["text"]}}


def _legacy(handler: Any, message: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    method, rid = message.get("method"), message.get("id")
    if method == "initialize":
        return 200, {"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy-only", "version": "0.0.1"}}}, {
            "mcp-session-id": SESSION}
    if handler.headers.get("mcp-session-id") != SESSION:
        return 400, {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "Bad Request: Missing session ID"}}, {}
    if rid is None:
        return 202, None, {}
    if method == "tools/list":
        return 200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": [ECHO]}}, {}
    if method == "tools/call":
        text = message["params"]["arguments"].get("text", "")
        return 200, {"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": text}], "isError": False}}, {}
    return 200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601,
                                                        "message": "Method not found"}}, {}


_OBJECT = {"type": "object"}
ODD_TOOLS = [
    ECHO,
    {"name": "broken", "description": "A schema that is no object.", "inputSchema": "nope"},
    {"name": "", "description": "No name.", "inputSchema": _OBJECT},
    {"name": "echo", "description": "The same name again.", "inputSchema": _OBJECT},
    {"name": "quiet", "inputSchema": _OBJECT,
     "annotations": {"readOnlyHint": True, "title": "Quiet"}},
    {"name": "weird", "description": "Answers an unknown block.", "inputSchema": _OBJECT},
    {"name": "notext", "description": "Answers a text block without text.",
     "inputSchema": _OBJECT},
    {"name": "remote", "description": "Refers to a schema elsewhere.", "inputSchema": {
        "type": "object", "properties": {"a": {"$ref": "https://example.org/a.json"}}}},
]
_ODD_CONTENT = {"weird": [{"type": "weird"}], "notext": [{"type": "text"}]}


def _legacy_odd(handler: Any, message: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    method, rid = message.get("method"), message.get("id")
    if method not in ("tools/list", "tools/call") or \
            handler.headers.get("mcp-session-id") != SESSION:
        return _legacy(handler, message)
    if method == "tools/list":
        return 200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": ODD_TOOLS}}, {}
    content = _ODD_CONTENT.get(message["params"]["name"], [{"type": "text", "text": "ok"}])
    return 200, {"jsonrpc": "2.0", "id": rid, "result": {"content": content}}, {}


def _modern_only(handler: Any, message: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    rid = message.get("id")
    if message.get("method") == "server/discover":
        return 200, {"jsonrpc": "2.0", "id": rid, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "modern-only", "version": "0.0.1"}, **_CACHE}}, {}
    return 400, {"jsonrpc": "2.0", "id": rid, "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"]}}}, {}


def _sse_comments(handler: Any, message: dict[str, Any]) -> None:
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.end_headers()
    try:
        while True:
            handler.wfile.write(b": still here\n\n")
            handler.wfile.flush()
            time.sleep(0.05)
    except OSError:  # the client gave up and closed the connection
        return


DEPTH = 70


def _deep(handler: Any, message: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    nested: Any = "bottom"
    for _ in range(DEPTH):
        nested = [nested]
    return 200, {"jsonrpc": "2.0", "id": message.get("id"), "result": {"deep": nested}}, {}


def _modern_error(handler: Any, message: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    return 400, {"jsonrpc": "2.0", "id": message.get("id"), "error": {
        "code": -32020, "message": "mcp-method header does not match the request body"}}, {}


def _slow_discover(handler: Any, message: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    if message.get("method") == "server/discover":
        time.sleep(60)
    return _legacy(handler, message)


def _huge_discover(handler: Any, message: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    return 200, {"jsonrpc": "2.0", "id": message.get("id"), "result": {
        "supportedVersions": ["2026-07-28"], "capabilities": {}, "resultType": "complete",
        "ttlMs": 0, "cacheScope": "private", "padding": "x" * (2 << 20)}}, {}


GOOD = {"name": "good", "inputSchema": {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"}}}}
BAD_ANNOTATION = {"name": "bad", "inputSchema": {"type": "object", "properties": {
    "n": {"type": "number", "x-mcp-header": "N"}}}}
_CACHE = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}


def _modern_bad_annotation(handler: Any, message: dict[str, Any]
                           ) -> tuple[int, Any, dict[str, str]]:
    rid, method = message.get("id"), message.get("method")
    if method == "server/discover":
        return 200, {"jsonrpc": "2.0", "id": rid, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "bad-annotation", "version": "0.0.1"}, **_CACHE}}, {}
    if method == "tools/list":
        return 200, {"jsonrpc": "2.0", "id": rid, "result": {
            "tools": [GOOD, BAD_ANNOTATION], **_CACHE}}, {}
    return 404, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601,
                                                        "message": "Method not found"}}, {}


_ASKS = [{"jsonrpc": "2.0", "id": "ping-1", "method": "ping"},
         {"jsonrpc": "2.0", "id": "ask-2", "method": "elicitation/create", "params": {
             "mode": "form", "message": "Your name?", "requestedSchema": {
                 "type": "object", "properties": {"name": {"type": "string"}}}}}]
_answers: dict[object, Any] = {}
_answered = threading.Condition()


def _legacy_asks(handler: Any, message: dict[str, Any]) -> tuple[int, Any, dict[str, str]] | None:
    """None when the answer was written here (a streamed ``tools/call``)."""
    if "method" not in message and handler.headers.get("mcp-session-id") == SESSION:
        with _answered:
            _answers[message.get("id")] = message.get("result", message.get("error"))
            _answered.notify_all()
        return 202, None, {}
    if message.get("method") != "tools/call" or handler.headers.get("mcp-session-id") != SESSION:
        return _legacy(handler, message)
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.end_headers()
    for ask in _ASKS:
        handler.wfile.write(f"event: message\ndata: {json.dumps(ask)}\n\n".encode())
    handler.wfile.flush()
    with _answered:
        _answered.wait_for(lambda: all(a["id"] in _answers for a in _ASKS), ANSWER_WAIT_S)
        seen = dict(_answers)
    result = {"jsonrpc": "2.0", "id": message["id"], "result": {
        "content": [{"type": "text", "text": json.dumps(seen, sort_keys=True)}],
        "isError": False}}
    handler.wfile.write(f"event: message\ndata: {json.dumps(result)}\n\n".encode())
    return None


KINDS = {"modern-error": _modern_error, "slow-discover": _slow_discover,
         "legacy-only": _legacy, "huge-discover": _huge_discover,
         "legacy-asks": _legacy_asks, "modern-bad-annotation": _modern_bad_annotation,
         "legacy-odd": _legacy_odd, "modern-only": _modern_only,
         "sse-comments": _sse_comments, "deep": _deep}


def _serve(kind: str, log: Path) -> None:
    behaviour = KINDS[kind]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers["content-length"])))
            with log.open("a") as out:
                out.write(f"{message.get('method')}\n")
            answer = behaviour(self, message)
            if answer is None:
                return
            status, body, headers = answer
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if body is not None:
                self.send_header("content-type", "application/json")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_DELETE(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


@contextmanager
def start(kind: str, tmp: Path) -> Iterator[tuple[str, Path]]:
    """Run a ``kind`` server; yield its URL and the log of methods it received."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from process_kit import keep_draining, read_until, stop_process

    log = tmp / f"{kind}.log"
    log.write_text("")
    proc = subprocess.Popen([sys.executable, __file__, kind, str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        port = int(read_until(proc.stdout, re.compile(rb"PORT (\d+)\n"), 20).group(1))
        keep_draining(proc.stderr)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        stop_process(proc, grace=10)
        if proc.stdout is not None:
            proc.stdout.close()


def methods_seen(log: Path) -> list[str]:
    return log.read_text().split()


if __name__ == "__main__":
    _serve(sys.argv[1], Path(sys.argv[2]))
