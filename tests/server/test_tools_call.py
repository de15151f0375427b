"""``tools/call`` (SPEC 3.4): the schema-version gate, strict validation, dispatch and the call
log, handler failures, capabilities, progress and logging, era differences."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest
from gateway_kit import Driver, calc_estate, contract, gateway_for

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import DataClassification
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import Pending
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import InMemoryCallLog, ToolContext, ToolHandlers, ToolResult, text


def gate_data(response: dict[str, Any]) -> dict[str, Any]:
    assert response["error"]["code"] == -32602, response
    data = response["error"]["data"]
    assert isinstance(data, dict)
    return data


# --- the gate ------------------------------------------------------------------------------

def test_a_call_pinned_to_the_served_version_runs_under_it(registry: Registry) -> None:
    result = Driver(gateway_for(registry).kernel).call("calc", {"a": 1, "b": 2},
                                                       version="2.0.0")["result"]
    assert result["structuredContent"]["ran"] == "2.0.0"
    assert result["_meta"]["schemaVersion"] == "2.0.0" and "successor" not in result["_meta"]


def test_a_call_pinned_to_an_older_active_version_runs_under_exactly_that_schema(
        registry: Registry) -> None:
    result = Driver(gateway_for(registry).kernel).call("calc", {"a": 1}, version="1.2.0")
    assert result["result"]["isError"] is False  # b is not required in 1.2.0
    assert result["result"]["structuredContent"]["ran"] == "1.2.0"
    assert result["result"]["_meta"]["successor"] == "2.0.0"


def test_a_call_pinned_to_a_deprecated_version_still_runs_and_names_its_successor(
        registry: Registry) -> None:
    meta = Driver(gateway_for(registry).kernel).call("calc", {"a": 1}, version="1.1.0"
                                                     )["result"]["_meta"]
    assert (meta["schemaVersion"], meta["successor"], meta["deprecation"]) == \
        ("1.1.0", "2.0.0", "use 2.0.0")


def test_a_call_pinned_to_a_retired_version_is_refused_with_relist_instructions(
        registry: Registry) -> None:
    gateway = gateway_for(registry)
    data = gate_data(Driver(gateway.kernel).call("calc", {"a": 1}, version="1.0.0"))
    assert data == {"reason": "schema_version_retired", "tool": "calc",
                    "requestedVersion": "1.0.0", "currentVersion": "2.0.0", "action": "relist"}


@pytest.mark.parametrize("version", ["3.0.0", "2.0.1", "abc", "2.0", "v2.0.0"])
def test_a_version_never_published_is_refused_as_unknown(registry: Registry,
                                                         version: str) -> None:
    data = gate_data(Driver(gateway_for(registry).kernel).call("calc", {"a": 1},
                                                               version=version))
    assert (data["reason"], data["requestedVersion"], data["currentVersion"]) == \
        ("schema_version_unknown", version, "2.0.0")


def test_a_version_the_caller_may_not_see_is_unknown_not_an_oracle(registry: Registry) -> None:
    data = gate_data(Driver(gateway_for(registry).kernel).call("vault", {"a": 1},
                                                               version="2.0.0"))
    assert (data["reason"], data["currentVersion"]) == ("schema_version_unknown", "1.0.0")


def test_a_non_string_schema_version_is_invalid_params(registry: Registry) -> None:
    error = Driver(gateway_for(registry).kernel).call("calc", {"a": 1}, version=2)["error"]
    assert error["code"] == -32602 and error["data"] == {"path": "$.params._meta.schemaVersion"}


def test_seed_003_a_stale_v3_call_to_db_query_never_executes() -> None:
    from toolkeeper.demo import demo_handlers, install_demo

    registry = Registry.open("memory:")
    install_demo(registry)
    gateway = gateway_for(registry, demo_handlers(), principal=Principal(
        "ops", frozenset({"db.query"}), DataClassification.INTERNAL))
    driver = Driver(gateway.kernel)
    data = gate_data(driver.call("db.query", {"sql": "select 1", "timeout_ms": 5,
                                              "mode": "write"}, version="3.0.0"))
    assert data["reason"] == "schema_version_retired" and data["currentVersion"] == "4.0.0"
    unpinned = driver.call("db.query", {"sql": "select 1", "timeout_ms": 5})["result"]
    assert unpinned["isError"] is True
    assert [e["path"] for e in unpinned["structuredContent"]["errors"]] == \
        ["$.timeout", "$.timeout_ms"]
    assert len(gateway.call_log) == 0


# --- validation ------------------------------------------------------------------------------

def test_without_a_version_unknown_properties_are_refused_even_by_an_open_schema(
        registry: Registry) -> None:
    driver = Driver(gateway_for(registry).kernel)
    errors = driver.call("calc", {"a": 1, "b": 2, "zz": 3})["result"]["structuredContent"]
    assert errors == {"errors": [{"path": "$.zz", "keyword": "additionalProperties",
                                  "message": "additional property is not allowed"}]}
    assert driver.call("calc", {"a": 1, "b": 2, "zz": 3}, version="2.0.0"
                       )["result"]["isError"] is False  # pinned: the schema as published


def test_a_composed_root_is_closed_with_unevaluated_properties() -> None:
    registry = Registry.open("memory:")
    registry.publish(contract("mix", "1.0.0", {"type": "object", "allOf": [
        {"properties": {"a": {"type": "integer"}}}]}))
    handlers = ToolHandlers()
    handlers.bind("mix", lambda arguments: "ok")
    driver = Driver(gateway_for(registry, handlers).kernel)
    assert driver.call("mix", {"a": 1})["result"]["isError"] is False
    errors = driver.call("mix", {"a": 1, "b": 2})["result"]["structuredContent"]["errors"]
    assert [(e["path"], e["keyword"]) for e in errors] == [("$.b", "unevaluatedProperties")]


def test_without_a_version_nested_records_are_closed_but_free_form_maps_stay_open() -> None:
    registry = Registry.open("memory:")
    registry.publish(contract("nest", "1.0.0", {
        "type": "object",
        "$defs": {"leg": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "properties": {
            "order": {"type": "object", "properties": {"id": {"type": "string"}}},
            "legs": {"type": "array", "items": {"$ref": "#/$defs/leg"}},
            "labels": {"type": "object"},
        }}))
    handlers = ToolHandlers()
    handlers.bind("nest", lambda arguments: "ok")
    driver = Driver(gateway_for(registry, handlers).kernel)
    arguments = {"order": {"id": "o1", "extra": 1}, "legs": [{"n": 1, "sneaky": True}],
                 "labels": {"any": "thing"}}
    errors = driver.call("nest", arguments)["result"]["structuredContent"]["errors"]
    assert [(e["path"], e["keyword"]) for e in errors] == [
        ("$.legs[0].sneaky", "additionalProperties"), ("$.order.extra", "additionalProperties")]
    assert driver.call("nest", arguments, version="1.0.0")["result"]["isError"] is False
    assert driver.call("nest", {"order": {"id": "o1"}, "legs": [{"n": 1}],
                                "labels": {"any": "thing"}})["result"]["isError"] is False


def test_arguments_are_never_coerced(registry: Registry) -> None:
    result = Driver(gateway_for(registry).kernel).call("calc", {"a": "1", "b": True})["result"]
    assert result["isError"] is True
    assert [(e["path"], e["keyword"]) for e in result["structuredContent"]["errors"]] == \
        [("$.a", "type"), ("$.b", "type")]


def test_invalid_arguments_are_a_tool_result_listing_every_error_in_text_and_data(
        registry: Registry) -> None:
    result = Driver(gateway_for(registry).kernel).call("calc", {"b": "x", "q": 1})["result"]
    errors = result["structuredContent"]["errors"]
    assert [e["path"] for e in errors] == ["$.a", "$.b", "$.q"]
    lines = result["content"][0]["text"].splitlines()[1:]
    assert lines == [f"{e['path']}: {e['message']} [{e['keyword']}]" for e in errors]


@pytest.mark.parametrize("params", [{}, {"name": 5}, {"name": "calc", "arguments": [1]}])
def test_malformed_call_params_are_invalid_params(registry: Registry,
                                                  params: dict[str, Any]) -> None:
    response = Driver(gateway_for(registry).kernel).request("tools/call", **params)
    assert response["error"]["code"] == -32602


# --- dispatch, the call log and handlers ------------------------------------------------------

def test_the_call_log_records_tool_version_principal_digest_outcome_and_latency(
        registry: Registry) -> None:
    gateway = gateway_for(registry)
    Driver(gateway.kernel).call("calc", {"b": 2, "a": 1})
    assert isinstance(gateway.call_log, InMemoryCallLog)
    (record,) = gateway.call_log.records
    digest = hashlib.sha256(canonical_json({"a": 1, "b": 2})).hexdigest()
    assert (record.tool, record.version, record.principal, record.arguments_digest,
            record.era, record.outcome) == ("calc", "2.0.0", "acme", f"sha256:{digest}",
                                            "modern", "ok")
    assert record.latency_ms is not None and record.latency_ms >= 0


def _single(handler: Any, **bind: Any) -> tuple[Registry, ToolHandlers]:
    registry = Registry.open("memory:")
    registry.publish(contract("t", "1.0.0", {"type": "object", "properties": {}}))
    handlers = ToolHandlers()
    handlers.bind("t", handler, **bind)
    return registry, handlers


def test_a_handler_exception_is_an_error_result_without_the_exception_text() -> None:
    def boom(arguments: dict[str, Any]) -> str:
        raise RuntimeError("db password is hunter2")

    registry, handlers = _single(boom)
    gateway = gateway_for(registry, handlers)
    result = Driver(gateway.kernel).call("t", {})["result"]
    assert result["isError"] is True and "hunter2" not in str(result)
    assert "structuredContent" not in result
    assert gateway.call_log.records[-1].outcome == "exception"


def test_an_explicit_error_result_keeps_the_success_shape_and_is_logged_as_error() -> None:
    registry, handlers = _single(lambda arguments: ToolResult(
        (text("core banking timeout"),), is_error=True))
    gateway = gateway_for(registry, handlers)
    result = Driver(gateway.kernel).call("t", {})["result"]
    assert (result["isError"], result["content"]) == \
        (True, [{"type": "text", "text": "core banking timeout"}])
    assert gateway.call_log.records[-1].outcome == "error"


def test_a_tool_without_a_handler_answers_an_error_result_and_is_not_logged() -> None:
    registry, _ = _single(lambda arguments: None)
    gateway = gateway_for(registry, ToolHandlers())
    assert Driver(gateway.kernel).call("t", {})["result"]["isError"] is True
    assert len(gateway.call_log) == 0


def test_structured_content_that_breaks_the_output_schema_is_an_error_result() -> None:
    registry = Registry.open("memory:")
    registry.publish(contract("t", "1.0.0", {"type": "object", "properties": {"n": {}}},
                              outputSchema={
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
    handlers = ToolHandlers()
    handlers.bind("t", lambda arguments: {"n": arguments.get("n", "x")})
    driver = Driver(gateway_for(registry, handlers).kernel)
    assert driver.call("t", {"n": 1})["result"]["structuredContent"] == {"n": 1}
    bad = driver.call("t", {})["result"]
    assert bad["isError"] is True and "structuredContent" not in bad


def test_binding_level_required_capabilities_are_checked_before_dispatch() -> None:
    registry, handlers = _single(lambda arguments: "ok", requires={"elicitation": {}})
    gateway = gateway_for(registry, handlers)
    error = Driver(gateway.kernel).call("t", {})["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert len(gateway.call_log) == 0
    with_cap = Driver(gateway.kernel, capabilities={"elicitation": {"form": {}}})
    assert with_cap.call("t", {})["result"]["isError"] is False


def test_a_handler_can_demand_capabilities_at_run_time_in_either_era() -> None:
    def needs_roots(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ctx.require_capabilities({"roots": {}})
        return "ok"

    registry, handlers = _single(needs_roots)
    modern = Driver(gateway_for(registry, handlers).kernel).call("t", {})["error"]
    assert (modern["code"], modern["data"]) == (-32021, {"requiredCapabilities": {"roots": {}}})
    legacy = Driver(gateway_for(registry, handlers).kernel, legacy=True).call("t", {})["error"]
    assert (legacy["code"], legacy["data"]) == (-32602, {"requiredCapabilities": {"roots": {}}})


async def _report(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.progress(1, 2, "half")
    await ctx.log("debug", "noise")
    await ctx.log("error", {"what": "bad"}, logger="t")
    return "done"


def test_progress_is_sent_only_when_the_caller_gave_a_token() -> None:
    registry, handlers = _single(_report)
    silent = Driver(gateway_for(registry, handlers).kernel)
    silent.call("t", {})
    assert silent.emitted == []
    asked = Driver(gateway_for(registry, handlers).kernel)
    asked.call("t", {}, progressToken="tok")
    assert asked.emitted == [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {
        "progressToken": "tok", "progress": 1, "total": 2, "message": "half"}}]


def test_modern_logs_are_sent_only_at_or_above_the_requested_level() -> None:
    registry, handlers = _single(_report)
    driver = Driver(gateway_for(registry, handlers).kernel)
    driver.call("t", {}, **{"io.modelcontextprotocol/logLevel": "warning"})
    assert driver.emitted == [{"jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": "error", "data": {"what": "bad"}, "logger": "t"}}]


def test_legacy_logs_follow_set_level() -> None:
    registry, handlers = _single(_report)
    driver = Driver(gateway_for(registry, handlers).kernel, legacy=True)
    driver.call("t", {})
    assert driver.emitted == []
    driver.request("logging/setLevel", level="debug")
    driver.call("t", {})
    assert [m["params"]["level"] for m in driver.emitted] == ["debug", "error"]


def test_legacy_results_carry_no_modern_fields_and_old_versions_no_structured_content(
        registry: Registry) -> None:
    current = Driver(gateway_for(registry).kernel, legacy=True).call("calc", {"a": 1, "b": 2})
    assert "resultType" not in current["result"]
    assert current["result"]["structuredContent"]["ran"] == "2.0.0"
    old = Driver(gateway_for(registry).kernel, legacy=True, legacy_version="2025-03-26")
    assert "structuredContent" not in old.call("calc", {"a": 1, "b": 2})["result"]


def test_a_cancelled_call_is_logged_as_cancelled() -> None:
    started = asyncio.Event()

    async def forever(arguments: dict[str, Any]) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    registry, handlers = _single(forever)
    gateway = gateway_for(registry, handlers)
    driver = Driver(gateway.kernel)
    pending = gateway.kernel.handle_stream_message(driver.conn, {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "t", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    assert isinstance(pending, Pending)

    async def emit(message: dict[str, Any]) -> None:
        return None

    async def run() -> None:
        task = asyncio.ensure_future(pending.complete(emit))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert gateway.call_log.records[-1].outcome == "cancelled"


def test_the_gate_is_no_existence_oracle_for_retired_versions_of_unentitled_contracts() -> None:
    registry = Registry.open("memory:")
    calc_estate(registry)
    registry.publish(contract("calc", "3.0.0", {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "string"}},
        "required": ["a", "b"]}, requiredScopes=["calc.admin"]))
    registry.retire("calc", Version.parse("3.0.0"))
    data = gate_data(Driver(gateway_for(registry).kernel).call("calc", {"a": 1},
                                                               version="3.0.0"))
    assert data["reason"] == "schema_version_unknown"


def test_a_json_rpc_error_raised_by_a_handler_is_a_failure_result_without_its_text() -> None:
    def refuse(arguments: dict[str, Any]) -> str:
        raise JsonRpcError(-32099, "custom SECRET message", {"path": "$.x"})

    registry, handlers = _single(refuse)
    gateway = gateway_for(registry, handlers)
    response = Driver(gateway.kernel).call("t", {})
    assert "error" not in response
    assert response["result"]["isError"] is True
    assert "SECRET" not in json.dumps(response) and "-32099" not in json.dumps(response)
    assert gateway.call_log.records[-1].outcome == "exception"


def test_a_root_without_properties_refuses_unknown_properties_at_their_own_path() -> None:
    registry = Registry.open("memory:")
    registry.publish(contract("t", "1.0.0", {"type": "object"}))
    handlers = ToolHandlers()
    handlers.bind("t", lambda arguments: "ok")
    errors = Driver(gateway_for(registry, handlers).kernel).call("t", {"n": 1}
                                                                 )["result"]["structuredContent"]
    assert errors == {"errors": [{"path": "$.n", "keyword": "unevaluatedProperties",
                                  "message": "unevaluated property is not allowed"}]}
