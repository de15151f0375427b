"""``conformance proxy`` in front of an origin that does not speak the 2026-07-28 era (a
legacy-only server answering every session-less POST with -32000, as the official SDKs do):
one ``origin.not_modern`` finding naming what the origin answered, and no hop blamed for the
harness's own deliberate header/body mismatch. The deployment assertions (``--content-type``,
``--accept``) are taken on the command line."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from click.testing import CliRunner

from process_kit import serving_handler
from toolkeeper.cli.main import cli
from toolkeeper.conformance import run_proxy_evidence

NO_SESSION = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
    "code": -32000, "message": "Bad Request: No valid session ID provided"}}).encode()


class _LegacyOnly(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(NO_SESSION)))
        self.end_headers()
        self.wfile.write(NO_SESSION)

    def log_message(self, format: str, *args: object) -> None:  # stdlib signature
        return


def _legacy_origin() -> AbstractContextManager[str]:
    return serving_handler(_LegacyOnly)


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["conformance", "proxy", *args])


def test_a_legacy_only_origin_is_one_finding_and_no_hop_is_blamed(nginx: str) -> None:
    with _legacy_origin() as url:
        report = run_proxy_evidence(url, "correct")
    assert [(f.id, f.hop, f.exchange) for f in report.findings] == [
        ("origin.not_modern", "origin", "")]
    assert report.findings[0].detail == {"statuses": [400], "errorCodes": [-32000],
                                         "exchanges": 3}
    assert report.issues == ("origin does not speak the 2026-07-28 era",)


def test_the_cli_says_so_once_and_exits_1(nginx: str) -> None:
    with _legacy_origin() as url:
        result = _invoke("--origin", url, "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert [f["id"] for f in report["findings"]] == ["origin.not_modern"]


def test_deployment_assertions_are_taken_on_the_command_line(nginx: str) -> None:
    result = _invoke("--app", "--json", "--content-type", "application/json",
                     "--accept", "application/x-never-listed")
    assert result.exit_code == 1, result.output
    ids = {f["id"] for f in json.loads(result.output)["findings"]}
    assert "deployment.accept" in ids
    clean = _invoke("--app", "--json", "--accept", "application/json",
                    "--content-type", "application/json", "--content-type",
                    "text/event-stream")
    assert clean.exit_code == 0, clean.output


@pytest.mark.parametrize("value", ["json", "", "text/plain, a/b"])
def test_a_value_that_is_not_a_media_type_is_a_usage_error(value: str) -> None:
    result = _invoke("--app", "--json", "--accept", value)
    assert result.exit_code == 2
    assert json.loads(result.output)["error"]["code"] == "cli.bad_media_type"
