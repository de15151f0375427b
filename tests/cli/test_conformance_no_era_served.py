"""``toolkeeper conformance run`` against a target that answers but serves no MCP era at all
(an HTML 500 to every request, ``python3 -m http.server``, a stdio command that writes
lines that are not JSON): under ``--era auto`` there is nothing to judge, so there is no
report (neither a green run of skips nor dozens of failures): one refusal,
``conformance.unserved``, naming each era's reason, and exit 2. Naming an era the target
does not serve is one ``era.unserved`` verdict with that era's cases skipped, and exit 2.
A silent target (``sleep 100``, an HTTP server that never answers) exits 2 as unreachable
with ``client.timeout`` within the bound of its two probes."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from process_kit import START_TIMEOUT_S, read_until, serving_handler, stop_process
from toolkeeper.cli.main import cli
from toolkeeper.client import ClientTimeouts, Target
from toolkeeper.conformance import builtin_corpus
from toolkeeper.conformance.runner import RunOptions, run_transcripts
from toolkeeper.errors import ConformanceError

_SERVING = re.compile(rb"Serving HTTP on 127\.0\.0\.1 port (\d+)")
GARBAGE_LINES = "import sys\nfor _ in sys.stdin:\n    print('not json', flush=True)\n"


class _Html500(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = b"<html>internal error</html>"
        self.send_response(500)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:  # stdlib signature
        return


def _html_500_server() -> AbstractContextManager[str]:
    return serving_handler(_Html500)


def _check(result: Result) -> None:
    assert result.exit_code == 2, result.output[-300:]
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "conformance.unserved"
    assert sorted(error["data"]["eras"]) == ["2025-11-25", "2026-07-28"]
    assert error["data"]["decision"]["era"] is None


def test_an_http_target_that_answers_html_500_to_everything_is_refused_once() -> None:
    with _html_500_server() as url:
        _check(CliRunner().invoke(cli, ["conformance", "run", "--url", url, "--json"]))


def test_a_named_era_the_target_does_not_serve_is_one_verdict_and_its_cases_skip() -> None:
    with _html_500_server() as url:
        result = CliRunner().invoke(cli, ["conformance", "run", "--url", url, "--era",
                                          "2026-07-28", "--json"])
    assert result.exit_code == 2, result.output[-300:]
    report = json.loads(result.stdout)
    assert [v["era"] for v in report["eras"]] == ["2026-07-28"]
    assert report["eras"][0]["verdict"] == "era.unserved"
    assert report["live"]["failed"] == 0 and report["live"]["passed"] == 0
    assert report["live"]["skipped"] == sum(c["mode"] == "live" for c in report["cases"])


def test_a_stdio_command_that_answers_no_json_is_refused_once() -> None:
    command = shlex.join([sys.executable, "-c", GARBAGE_LINES])
    _check(CliRunner().invoke(cli, ["conformance", "run", "--stdio", command, "--json"]))


@contextmanager
def _stdlib_file_server(root: Path) -> Iterator[str]:
    """``python3 -m http.server`` on 127.0.0.1, stopped by its pid."""
    process = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind",
                                "127.0.0.1", "0"], cwd=root, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    try:
        assert process.stdout is not None
        port = int(read_until(process.stdout, _SERVING, START_TIMEOUT_S).group(1))
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)
        if process.stdout is not None:
            process.stdout.close()


def test_python_http_server_gets_no_live_pass_and_exits_2(tmp_path: Path) -> None:
    with _stdlib_file_server(tmp_path) as url:
        _check(CliRunner().invoke(cli, ["conformance", "run", "--url", url, "--json"]))


_FAST = ClientTimeouts(probe_s=0.5, close_s=0.5)
"""Probes bounded at 0.5 s instead of 10 s: what is pinned is that the two bounded probes are
all the run waits on, and the code it ends with."""


def test_a_silent_stdio_command_is_unreachable_with_client_timeout_after_two_probes() -> None:
    with pytest.raises(ConformanceError) as caught:
        asyncio.run(run_transcripts(Target.from_stdio(["sleep", "100"]), builtin_corpus(),
                                    RunOptions(timeouts=_FAST)))
    error = caught.value
    assert (error.code, error.data["cause"]) == ("conformance.unreachable", "client.timeout")
    decision = error.data["decision"]
    assert decision["verdict"] == "unreachable.timeout"
    assert decision["observation"]["outcome"] == "timeout"
    assert decision["legacyEvidence"]["failure"] == "client.timeout"


@contextmanager
def _silent_http_server() -> Iterator[str]:
    """Accepts connections and reads the request, never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        stop.set()
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        listener.close()
        for conn in held:
            conn.close()
        thread.join(timeout=10)


def test_an_http_server_that_never_answers_exits_2_unreachable_with_client_timeout(
        ) -> None:
    with _silent_http_server() as url, pytest.raises(ConformanceError) as caught:
        asyncio.run(run_transcripts(Target.from_url(url), builtin_corpus(),
                                    RunOptions(timeouts=_FAST)))
    assert (caught.value.code, caught.value.data["cause"]) == ("conformance.unreachable",
                                                               "client.timeout")
