"""``tools/call`` with a plain handler that takes no context, bound ``inline=True``: it runs
inside dispatch itself (no Deferred, Pending or coroutine), decided when it is bound; every
other handler is deferred (a plain one bound by default, to a worker thread). The results and
the call log are the same either way."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway_kit import Driver, contract, gateway_for, meta

from toolkeeper.errors import CapabilityRequiredError
from toolkeeper.protocol import Outcome, Pending, Reply, decode_message
from toolkeeper.registry import Registry
from toolkeeper.server import ToolContext, ToolHandlers
from toolkeeper.server.gateway import Gateway


def _gateway(handler: Any) -> Gateway:
    registry = Registry.open("memory:")
    registry.publish(contract("t", "1.0.0", {"type": "object", "properties": {}}))
    handlers = ToolHandlers()
    handlers.bind("t", handler, inline=True)
    return gateway_for(registry, handlers)


def _outcome(gateway: Gateway) -> Outcome:
    conn = gateway.kernel.open_stream()
    return gateway.kernel.handle_stream_message(conn, {
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "t", "arguments": {}, "_meta": meta()}})


def _result(reply: Reply) -> dict[str, Any]:
    message = decode_message(reply.body)
    assert isinstance(message, dict) and message["id"] == 7, message
    result = message["result"]
    assert isinstance(result, dict)
    return result


async def _emit(message: dict[str, Any]) -> None:
    return None


def test_a_plain_handler_without_a_context_is_answered_at_once_and_logged_once() -> None:
    gateway = _gateway(lambda arguments: {"n": 1})
    reply = _outcome(gateway)
    assert isinstance(reply, Reply)
    result = _result(reply)
    assert (result["isError"], result["structuredContent"], result["resultType"]) == \
        (False, {"n": 1}, "complete")
    assert result["_meta"]["schemaVersion"] == "1.0.0"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "toolkeeper"
    assert [(r.tool, r.outcome) for r in gateway.call_log.records] == [("t", "ok")]


def test_a_plain_handler_that_raises_is_a_failure_result_logged_as_exception() -> None:
    def boom(arguments: dict[str, Any]) -> str:
        raise RuntimeError("secret detail")

    gateway = _gateway(boom)
    reply = _outcome(gateway)
    assert isinstance(reply, Reply)
    result = _result(reply)
    assert result["isError"] is True and "secret detail" not in str(result)
    assert [r.outcome for r in gateway.call_log.records] == ["exception"]


def test_a_plain_handler_raising_a_capability_error_is_the_protocol_error() -> None:
    def needs(arguments: dict[str, Any]) -> str:
        raise CapabilityRequiredError(-32021, "Missing required client capability",
                                      {"requiredCapabilities": {"sampling": {}}})

    gateway = _gateway(needs)
    reply = _outcome(gateway)
    assert isinstance(reply, Reply)
    message = decode_message(reply.body)
    assert message["error"]["code"] == -32021
    assert [r.outcome for r in gateway.call_log.records] == ["protocol_error"]


def test_a_plain_handler_returning_an_awaitable_is_awaited_and_logged_once() -> None:
    async def later() -> str:
        return "done"

    gateway = _gateway(lambda arguments: later())
    pending = _outcome(gateway)
    assert isinstance(pending, Pending)
    assert [r.outcome for r in gateway.call_log.records] == [None]  # dispatched, running
    result = _result(asyncio.run(pending.complete(_emit)))
    assert result["content"] == [{"type": "text", "text": "done"}]
    assert [r.outcome for r in gateway.call_log.records] == ["ok"]


def test_an_awaitable_from_a_plain_handler_that_raises_is_logged_as_exception() -> None:
    async def later() -> str:
        raise ValueError("no")

    gateway = _gateway(lambda arguments: later())
    pending = _outcome(gateway)
    assert isinstance(pending, Pending)
    assert _result(asyncio.run(pending.complete(_emit)))["isError"] is True
    assert [r.outcome for r in gateway.call_log.records] == ["exception"]


def test_an_async_handler_and_a_handler_taking_a_context_are_deferred() -> None:
    async def asynchronous(arguments: dict[str, Any]) -> str:
        return "a"

    def with_context(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return ctx.tool

    class AsyncCallable:
        async def __call__(self, arguments: dict[str, Any]) -> str:
            return "c"

    for handler, text in ((asynchronous, "a"), (with_context, "t"), (AsyncCallable(), "c")):
        gateway = _gateway(handler)
        pending = _outcome(gateway)
        assert isinstance(pending, Pending), handler
        assert _result(asyncio.run(pending.complete(_emit)))["content"][0]["text"] == text
        assert [r.outcome for r in gateway.call_log.records] == ["ok"]


def test_a_plain_handler_gives_the_same_answer_as_before_over_the_stream_driver() -> None:
    gateway = _gateway(lambda arguments: "plain")
    result = Driver(gateway.kernel).call("t", {})["result"]
    assert result["content"] == [{"type": "text", "text": "plain"}]
