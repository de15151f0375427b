"""Method payloads as seed 004 writes them (protocol/responses.py, shared by the client and the
harness): ``tools/list`` descriptors (a non-empty name unique in the list, an object-rooted
``inputSchema``; a missing description a warning), content blocks of a ``tools/call`` result,
a task's ISO 8601 timestamps, and a completion's bounds."""

from __future__ import annotations

from typing import Any

import pytest

from toolkeeper.protocol.responses import (
    check_content,
    descriptor_problems,
    descriptor_warnings,
    validate_response,
)
from toolkeeper.protocol.versions import Era

OBJECT = {"type": "object"}
TASKS = frozenset({"io.modelcontextprotocol/tasks"})
TASK = {"resultType": "task", "taskId": "t1", "status": "working",
        "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00.5+02:00",
        "ttlMs": 1000}


def _paths(problems: list[str]) -> list[str]:
    return [p.split(":")[0] for p in problems]


def _tool(name: Any = "t", schema: Any = OBJECT, **more: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": schema, "description": "d", **more}


@pytest.mark.parametrize(("tools", "found"), [
    ([_tool("a"), _tool("b")], {}),
    ([_tool("a"), _tool("")], {1: ["$.name"]}),
    ([_tool(None)], {0: ["$.name"]}),
    ([_tool("a"), _tool("a"), _tool("a")], {1: ["$.name"], 2: ["$.name"]}),
    ([_tool("a", "nope")], {0: ["$.inputSchema"]}),
    ([_tool("a", {"type": "string"})], {0: ["$.inputSchema"]}),
    ([_tool("a", description=3)], {0: ["$.description"]}),
    (["nope", _tool("a")], {0: ["$"]}),
])
def test_each_malformed_descriptor_is_named_by_its_index_and_path(
        tools: list[Any], found: dict[int, list[str]]) -> None:
    assert {i: _paths(p) for i, p in descriptor_problems(tools).items()} == found


def test_the_harness_sees_every_descriptor_problem_and_the_client_only_the_page_shape(
        ) -> None:
    answer = {"jsonrpc": "2.0", "id": 1,
              "result": {"tools": [_tool("a"), _tool("a", "nope")], "nextCursor": 5}}
    assert _paths(validate_response(answer, 1, Era.LEGACY, "tools/list")) == [
        "$.result.tools[1].name", "$.result.tools[1].inputSchema", "$.result.nextCursor"]
    assert _paths(validate_response(answer, 1, Era.LEGACY, "tools/list",
                                    drop_descriptors=True)) == ["$.result.nextCursor"]


def test_a_missing_or_empty_description_is_a_warning_not_a_problem() -> None:
    tools = [{"name": "a", "inputSchema": OBJECT}, _tool("b", description="  "), _tool("c")]
    assert descriptor_problems(tools) == {}
    assert {i: _paths(p) for i, p in descriptor_warnings(tools).items()} == {
        0: ["$.description"], 1: ["$.description"]}


@pytest.mark.parametrize(("content", "paths"), [
    ([{"type": "text", "text": "hi", "annotations": {}}], []),
    ([{"type": "image", "data": "AA==", "mimeType": "image/png"}], []),
    ([{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}], []),
    ([{"type": "resource_link", "uri": "file:///a", "name": "a"}], []),
    ([{"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}], []),
    ([{"type": "resource", "resource": {"uri": "file:///a", "blob": "AA=="}}], []),
    ([{"type": "weird"}], ["$.result.content[0].type"]),
    ([{"text": "no type"}], ["$.result.content[0].type"]),
    ([{"type": "text", "text": "ok"}, {"type": "text"}], ["$.result.content[1].text"]),
    ([{"type": "image", "data": "AA=="}], ["$.result.content[0].mimeType"]),
    ([{"type": "resource_link", "uri": "file:///a"}], ["$.result.content[0].name"]),
    ([{"type": "resource", "resource": {"uri": "file:///a"}}],
     ["$.result.content[0].resource"]),
    (["text"], ["$.result.content[0]"]),
])
def test_a_content_block_has_a_known_type_and_its_required_fields(
        content: list[Any], paths: list[str]) -> None:
    assert _paths(check_content(content)) == paths
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"content": content}}
    assert _paths(validate_response(answer, 1, Era.LEGACY, "tools/call")) == paths


@pytest.mark.parametrize(("change", "paths"), [
    ({}, []),
    ({"createdAt": "yesterday"}, ["$.result.createdAt"]),
    ({"createdAt": "2026-01-01"}, ["$.result.createdAt"]),
    ({"lastUpdatedAt": "2026-13-01T00:00:00Z"}, ["$.result.lastUpdatedAt"]),
    ({"lastUpdatedAt": ""}, ["$.result.lastUpdatedAt"]),
    ({"status": "done"}, ["$.result.status"]),
    ({"status": "completed", "createdAt": 0}, ["$.result.createdAt"]),
])
def test_a_task_result_has_a_known_status_and_iso_8601_timestamps(
        change: dict[str, Any], paths: list[str]) -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "result": {**TASK, **change}}
    assert _paths(validate_response(answer, 1, Era.MODERN, "tools/call", TASKS)) == paths


@pytest.mark.parametrize(("completion", "paths"), [
    ({"values": [], "total": True}, ["$.result.completion.total"]),
    ({"values": [], "total": 0, "hasMore": True}, []),
    ({"values": [], "hasMore": 1}, ["$.result.completion.hasMore"]),
])
def test_a_completion_total_is_a_non_negative_integer_and_has_more_a_boolean(
        completion: dict[str, Any], paths: list[str]) -> None:
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"completion": completion}}
    assert _paths(validate_response(answer, 1, Era.LEGACY, "completion/complete")) == paths
