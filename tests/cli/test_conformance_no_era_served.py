"""``toolkeeper conformance run`` against a target that answers but serves no MCP era at all
(an HTML 500 to every request, a stdio command that writes lines that are not JSON): under
``--era auto`` there is nothing to judge, so there is no report (neither a green run of skips
nor dozens of failures): one refusal, ``conformance.unserved``, naming each era's reason, and
exit 2. Naming an era the target does not serve is one ``era.unserved`` verdict with that
era's cases skipped, and exit 2."""

from __future__ import annotations

import json
import shlex
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from click.testing import CliRunner, Result

from toolkeeper.cli.main import cli

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


@contextmanager
def _html_500_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Html500)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _check(result: Result) -> None:
    assert result.exit_code == 2, result.output[-300:]
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "conformance.unserved"
    assert sorted(error["data"]["eras"]) == ["2025-11-25", "2026-07-28"]


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
