"""``toolkeeper calls``: the durable call log, filtered, newest first, read-only."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.cli.main import cli
from toolkeeper.observability.recorder import CallRecorder
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import open_call_rows
from toolkeeper.server.calllog import CallRecord

HOUR_NS = 3600 * 10**9


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite://{tmp_path / 'r.db'}"
    Registry.open(url).close()
    now = time.time_ns()
    clock = iter([now - 3 * HOUR_NS, now - 2 * HOUR_NS, now - 60 * 10**9, now])
    recorder = CallRecorder(open_call_rows(url), clock_ns=lambda: next(clock))
    for tool, tenant, outcome, request_id in (("calc", "acme", "ok", 1),
                                              ("calc", "globex", "error", "b"),
                                              ("vault", "acme", "exception", 3),
                                              ("calc", "acme", "ok", 4)):
        handle = recorder.dispatched(CallRecord(tool, "1.0.0", tenant, "sha256:ab", "modern",
                                                credential=f"key_{tenant}",
                                                request_id=request_id))
        recorder.completed(handle, outcome, 2.5)
    recorder.stop()
    return url


def run(*args: str) -> tuple[int, Any]:
    result = CliRunner().invoke(cli, ["calls", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(("filters", "request_ids"), [
    ((), [4, 3, "b", 1]),
    (("--tool", "calc"), [4, "b", 1]),
    (("--tenant", "acme", "--tool", "calc"), [4, 1]),
    (("--outcome", "exception"), [3]),
    (("--since", "90m"), [4, 3]),
    (("--limit", "2"), [4, 3]),
])
def test_calls_are_listed_newest_first_and_filtered(url: str, filters: tuple[str, ...],
                                                    request_ids: list[Any]) -> None:
    code, listed = run("--registry", url, *filters)
    assert code == 0
    assert [row["request_id"] for row in listed] == request_ids


def test_a_row_carries_principal_tool_digest_outcome_and_latency(url: str) -> None:
    _, listed = run("--registry", url, "--limit", "1")
    row = listed[0]
    assert {k: row[k] for k in ("tenant", "credential", "tool", "version", "era",
                                "arguments_digest", "outcome", "latency_ms")} == {
        "tenant": "acme", "credential": "key_acme", "tool": "calc", "version": "1.0.0",
        "era": "modern", "arguments_digest": "sha256:ab", "outcome": "ok", "latency_ms": 2.5}
    assert row["at"].endswith("Z")


def test_since_accepts_an_iso_time(url: str) -> None:
    code, listed = run("--registry", url, "--since", "2000-01-01T00:00:00")
    assert (code, len(listed)) == (0, 4)


@pytest.mark.parametrize(("args", "error"), [
    (("--since", "yesterday"), "cli.since_invalid"),
    (("--registry", "sqlite:///nonexistent/dir/r.db"), "registry.missing"),
])
def test_bad_input_exits_2_with_a_stable_code(url: str, args: tuple[str, ...],
                                              error: str) -> None:
    code, body = run("--registry", url, *args)
    assert (code, body["error"]["code"]) == (2, error)


def test_reading_never_writes_the_registry(url: str) -> None:
    path = Path(url.removeprefix("sqlite://"))
    before = path.stat().st_mtime_ns, path.read_bytes()
    assert run("--registry", url)[0] == 0
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before
