"""Per-era response validation (SPEC 5.2): envelope, ``resultType`` and the method payload,
each problem reported at its JSON path; additive unknown fields are never a problem."""

from __future__ import annotations

from typing import Any

import pytest

from toolkeeper.protocol.responses import (
    check_error_status,
    is_recognised_modern_error,
    validate_response,
)
from toolkeeper.protocol.versions import Era

TOOL = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}
LIST_OK = {"tools": [TOOL], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
CALL_OK = {"content": [], "isError": False, "resultType": "complete"}


def _answer(result: dict[str, Any], request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _paths(problems: list[str]) -> list[str]:
    return [p.split(":")[0] for p in problems]


def test_valid_modern_answers_have_no_problems_and_unknown_fields_are_kept() -> None:
    assert validate_response(_answer({**LIST_OK, "futureHint": 1}), 1, Era.MODERN,
                             "tools/list") == []
    assert validate_response(_answer({**CALL_OK, "_meta": {"x": 1}}), 1, Era.MODERN,
                             "tools/call") == []


@pytest.mark.parametrize(("answer", "path"), [
    ({"jsonrpc": "2.0", "id": "1", "result": CALL_OK}, "$.id"),
    ({"jsonrpc": "2.0", "id": 1.0, "result": CALL_OK}, "$.id"),
    ({"jsonrpc": "1.0", "id": 1, "result": CALL_OK}, "$.jsonrpc"),
    ({"jsonrpc": "2.0", "id": 1, "result": CALL_OK, "error": {"code": 1, "message": ""}}, "$"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}, "$.error.code"),
])
def test_the_envelope_is_checked_first(answer: dict[str, Any], path: str) -> None:
    assert path in _paths(validate_response(answer, 1, Era.MODERN, "tools/call"))


@pytest.mark.parametrize(("result", "method", "path"), [
    ({"content": [], "isError": False}, "tools/call", "$.result.resultType"),
    ({**CALL_OK, "resultType": "weird"}, "tools/call", "$.result.resultType"),
    ({**CALL_OK, "resultType": "task"}, "tools/call", "$.result.resultType"),
    ({**LIST_OK, "resultType": "input_required"}, "tools/list", "$.result.resultType"),
    ({**LIST_OK, "ttlMs": -1}, "tools/list", "$.result.ttlMs"),
    ({**LIST_OK, "ttlMs": True}, "tools/list", "$.result.ttlMs"),
    ({key: v for key, v in LIST_OK.items() if key != "cacheScope"}, "tools/list",
     "$.result.cacheScope"),
    ({**LIST_OK, "tools": [TOOL, TOOL]}, "tools/list", "$.result.tools[1].name"),
    ({**LIST_OK, "tools": [{**TOOL, "inputSchema": {"type": "array"}}]}, "tools/list",
     "$.result.tools[0].inputSchema"),
    ({**CALL_OK, "content": "x"}, "tools/call", "$.result.content"),
])
def test_modern_result_rules(result: dict[str, Any], method: str, path: str) -> None:
    assert path in _paths(validate_response(_answer(result), 1, Era.MODERN, method))


def test_a_task_result_is_valid_only_with_the_tasks_extension_declared() -> None:
    task = _answer({"resultType": "task", "taskId": "t1", "status": "working",
                    "createdAt": "2026-01-01T00:00:00Z",
                    "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 1000})
    tasks = frozenset({"io.modelcontextprotocol/tasks"})
    assert validate_response(task, 1, Era.MODERN, "tools/call", tasks) == []
    assert validate_response(task, 1, Era.MODERN, "tools/list", tasks) != []


def test_a_missing_result_type_reads_as_complete_only_in_the_legacy_era() -> None:
    legacy_list = _answer({"tools": [TOOL]})
    assert validate_response(legacy_list, 1, Era.LEGACY, "tools/list") == []
    assert "$.result.resultType" in _paths(
        validate_response(legacy_list, 1, Era.MODERN, "tools/list"))


def test_initialize_must_negotiate_a_legacy_revision() -> None:
    result = {"protocolVersion": "2026-07-28", "capabilities": {},
              "serverInfo": {"name": "s", "version": "1"}}
    assert _paths(validate_response(_answer(result), 1, Era.LEGACY, "initialize")) == [
        "$.result.protocolVersion"]
    result["protocolVersion"] = "2025-06-18"
    assert validate_response(_answer(result), 1, Era.LEGACY, "initialize") == []


@pytest.mark.parametrize(("error", "recognised"), [
    ({"code": -32020, "message": "m"}, True), ({"code": -32021, "message": "m"}, True),
    ({"code": -32022, "message": "m"}, True), ({"code": -32601, "message": "m"}, False),
    ({"code": -32001, "message": "m"}, False), ({"code": "-32020", "message": "m"}, False),
])
def test_only_the_three_modern_codes_are_recognised_modern_errors(error: dict[str, Any],
                                                                  recognised: bool) -> None:
    assert is_recognised_modern_error(error) is recognised


@pytest.mark.parametrize(("code", "status", "streamed", "ok"), [
    (-32020, 400, False, True), (-32022, 400, False, True), (-32601, 404, False, True),
    (-32603, 200, False, True), (-32602, 200, False, False), (-32601, 400, False, False),
    (-32020, 200, True, True), (-32020, 400, True, False),
])
def test_a_modern_error_carries_its_http_status(code: int, status: int, streamed: bool,
                                                ok: bool) -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m"}}
    assert (check_error_status(answer, status, Era.MODERN, streamed=streamed) == []) is ok
    assert check_error_status(answer, 200, Era.LEGACY) == []


def test_a_modern_result_comes_with_200() -> None:
    assert check_error_status(_answer(CALL_OK), 200, Era.MODERN) == []
    assert check_error_status(_answer(CALL_OK), 201, Era.MODERN) != []
