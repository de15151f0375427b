"""Small stdio servers with one behaviour each: ``python stdio_server_kit.py KIND``.

* ``silent``: reads requests, never answers;
* ``exits``: exits at once;
* ``asks-first``: before answering each request, sends ``ping`` and ``roots/list`` requests
  and answers only once both were answered (a ping result and a -32601 error), then echoes
  ``{"answers": [...]}`` as the result;
* ``deaf``: never reads its input (a pipe to it fills up) and never exits by itself;
* ``stray-ids``: before answering each request, writes a response whose id is an array and
  one whose id is an object (ids no request of the client has), then answers
  ``{"echo": <the request's id>}``;
* ``endless-line``: on its first request, writes one line that never ends (until it is stopped);
* ``notification-flood``: on its first request, writes notifications (never the answer) until
  it is stopped.
"""

from __future__ import annotations

import json
import sys
import time


def _send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _asks_first() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue
        _send({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
        _send({"jsonrpc": "2.0", "id": "s2", "method": "roots/list"})
        answers = [json.loads(sys.stdin.readline()), json.loads(sys.stdin.readline())]
        _send({"jsonrpc": "2.0", "id": request["id"], "result": {"answers": answers}})


def _stray_ids() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue
        _send({"jsonrpc": "2.0", "id": [request["id"]], "result": {}})
        _send({"jsonrpc": "2.0", "id": {"of": request["id"]}, "result": {}})
        _send({"jsonrpc": "2.0", "id": request["id"], "result": {"echo": request["id"]}})


def main(kind: str) -> None:
    if kind == "exits":
        return
    if kind == "silent":
        for _ in sys.stdin:
            pass
        return
    if kind == "deaf":
        while True:
            time.sleep(60)
    if kind == "stray-ids":
        _stray_ids()
        return
    if kind == "notification-flood":
        sys.stdin.readline()
        while True:
            _send({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "info", "data": "x" * 1000}})
    if kind == "endless-line":
        sys.stdin.readline()
        while True:
            sys.stdout.write("x" * 65536)
    _asks_first()


if __name__ == "__main__":
    main(sys.argv[1])
