"""The response judgments the conformance harness added to protocol/responses.py: what may
answer a notification, the order and ids of an answer stream, and the task and completion
payloads (SPEC 5.2)."""

from __future__ import annotations

from typing import Any

import pytest

from toolkeeper.protocol.responses import (
    check_notification_answer,
    check_stream,
    validate_response,
)
from toolkeeper.protocol.versions import Era

TASKS = frozenset({"io.modelcontextprotocol/tasks"})
TASK = {"resultType": "task", "taskId": "t1", "status": "working",
        "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
        "ttlMs": 1000}
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "p", "progress": 1}}


def _paths(problems: list[str]) -> list[str]:
    return [p.split(":")[0] for p in problems]


@pytest.mark.parametrize(("status", "body", "messages", "paths"), [
    (202, b"", (), []),
    (None, b"", (), []),
    (200, b"", (), ["$"]),
    (202, b'{"x":1}', (), ["$"]),
    (200, b'{"jsonrpc":"2.0","id":null,"result":null}',
     ({"jsonrpc": "2.0", "id": None, "result": None},), ["$", "$"]),
    (None, b"", ({"jsonrpc": "2.0", "id": None, "result": {}},), ["$"]),
])
def test_a_notification_gets_202_with_an_empty_body_and_no_message(
        status: int | None, body: bytes, messages: tuple[Any, ...], paths: list[str]) -> None:
    assert _paths(check_notification_answer(status, body, messages)) == paths


def test_a_stream_holds_notifications_then_the_response_with_the_request_id() -> None:
    response = {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert check_stream([PROGRESS, PROGRESS, response], 1) == []
    assert _paths(check_stream([PROGRESS, {**response, "id": "1"}], 1)) == ["$.events[1].id"]
    assert _paths(check_stream([response, PROGRESS, response], 1)) == ["$.events[0]"]
    assert _paths(check_stream(["text", response], 1)) == ["$.events[0]"]


@pytest.mark.parametrize(("change", "paths"), [
    ({}, []),
    ({"pollIntervalMs": 500}, []),
    ({"ttlMs": None}, []),
    ({"taskId": ""}, ["$.result.taskId"]),
    ({"status": "sleeping"}, ["$.result.status"]),
    ({"createdAt": 1}, ["$.result.createdAt"]),
    ({"ttlMs": -1}, ["$.result.ttlMs"]),
    ({"ttlMs": True}, ["$.result.ttlMs"]),
    ({"pollIntervalMs": 0}, ["$.result.pollIntervalMs"]),
])
def test_a_task_result_needs_its_fields_when_the_extension_was_declared(
        change: dict[str, Any], paths: list[str]) -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "result": {**TASK, **change}}
    assert _paths(validate_response(answer, 1, Era.MODERN, "tools/call", TASKS)) == paths


def test_a_task_result_without_ttl_ms_is_refused() -> None:
    result = {k: v for k, v in TASK.items() if k != "ttlMs"}
    answer = {"jsonrpc": "2.0", "id": 1, "result": result}
    assert _paths(validate_response(answer, 1, Era.MODERN, "tools/call", TASKS)) == [
        "$.result.ttlMs"]


@pytest.mark.parametrize(("completion", "paths"), [
    ({"values": ["a"], "total": 1, "hasMore": False}, []),
    ({"values": [f"v{i}" for i in range(100)]}, []),
    ({"values": [f"v{i}" for i in range(101)]}, ["$.result.completion.values"]),
    ({"values": ["a", 1]}, ["$.result.completion.values"]),
    ({"values": [], "total": -1}, ["$.result.completion.total"]),
    ({"values": [], "total": 1.5}, ["$.result.completion.total"]),
    ({"values": [], "hasMore": "no"}, ["$.result.completion.hasMore"]),
    ("nope", ["$.result.completion"]),
])
def test_a_completion_holds_at_most_100_strings_a_total_and_has_more(
        completion: Any, paths: list[str]) -> None:
    answer = {"jsonrpc": "2.0", "id": 1,
              "result": {"resultType": "complete", "completion": completion}}
    assert _paths(validate_response(answer, 1, Era.MODERN, "completion/complete")) == paths
