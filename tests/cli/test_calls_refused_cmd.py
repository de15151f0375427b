"""``toolkeeper calls --refused``: the refusal log, with the call log's filters (``--reason``
for ``--outcome``), newest first, read-only, as text or ``--json``."""

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
from toolkeeper.registry.call_rows import open_call_rows, open_refusal_rows
from toolkeeper.server.calllog import CallRecord, RefusalRecord

HOUR_NS = 3600 * 10**9

REFUSALS = (
    RefusalRecord("unknown_tool", "nope", None, "acme", "key_acme", "modern", 1),
    RefusalRecord("unentitled_tool", "vault", "1.0.0", "globex", "key_globex", "modern", "b"),
    RefusalRecord("auth.revoked", None, None, None, "key_old", "modern", None),
    RefusalRecord("invalid_arguments", "calc", "2.0.0", "acme", "key_acme", "legacy", 4,
                  "sha256:ab"),
)


def _fill(url: str) -> str:
    Registry.open(url).close()
    now = time.time_ns()
    clock = iter([now - 60 * 10**9, now - 3 * HOUR_NS, now - 2 * HOUR_NS, now - 60 * 10**9,
                  now])
    recorder = CallRecorder(open_call_rows(url), refusal_rows=open_refusal_rows(url),
                            clock_ns=lambda: next(clock))
    handle = recorder.dispatched(CallRecord("calc", "2.0.0", "acme", "sha256:cd", "modern",
                                            credential="key_acme", request_id=9))
    recorder.completed(handle, "ok", 1.0)
    for record in REFUSALS:
        recorder.refused(record)
    recorder.stop()
    return url


@pytest.fixture
def url(tmp_path: Path) -> str:
    return _fill(f"sqlite:///{tmp_path / 'r.db'}")


def run(*args: str) -> tuple[int, Any]:
    result = CliRunner().invoke(cli, ["calls", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(("filters", "request_ids"), [
    ((), [4, None, "b", 1]),
    (("--tool", "vault"), ["b"]),
    (("--tenant", "acme"), [4, 1]),
    (("--reason", "auth.revoked"), [None]),
    (("--tenant", "acme", "--reason", "unknown_tool"), [1]),
    (("--since", "90m"), [4, None]),
    (("--limit", "2"), [4, None]),
])
def test_refusals_are_listed_newest_first_and_filtered(url: str, filters: tuple[str, ...],
                                                       request_ids: list[Any]) -> None:
    code, listed = run("--registry", url, "--refused", *filters)
    assert code == 0
    assert [row["request_id"] for row in listed] == request_ids


def test_a_refusal_row_carries_reason_principal_tool_version_as_asked_and_era(url: str) -> None:
    _, listed = run("--registry", url, "--refused", "--tool", "vault")
    row = listed[0]
    assert {k: row[k] for k in ("reason", "tenant", "credential", "tool", "version", "era",
                                "request_id", "arguments_digest")} == {
        "reason": "unentitled_tool", "tenant": "globex", "credential": "key_globex",
        "tool": "vault", "version": "1.0.0", "era": "modern", "request_id": "b",
        "arguments_digest": None}
    assert row["at"].endswith("Z")
    assert isinstance(row["seq"], int)


def test_the_call_log_and_the_refusal_log_are_apart(url: str) -> None:
    _, calls = run("--registry", url)
    _, refused = run("--registry", url, "--refused")
    assert [row["request_id"] for row in calls] == [9]
    assert 9 not in [row["request_id"] for row in refused]


def test_text_output_is_one_line_per_refusal(url: str) -> None:
    result = CliRunner().invoke(cli, ["calls", "--registry", url, "--refused"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    assert lines[1].split(" ")[1:] == ["-", "-", "auth.revoked", "-/key_old", "modern"]
    assert lines[3].split(" ")[1:] == ["nope", "-", "unknown_tool", "acme/key_acme", "modern"]


@pytest.mark.parametrize("args", [("--refused", "--outcome", "ok"), ("--reason", "unknown_tool")])
def test_a_filter_of_the_other_log_exits_2_with_a_stable_code(url: str,
                                                              args: tuple[str, ...]) -> None:
    code, body = run("--registry", url, *args)
    assert (code, body["error"]["code"]) == (2, "cli.option_conflict")


def test_reading_refusals_never_writes_the_registry(url: str) -> None:
    path = Path(url.removeprefix("sqlite://"))
    before = path.stat().st_mtime_ns, path.read_bytes()
    assert run("--registry", url, "--refused")[0] == 0
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


@pytest.mark.postgres
def test_refusals_are_read_from_postgresql_with_the_same_filters(pg_url: str) -> None:
    url = _fill(pg_url)
    code, listed = run("--registry", url, "--refused", "--tenant", "acme")
    assert (code, [row["reason"] for row in listed]) == (0, ["invalid_arguments",
                                                             "unknown_tool"])
