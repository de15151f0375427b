"""The handler API and the results it produces (SPEC 3.4 items 4-5, 3.6): every
content helper against the official SDK's types of both eras, odd handler return values,
non-finite numbers, handlers raising BaseException subclasses, progress and log edges, nested
required capabilities in both eras, and the call log outcome of each failure kind; over the
kernel in process, over real HTTP on 127.0.0.1 (raw and through the ``mcp`` 2.3.0 client) and
over the stdio loop driven by the SDK client."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import mcp_types._v2025_11_25 as legacy_types
import mcp_types._v2026_07_28 as modern_types
import pytest
from gateway_kit import Driver
from handler_edge_kit import handler_gateway, outcomes, serve_handlers
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter, ValidationError
from sdk_peer_kit import hunt_contract, stdio_transport

from toolkeeper.errors import JsonRpcError
from toolkeeper.registry import Registry
from toolkeeper.server import (
    Gateway,
    ToolHandlers,
    audio,
    build_gateway,
    embedded_resource,
    image,
    resource_link,
    text,
)

MODERN = "2026-07-28"
MODES = [MODERN, "legacy"]
BOUND_S = 10.0
FAILED = "failed while running; no details are available to the caller."
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"
LEVEL_KEY = "io.modelcontextprotocol/logLevel"


@pytest.fixture(scope="module")
def http() -> Iterator[tuple[str, Gateway]]:
    with serve_handlers() as served:
        yield served


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    with handler_gateway() as built:
        yield built


def post(url: str, name: str, **meta: Any) -> httpx.Response:
    """One modern ``tools/call`` over real HTTP, its headers matching its body."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN, CAPS_KEY: {}, **meta}}}
    return httpx.post(url, json=body, timeout=BOUND_S, headers={
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call", "Mcp-Name": name})


def sse_messages(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.headers["content-type"].startswith("text/event-stream")
    return [json.loads(line[len("data: "):]) for line in response.text.splitlines()
            if line.startswith("data: ") and line != "data: "]  # not a priming event


# --- 1. content helpers against the SDK's types -----------------------------------------------

_BLOCKS: dict[str, dict[str, Any]] = {
    "text": text("t", annotations={"audience": ["user", "assistant"], "priority": 1.0,
                                   "lastModified": "2026-01-01T00:00:00Z"}),
    "image": image(b"\x89PNG", "image/png", annotations={"priority": 0.0}),
    "audio": audio(b"RIFF", "audio/wav"),
    "empty image": image(b"", "image/png"),
    "text resource": embedded_resource("hunt://t", text="", mime_type="text/plain"),
    "blob resource": embedded_resource("hunt://b", blob=b"\xff" * 7),
    "link": resource_link("hunt://l", "l", title="L", description="d", mime_type="text/plain",
                          size=0),
    "bare link": resource_link("hunt://l", "l"),
}


@pytest.mark.parametrize("era", [legacy_types, modern_types], ids=["2025-11-25", MODERN])
@pytest.mark.parametrize("kind", sorted(_BLOCKS))
def test_every_content_helper_parses_as_its_sdk_type_in_both_eras_and_round_trips(
        kind: str, era: Any) -> None:
    block = _BLOCKS[kind]
    parsed = TypeAdapter(era.ContentBlock).validate_python(block)
    assert parsed.model_dump(by_alias=True, exclude_none=True, mode="json") == block


def test_an_embedded_resource_with_both_or_neither_body_is_refused_by_the_helper() -> None:
    with pytest.raises(ValueError):
        embedded_resource("hunt://x", text="a", blob=b"a")
    with pytest.raises(ValueError):
        embedded_resource("hunt://x")


# --- 2. odd return values -----------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["hc.nan_dict", "hc.inf_result", "hc.nan_async"])
@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_a_non_finite_number_in_structured_content_is_the_handlers_failure_not_null(
        gateway: Gateway, tool: str, legacy: bool) -> None:
    reply = Driver(gateway.kernel, legacy=legacy).call(tool, {})
    result = reply["result"]
    assert result["isError"] is True, result
    assert FAILED in result["content"][0]["text"]
    assert "structuredContent" not in result
    assert outcomes(gateway, tool) == ["exception"]


def test_a_non_finite_number_breaking_the_output_schema_is_the_generic_failure(
        gateway: Gateway) -> None:
    result = Driver(gateway.kernel).call("hc.nan_typed", {})["result"]
    assert result["isError"] is True and FAILED in result["content"][0]["text"]
    assert "structuredContent" not in result


@pytest.mark.parametrize("mode", MODES)
def test_structured_content_is_checked_against_the_output_schema_as_the_sdk_checks_it(
        http: tuple[str, Gateway], mode: str) -> None:
    """A conforming result passes the SDK's own re-validation; a breaking or missing one is the
    generic failure (never sent for the SDK to refuse); an isError result is not checked."""
    url, gateway = http
    tools = ("hc.typed_ok", "hc.typed_bad", "hc.typed_text", "hc.typed_error")

    async def calls() -> list[Any]:
        with anyio.fail_after(BOUND_S):
            async with Client(url, mode=mode) as client:
                await client.list_tools()  # the SDK validates against the listed schema
                return [await client.call_tool(name, {}) for name in tools]

    before = {name: len(outcomes(gateway, name)) for name in tools}
    ok, bad, missing, error = anyio.run(calls)
    assert (ok.is_error, ok.structured_content) == (False, {"x": 1.5})
    for failed in (bad, missing):
        assert failed.is_error is True and FAILED in failed.content[0].text
        assert failed.structured_content is None
    assert (error.is_error, error.structured_content) == (True, {"x": "one"})
    assert [outcomes(gateway, name)[before[name]:] for name in tools] == [
        ["ok"], ["invalid_output"], ["invalid_output"], ["error"]]


def test_a_log_line_with_a_non_finite_number_is_never_sent_as_null(
        http: tuple[str, Gateway]) -> None:
    url, _ = http
    response = post(url, "hc.log_nan", **{LEVEL_KEY: "debug"})
    messages = (sse_messages(response)
                if response.headers["content-type"].startswith("text/event-stream")
                else [response.json()])
    logs = [m for m in messages if m.get("method") == "notifications/message"]
    assert all(m["params"]["data"] != {"ratio": None} for m in logs), logs
    # The line cannot be written, so the handler's await of ctx.log fails: its failure.
    assert messages[-1]["result"]["isError"] is True


@pytest.mark.parametrize("tool", ["hc.bad_block", "hc.unknown_block", "hc.bad_annotation"])
@pytest.mark.parametrize("mode", MODES)
def test_a_malformed_content_block_reaches_the_sdk_as_a_failure_result(
        http: tuple[str, Gateway], tool: str, mode: str) -> None:
    url, _ = http

    async def call() -> Any:
        with anyio.fail_after(BOUND_S):
            async with Client(url, mode=mode) as client:
                return await client.call_tool(tool, {})

    try:
        result = anyio.run(call)
    except BaseException as exc:  # the SDK's parse failure is the finding
        pytest.fail(f"the SDK could not take the result: {type(exc).__name__}")
    assert result.is_error is True


def test_a_malformed_content_block_is_logged_as_the_handlers_failure(gateway: Gateway) -> None:
    result = Driver(gateway.kernel).call("hc.bad_block", {})["result"]
    assert result["isError"] is True
    assert outcomes(gateway, "hc.bad_block") == ["exception"]


def test_an_out_of_range_annotation_from_the_text_helper_is_not_an_sdk_content_block() -> None:
    """(What the helper lets through: the SDK refuses it, so the gateway must check.)"""
    with pytest.raises(ValidationError):
        TypeAdapter(modern_types.ContentBlock).validate_python(
            text("t", annotations={"priority": 5}))


def test_content_block_meta_and_big_integers_reach_the_sdk_intact(
        http: tuple[str, Gateway]) -> None:
    url, _ = http

    async def call() -> Any:
        with anyio.fail_after(BOUND_S):
            async with Client(url, mode=MODERN) as client:
                return await client.call_tool("hc.meta_block", {})

    result = anyio.run(call)
    assert result.is_error is False
    assert result.content[0].meta == {"k": 1}


# --- 3. handlers raising BaseException subclasses ---------------------------------------------

_BASE = ["hc.exit_inline", "hc.exit_async", "hc.interrupt_async", "hc.generator_exit"]


@pytest.mark.parametrize("tool", _BASE)
def test_a_handler_raising_a_base_exception_is_an_is_error_result_over_http(
        http: tuple[str, Gateway], tool: str) -> None:
    url, _ = http
    response = post(url, tool)
    assert (response.status_code, response.headers["content-type"]) == (
        200, "application/json"), response.text
    result = response.json()["result"]
    assert result["isError"] is True and FAILED in result["content"][0]["text"]


@pytest.mark.parametrize("tool", _BASE)
def test_a_handler_raising_a_base_exception_is_logged_as_an_exception(
        http: tuple[str, Gateway], tool: str) -> None:
    url, gateway = http
    before = len(outcomes(gateway, tool))
    post(url, tool)
    assert outcomes(gateway, tool)[before:] == ["exception"]


def test_the_http_server_keeps_serving_after_a_handler_raised_a_base_exception(
        http: tuple[str, Gateway]) -> None:
    url, _ = http
    for tool in _BASE:
        post(url, tool)
    response = post(url, "hc.ok")
    assert response.status_code == 200 and response.json()["result"]["isError"] is False


@pytest.mark.parametrize("mode", MODES)
def test_a_handler_raising_system_exit_leaves_the_stdio_server_serving(
        gateway: Gateway, mode: str) -> None:
    seen: list[Any] = []

    async def session() -> None:
        with anyio.fail_after(BOUND_S):
            async with Client(stdio_transport(gateway.kernel), mode=mode) as client:
                failed = await client.call_tool("hc.exit_async", {})
                seen.append(failed.is_error)
                after = await client.call_tool("hc.ok", {})
                seen.append(after.content[0].text)  # type: ignore[union-attr]

    try:
        anyio.run(session)
    except BaseException as exc:  # SystemExit escaping: the finding
        seen.append(type(exc).__name__)
    assert seen == [True, "ok"]


def test_an_unrequested_cancelled_error_or_a_json_rpc_error_is_the_generic_failure() -> None:
    registry = Registry.open("memory:")
    handlers = ToolHandlers()

    async def own_cancel(arguments: dict[str, Any]) -> str:
        raise asyncio.CancelledError

    def rpc(arguments: dict[str, Any]) -> str:
        raise JsonRpcError(-32000, "secret detail", {"secret": 1})

    for name, function in (("hc.own_cancel", own_cancel), ("hc.rpc", rpc)):
        registry.publish(hunt_contract(name))
        handlers.bind(name, function)
    gateway = build_gateway(registry, handlers)
    try:
        for legacy in (False, True):
            driver = Driver(gateway.kernel, legacy=legacy)
            for name in ("hc.own_cancel", "hc.rpc"):
                reply = driver.call(name, {})
                assert reply["result"]["isError"] is True
                assert "secret" not in json.dumps(reply)
        assert [outcomes(gateway, n) for n in ("hc.own_cancel", "hc.rpc")] == [
            ["exception"] * 2, ["exception"] * 2]
    finally:
        registry.close()


# --- 4. progress and logging edges ------------------------------------------------------------


@pytest.mark.parametrize("token", ["t", 7, -1, ""])
def test_concurrent_progress_all_arrives_on_sse_before_the_result_with_the_token_as_sent(
        http: tuple[str, Gateway], token: Any) -> None:
    url, _ = http
    messages = sse_messages(post(url, "hc.concurrent", progressToken=token))
    progress = [m["params"] for m in messages[:-1]]
    assert sorted(p["progress"] for p in progress) == list(range(1, 21))
    assert {(p["progressToken"], p["total"]) for p in progress} == {(token, 20)}
    assert all("message" not in p for p in progress)
    assert messages[-1]["result"]["content"][0]["text"] == "concurrent"


def test_progress_without_total_or_message_omits_both_keys(http: tuple[str, Gateway]) -> None:
    url, _ = http
    first = sse_messages(post(url, "hc.bare", progressToken="b"))[0]
    assert first["params"] == {"progressToken": "b", "progress": 3}


def test_progress_without_a_token_and_logs_without_a_level_keep_the_reply_json(
        http: tuple[str, Gateway]) -> None:
    url, _ = http
    for tool in ("hc.concurrent", "hc.log_nan"):
        response = post(url, tool)
        assert response.headers["content-type"] == "application/json"
        assert response.json()["result"]["isError"] is False


def test_progress_after_the_result_never_follows_it_on_the_wire(
        http: tuple[str, Gateway]) -> None:
    url, _ = http
    messages = sse_messages(post(url, "hc.late", progressToken="late"))
    assert [m.get("method") for m in messages] == ["notifications/progress", None]
    assert messages[-1]["result"]["content"][0]["text"] == "returned"


@pytest.mark.parametrize("mode", MODES)
def test_progress_after_the_result_never_follows_it_on_the_stdio_wire(
        gateway: Gateway, mode: str) -> None:
    wire: list[bytes] = []

    async def session() -> None:
        with anyio.fail_after(BOUND_S):
            async with Client(stdio_transport(gateway.kernel, wire), mode=mode) as client:
                await client.call_tool("hc.late", {}, progress_callback=_ignore)
                await client.call_tool("hc.ok", {})  # the late progress has run by now

    anyio.run(session)
    lines = [json.loads(line) for chunk in wire for line in chunk.splitlines()]
    progress = [m["params"]["message"] for m in lines
                if m.get("method") == "notifications/progress"]
    assert progress == ["before the result"]


async def _ignore(progress: float, total: float | None, message: str | None) -> None:
    return None


@pytest.mark.parametrize(("tool", "key", "meta"), [
    ("hc.bad_message", "message", {"progressToken": "m"}),
    ("hc.bad_logger", "logger", {LEVEL_KEY: "debug"})])
def test_a_notification_never_carries_a_non_string_message_or_logger(
        http: tuple[str, Gateway], tool: str, key: str, meta: dict[str, Any]) -> None:
    url, _ = http
    response = post(url, tool, **meta)
    if response.headers["content-type"] == "application/json":
        return  # refused (the handler's failure) before anything was sent
    notes = [m["params"] for m in sse_messages(response) if "method" in m]
    assert all(isinstance(p.get(key, ""), str) for p in notes), notes


def test_log_data_that_is_not_json_fails_the_call_without_detail(
        http: tuple[str, Gateway]) -> None:
    url, gateway = http
    response = post(url, "hc.log_object", **{LEVEL_KEY: "debug"})
    result = response.json()["result"]
    assert result["isError"] is True and FAILED in result["content"][0]["text"]
    assert outcomes(gateway, "hc.log_object")[-1:] == ["exception"]


# --- 5. nested required capabilities, both eras ----------------------------------------------

_NESTED: dict[str, Any] = {"requiredCapabilities": {"elicitation": {"url": {}}}}


@pytest.mark.parametrize("tool", ["hc.nested", "hc.nested_bind"])
@pytest.mark.parametrize("declared", [{}, {"elicitation": {}}, {"elicitation": {"form": {}}}])
def test_a_nested_requirement_the_client_lacks_is_32021_modern_and_32602_legacy(
        gateway: Gateway, tool: str, declared: dict[str, Any]) -> None:
    modern = Driver(gateway.kernel, capabilities=declared).call(tool, {})
    legacy = Driver(gateway.kernel, legacy=True, capabilities=declared).call(tool, {})
    assert (modern["error"]["code"], modern["error"]["data"]) == (-32021, _NESTED)
    assert (legacy["error"]["code"], legacy["error"]["data"]) == (-32602, _NESTED)
    # a requirement bound to the tool refuses before dispatch; one the handler states runs it
    assert outcomes(gateway, tool) == ([] if tool == "hc.nested_bind"
                                       else ["protocol_error"] * 2)


@pytest.mark.parametrize("tool", ["hc.nested", "hc.nested_bind"])
def test_a_nested_requirement_the_client_declares_runs_in_both_eras(
        gateway: Gateway, tool: str) -> None:
    declared: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
    for legacy in (False, True):
        reply = Driver(gateway.kernel, legacy=legacy, capabilities=declared).call(tool, {})
        assert reply["result"]["content"][0]["text"] == "elicited"
    assert outcomes(gateway, tool) == ["ok", "ok"]


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_elicitation_callback_satisfies_a_url_requirement(
        http: tuple[str, Gateway], mode: str) -> None:
    url, _ = http

    async def elicit(context: Any, params: Any) -> Any:
        raise AssertionError("never asked")

    async def call() -> tuple[Any, int]:
        with anyio.fail_after(BOUND_S):
            async with Client(url, mode=mode, elicitation_callback=elicit) as client:
                ok = await client.call_tool("hc.nested", {})
            async with Client(url, mode=mode) as client:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("hc.nested", {})
            return ok, refused.value.error.code

    ok, code = anyio.run(call)
    assert ok.content[0].text == "elicited"
    assert code == (-32021 if mode == MODERN else -32602)


@pytest.fixture(autouse=True)
def _quiet_handler_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Handler exceptions are logged server-side by design; keep them out of the output."""
    caplog.set_level(logging.CRITICAL, logger="toolkeeper.server")
