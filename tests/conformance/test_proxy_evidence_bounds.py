"""Proxy evidence stays bounded against a hostile origin: a body over the views' bound is
stored cut and marked, one over the tap's bound is a stable error (never silently passed on
cut), and an origin that trickles bytes forever is given up at the forward's deadline."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from toolkeeper.conformance import DEFAULT_EXCHANGES, run_proxy_evidence
from toolkeeper.conformance.tap import RecordingTap
from toolkeeper.errors import ConformanceError

LIST = DEFAULT_EXCHANGES[0]
BIG = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [], "pad": "x" * 8000}},
                 separators=(",", ":")).encode()
"""An origin answer of about 8 KB, far over the bounds the tests set."""


class _Origin(ThreadingHTTPServer):
    daemon_threads = True
    stop: threading.Event


class _BigHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(BIG)))
        self.end_headers()
        self.wfile.write(BIG)


class _TrickleHandler(BaseHTTPRequestHandler):
    """Declares a long body and sends it one byte at a time, every 50 ms, until stopped."""

    protocol_version = "HTTP/1.1"
    server: _Origin

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "1000000")
        self.end_headers()
        try:
            while not self.server.stop.wait(0.05):  # the origin's pacing, not a test wait
                self.wfile.write(b" ")
                self.wfile.flush()
        except OSError:
            pass


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = _Origin(("127.0.0.1", 0), handler)
    server.stop = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def big_origin() -> Iterator[str]:
    yield from _serve(_BigHandler)


@pytest.fixture
def trickling_origin() -> Iterator[str]:
    yield from _serve(_TrickleHandler)


def test_a_body_over_the_view_bound_is_stored_cut_and_marked_with_its_length(
        nginx: str, big_origin: str) -> None:
    report = run_proxy_evidence(big_origin, "correct", (LIST,), body_bound=1024)
    [exchange] = report.to_json()["exchanges"]
    for body in (exchange["origin"]["body"], exchange["egress"]["body"]):
        assert (body["truncated"], body["length"]) == (True, len(BIG))
        assert len(body["value"].encode()) <= 1024
    assert exchange["origin"]["body"]["digest"] == exchange["egress"]["body"]["digest"]
    assert "truncated" not in exchange["ingress"]["body"]
    assert report.findings == ()
    assert len(report.canonical()) < 8 * 1024


def test_a_body_over_the_tap_bound_is_a_stable_error_not_a_cut_answer(
        nginx: str, big_origin: str) -> None:
    with pytest.raises(ConformanceError) as caught:
        run_proxy_evidence(big_origin, "correct", (LIST,), origin_bound=2048)
    assert caught.value.code == "conformance.evidence_truncated"
    assert caught.value.data == {"exchange": LIST.name, "bound": 2048, "read": 2049,
                                 "length": len(BIG)}


@pytest.mark.timeout(60)  # an origin never given up trickles until the tap is stopped
def test_a_trickling_origin_is_given_up_at_the_forward_deadline(trickling_origin: str) -> None:
    with RecordingTap(trickling_origin, deadline_s=0.5) as tap:
        connection = http.client.HTTPConnection("127.0.0.1", tap.port, timeout=20)
        try:
            connection.request("POST", "/mcp", body=LIST.body,
                               headers={"content-type": "application/json"})
            response = connection.getresponse()
            assert response.status == 502
            response.read()
        finally:
            connection.close()
        assert tap.failures() == ["TimeoutError"]
        assert tap.records() == []


def test_a_trickling_origin_through_nginx_is_a_stable_error(
        nginx: str, trickling_origin: str) -> None:
    with pytest.raises(ConformanceError) as caught:
        run_proxy_evidence(trickling_origin, "correct", (LIST,), origin_deadline_s=0.5)
    assert caught.value.code == "conformance.origin_unreachable"
    assert caught.value.data == {"exchange": LIST.name, "error": "TimeoutError"}
