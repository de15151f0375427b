"""Issue 16, acceptance 6: no artefact the harness writes holds a secret of the redaction
corpus. Every writer runs against targets whose traffic carries every secret (in result bodies,
error messages and data, and response headers): the run report (``conformance run --json`` and
``--markdown``), the SDK diff report (canonical JSON and Markdown, with the real SDKs' values
and exceptions quoting the secrets) and the proxy report (``conformance proxy --json`` and
``--markdown`` through a real nginx). Every file written is scanned; a piece of a secret that
is also a word of the harness's own vocabulary (``response`` in a finding code, ``egotiate`` in
``negotiatedEra``) counts only when the same writer's artefact for a clean target lacks it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conformance_kit import demo_app, served_url
from sdk_kit import require_sdk

from peer_kit import Peers
from redaction_kit import CORPUS, leaks
from toolkeeper.cli.main import cli
from toolkeeper.conformance import Host, canonical_text, parse_transcript, run_sdk_diff
from toolkeeper.conformance.render_evidence import sdk_diff_markdown

_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
_HEADER_VALUE = re.compile(r"^[\x20-\x7e]+$")
"""What a header value may be (visible ASCII and spaces): a multi-line secret (a private key)
travels in the bodies only, and in the note header with its line breaks as spaces."""
LEAKS: list[dict[str, Any]] = [case.arguments() for case in CORPUS]
TEXTS = " ; ".join(case.text.replace("{secret}", case.secrets[0]) for case in CORPUS
                   if case.text is not None)
KEYED = {case.key: case.secrets[0] for case in CORPUS if case.key is not None}
SECRET_HEADERS: list[tuple[bytes, bytes]] = [
    (key.lower().encode(), secret.encode()) for key, secret in KEYED.items()
    if _TOKEN.match(key) and _HEADER_VALUE.match(secret)] + [
    (b"x-note", " ".join(TEXTS.split()).encode("ascii", "replace"))]


class SecretApp:
    """The demo gateway, every JSON answer's result carrying every secret of the corpus (and
    every response the secrets as headers): traffic a careless server could send."""

    def __init__(self) -> None:
        self.inner = demo_app()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        start: dict[str, Any] = {}

        async def rewrite(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body = message.get("body", b"")
            if message.get("more_body") or not start:
                if start:
                    await send({**start, "headers": [*start["headers"], *SECRET_HEADERS]})
                    start.clear()
                await send(message)
                return
            try:
                value = json.loads(body)
            except ValueError:
                value = None
            if isinstance(value, dict) and isinstance(value.get("result"), dict):
                value["result"]["leak"] = LEAKS
                body = json.dumps(value).encode()
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, *SECRET_HEADERS,
                                             (b"content-length", str(len(body)).encode())]})
            start.clear()
            await send({**message, "body": body})

        await self.inner(scope, receive, rewrite)


@pytest.fixture(scope="module")
def secret_origin() -> Iterator[str]:
    with served_url(SecretApp()) as url:
        yield url


@pytest.fixture(scope="module")
def clean_origin() -> Iterator[str]:
    with served_url(demo_app()) as url:
        yield url


def _scan(directory: Path, clean: Path) -> None:
    """Every file in ``directory`` against the file of the same name in ``clean``."""
    written = sorted(p for p in directory.iterdir() if p.is_file())
    assert written
    for path in written:
        text, vocabulary = path.read_text("utf-8"), (clean / path.name).read_text("utf-8")
        for case in CORPUS:
            found = set(leaks(text, case)) - set(leaks(vocabulary, case))
            assert found == set(), (path.name, case.name, sorted(found))


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """Where the artefacts of the secret-carrying and of the clean target go."""
    secret, clean = tmp_path / "secret", tmp_path / "clean"
    secret.mkdir()
    clean.mkdir()
    return secret, clean


def _invoke(out: Path, *args: str) -> int:
    result = CliRunner().invoke(cli, ["conformance", *args])
    out.write_text(result.output, encoding="utf-8")
    return result.exit_code


def test_the_run_report_json_and_markdown_hold_no_secret(
        secret_origin: str, clean_origin: str, dirs: tuple[Path, Path]) -> None:
    for url, out in zip((secret_origin, clean_origin), dirs, strict=True):
        code = _invoke(out / "run.json", "run", "--url", url, "--json",
                       "--markdown", str(out / "run.md"))
        assert code in (0, 1)
        assert json.loads((out / "run.json").read_text())["total"] > 0
    _scan(*dirs)


def _fixture(name: str, status: int, answer: dict[str, Any], secret: bool = True) -> Any:
    value = {
        "name": name, "class": "golden" if "result" in answer else "negative",
        "era": "2026-07-28", "mode": "recorded", "requirements": ["SPEC-5.6"],
        "description": "an answer carrying every secret of the redaction corpus",
        "expect": {"outcome": "accepted"} if "result" in answer else {
            "outcome": "rejected", "boundary": "tool", "code": -32602},
        "request": {"body": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "lookup", "arguments": {}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}}},
        "response": {"status": status, "headers": {
            "content-type": "application/json", **{k.decode(): v.decode() for k, v in
                                                   SECRET_HEADERS if secret}},
            "body": {"jsonrpc": "2.0", "id": 1, **answer}},
    }
    return parse_transcript(canonical_text(value).encode(), name)


def _fixtures(secret: bool) -> list[Any]:
    texts, keyed = (TEXTS, KEYED) if secret else ("nothing", {"k": "v"})
    return [
        _fixture("golden-secret-result", 200, {"result": {
            "resultType": "complete", "content": [{"type": "text", "text": texts}],
            "structuredContent": {"leak": LEAKS if secret else []}, "futureHint": keyed}},
            secret),
        _fixture("negative-secret-error", 400, {"error": {
            "code": -32602, "message": texts, "data": keyed}}, secret),
    ]


def test_the_sdk_diff_report_holds_no_secret(dirs: tuple[Path, Path], peers: Peers) -> None:
    require_sdk("python")
    sdks = [sdk for sdk, found in peers.sdks(("python", "typescript")).items()
            if found.reason is None]
    for secret, out in zip((True, False), dirs, strict=True):
        report = run_sdk_diff(Host(SecretApp if secret else demo_app, served_url), sdks,
                              "intermediary", fixtures=_fixtures(secret))
        assert all(run.skipped is None and run.raw is not None for run in report.runs)
        assert any(run.redactions for run in report.runs) is secret
        (out / "sdk-diff.json").write_bytes(report.canonical())
        (out / "sdk-diff.md").write_text(sdk_diff_markdown(report), encoding="utf-8")
    _scan(*dirs)


def test_the_proxy_report_json_and_markdown_hold_no_secret(
        nginx: str, secret_origin: str, clean_origin: str, dirs: tuple[Path, Path]) -> None:
    for url, out in zip((secret_origin, clean_origin), dirs, strict=True):
        code = _invoke(out / "proxy.json", "proxy", "--origin", url, "--config", "faulty",
                       "--json", "--markdown", str(out / "proxy.md"))
        assert code == 1
        assert json.loads((out / "proxy.json").read_text())["exchanges"]
    _scan(*dirs)
