"""Limits: the per-principal token bucket and concurrency (a fake clock), the RATE_LIMITED
refusal through the gateway in both eras, and per-tool call timeouts that cancel the handler
and are logged ``timeout``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gateway_kit import USER, Driver, calc_estate, gateway_for, meta

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import Pending, Reply, codes, decode_message, encode_message
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import InMemoryCallLog, ToolContext, ToolHandlers
from toolkeeper.server.limits import (
    TIMEOUT_META_KEY,
    Admission,
    LimitsSettings,
    TenantLimits,
    ToolLimits,
    build_limits,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _refusal(admission: Admission, principal: Any) -> dict[str, Any]:
    with pytest.raises(JsonRpcError) as caught:
        admission.enter(principal)
    assert caught.value.rpc_code == codes.RATE_LIMITED
    data: dict[str, Any] = caught.value.rpc_data
    return data


OTHER = Principal("globex", USER.scopes, USER.clearance)


def test_a_principal_over_its_burst_is_refused_until_a_token_refills_and_others_are_not() -> None:
    clock = Clock()
    admission = Admission(LimitsSettings(rate_per_s=1.0, burst=2), clock)
    for _ in range(2):
        admission.leave(admission.enter(USER))
    assert _refusal(admission, USER) == {"retryAfterS": 1, "limit": "rate"}
    admission.leave(admission.enter(OTHER))  # another principal has its own bucket
    clock.now += 0.5
    assert _refusal(admission, USER)["retryAfterS"] == 1  # half a token: rounded up
    clock.now += 0.5
    admission.leave(admission.enter(USER))


def test_retry_after_is_the_seconds_until_a_token_rounded_up() -> None:
    clock = Clock()
    admission = Admission(LimitsSettings(rate_per_s=0.4), clock)  # burst 1
    admission.leave(admission.enter(USER))
    assert _refusal(admission, USER)["retryAfterS"] == 3  # 2.5 s
    clock.now += 2.0
    assert _refusal(admission, USER)["retryAfterS"] == 1  # 0.5 s


def test_a_tenant_override_replaces_the_defaults_for_its_principals() -> None:
    admission = Admission(LimitsSettings(
        rate_per_s=1.0, tenants={"acme": TenantLimits(rate_per_s=0.0)}), Clock())
    for _ in range(5):
        admission.leave(admission.enter(USER))  # acme: unlimited
    admission.leave(admission.enter(OTHER))
    assert _refusal(admission, OTHER)["limit"] == "rate"


def test_each_credential_has_its_own_bucket_and_credential_less_principals_share_one() -> None:
    clock = Clock()
    admission = Admission(LimitsSettings(rate_per_s=1.0), clock)
    key_a = Principal("acme", USER.scopes, USER.clearance, credential="key-a")
    key_b = Principal("acme", USER.scopes, USER.clearance, credential="key-b")
    admission.leave(admission.enter(key_a))
    admission.leave(admission.enter(key_b))
    _refusal(admission, key_a)
    admission.leave(admission.enter(USER))  # acme without a credential: a third bucket
    _refusal(admission, Principal("acme", frozenset(), USER.clearance))


def test_concurrency_counts_calls_in_flight_and_a_refusal_takes_no_token() -> None:
    admission = Admission(LimitsSettings(rate_per_s=1.0, burst=2, concurrency=1), Clock())
    slot = admission.enter(USER)
    assert _refusal(admission, USER) == {"retryAfterS": 1, "limit": "concurrency"}
    admission.leave(slot)
    admission.leave(admission.enter(USER))  # the second token was not spent by the refusal


def test_nothing_is_built_when_every_limit_is_zero() -> None:
    assert build_limits(LimitsSettings()) is None
    assert build_limits(LimitsSettings(tools={"calc": ToolLimits(call_timeout_s=0.0)})) is None
    limits = build_limits(LimitsSettings(tools={"calc": ToolLimits(call_timeout_s=2.0)}))
    assert limits is not None and limits.admission is None
    assert limits.call_timeout is not None and limits.call_timeout("calc") == 2.0
    assert limits.call_timeout("vault") is None


@pytest.mark.parametrize("settings", [
    {"rate_per_s": -1.0}, {"rate_per_s": float("nan")}, {"burst": -1}, {"burst": 1.5},
    {"concurrency": -2}, {"call_timeout_s": float("inf")},
])
def test_a_negative_or_non_finite_limit_is_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(settings))):
        LimitsSettings(**settings)


@pytest.mark.parametrize("legacy", [False, True])
def test_the_gateway_refuses_a_call_over_the_rate_with_the_documented_error(
        registry: Registry, legacy: bool) -> None:
    calc_estate(registry)
    limits = build_limits(LimitsSettings(rate_per_s=1.0, burst=1), Clock())
    driver = Driver(gateway_for(registry, limits=limits).kernel, legacy=legacy)
    first = driver.call("calc", {"a": 1, "b": 2})
    assert first["result"]["isError"] is False
    refused = driver.call("calc", {"a": 1, "b": 2})
    assert refused["error"]["code"] == -31429
    assert refused["error"]["data"] == {"retryAfterS": 1, "limit": "rate"}
    unknown = driver.call("nope", {})  # every tools/call is counted, whatever its tool
    assert unknown["error"]["code"] == -31429


def test_a_slot_is_held_while_the_handler_runs_and_freed_when_it_ends(registry: Registry
                                                                      ) -> None:
    calc_estate(registry)
    limits = build_limits(LimitsSettings(concurrency=1))
    assert limits is not None and limits.admission is not None
    admission = limits.admission
    handlers = ToolHandlers()

    async def calc(arguments: dict[str, Any], ctx: ToolContext) -> str:
        try:
            admission.leave(admission.enter(USER))
        except JsonRpcError as exc:
            return str(exc.rpc_data["limit"])
        return "admitted beside the running call"

    handlers.bind("calc", calc)
    driver = Driver(gateway_for(registry, handlers, limits=limits).kernel)
    for _ in range(2):  # the running call holds the slot; each ends and frees it
        result = driver.call("calc", {"a": 1, "b": 2})["result"]
        assert result["content"] == [{"type": "text", "text": "concurrency"}]


def _sleeper() -> tuple[ToolHandlers, list[str]]:
    finished: list[str] = []
    handlers = ToolHandlers()

    async def calc(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(30)
        finished.append("after the sleep")  # never reached: cancelled at the sleep
        return "slept"

    async def vault(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "quick"

    handlers.bind("calc", calc)
    handlers.bind("vault", vault)
    return handlers, finished


@pytest.mark.parametrize("legacy", [False, True])
def test_a_handler_past_its_timeout_is_cancelled_answered_and_logged_timeout(
        registry: Registry, legacy: bool) -> None:
    calc_estate(registry)
    handlers, finished = _sleeper()
    log = InMemoryCallLog()
    limits = build_limits(LimitsSettings(call_timeout_s=30.0, tools={
        "calc": ToolLimits(call_timeout_s=0.05)}))
    driver = Driver(gateway_for(registry, handlers, limits=limits, call_log=log).kernel,
                    legacy=legacy)
    result = driver.call("calc", {"a": 1, "b": 2})["result"]
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text":
                                  "Tool 'calc' timed out after 0.05 s and was cancelled."}]
    assert result["_meta"][TIMEOUT_META_KEY] == {"timeoutS": 0.05}
    assert finished == []
    assert driver.call("vault", {"a": 1})["result"]["isError"] is False  # default 30 s
    assert [(r.tool, r.outcome) for r in log.records] == [("calc", "timeout"), ("vault", "ok")]


def test_a_timeout_error_the_handler_raises_itself_is_its_own_failure(registry: Registry
                                                                      ) -> None:
    calc_estate(registry)
    handlers = ToolHandlers()

    async def calc(arguments: dict[str, Any]) -> str:
        raise TimeoutError("upstream")

    handlers.bind("calc", calc)
    log = InMemoryCallLog()
    limits = build_limits(LimitsSettings(call_timeout_s=5.0))
    driver = Driver(gateway_for(registry, handlers, limits=limits, call_log=log).kernel)
    result = driver.call("calc", {"a": 1, "b": 2})["result"]
    assert result["isError"] is True and TIMEOUT_META_KEY not in result["_meta"]
    assert [r.outcome for r in log.records] == ["exception"]


def test_a_concurrency_of_4_admits_exactly_4_of_32_concurrent_calls_and_frees_them(
        registry: Registry) -> None:
    calc_estate(registry)
    handlers = ToolHandlers()
    release = asyncio.Event()
    running: list[int] = []

    async def calc(arguments: dict[str, Any], ctx: ToolContext) -> str:
        running.append(1)
        await release.wait()
        return "done"

    handlers.bind("calc", calc)
    limits = build_limits(LimitsSettings(concurrency=4, call_timeout_s=30.0))
    driver = Driver(gateway_for(registry, handlers, limits=limits).kernel)

    def message(i: int) -> dict[str, Any]:
        params = {"name": "calc", "arguments": {"a": i, "b": 1}, "_meta": meta()}
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {}
        return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}

    async def emit(message: dict[str, Any]) -> None:
        return None

    async def wave(first: int) -> tuple[int, list[dict[str, Any]]]:
        release.clear()
        outcomes = [driver.kernel.handle_stream_message(driver.conn, message(first + i))
                    for i in range(32)]
        pending = [o for o in outcomes if isinstance(o, Pending)]
        tasks = [asyncio.ensure_future(p.complete(emit)) for p in pending]
        for _ in range(100):  # every admitted handler starts (bounded by count, not time)
            await asyncio.sleep(0)
        started = len(running)
        release.set()
        replies = [o for o in outcomes if isinstance(o, Reply)] + list(
            await asyncio.gather(*tasks))
        return started, [decode_message(r.body) for r in replies]

    async def main() -> None:
        for n, first in enumerate((0, 32)):  # a second wave: every slot was freed
            started, answers = await wave(first)
            assert started == 4 * (n + 1)
            done = [a for a in answers if "result" in a]
            refused = [a for a in answers if "error" in a]
            assert len(done) == 4 and len(refused) == 28
            assert all(a["result"]["isError"] is False for a in done)
            assert {(a["error"]["code"], a["error"]["data"]["limit"]) for a in refused} == {
                (codes.RATE_LIMITED, "concurrency")}

    asyncio.run(main())


def test_over_http_a_concurrency_of_4_admits_exactly_4_of_32_concurrent_calls_and_frees_them(
        registry: Registry) -> None:
    # The modern HTTP request's route (kernel.handle_asgi, the tools/call express lane, which
    # admits its own Pendings): exactly 4 run, 28 are refused RATE_LIMITED with 429, and every
    # slot is free again once the 4 end (a second wave gets 4 more).
    calc_estate(registry)
    handlers = ToolHandlers()
    release = asyncio.Event()
    running: list[int] = []

    async def calc(arguments: dict[str, Any], ctx: ToolContext) -> str:
        running.append(1)
        await release.wait()
        return "done"

    handlers.bind("calc", calc)
    limits = build_limits(LimitsSettings(concurrency=4, call_timeout_s=30.0))
    kernel = gateway_for(registry, handlers, limits=limits).kernel
    pairs = [(b"content-type", b"application/json"), (b"mcp-protocol-version", b"2026-07-28"),
             (b"mcp-method", b"tools/call"), (b"mcp-name", b"calc")]

    def body(i: int) -> bytes:
        return encode_message({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "calc", "arguments": {"a": i, "b": 1}, "_meta": meta()}})

    async def emit(message: dict[str, Any]) -> None:
        return None

    async def wave(first: int) -> tuple[int, list[Reply]]:
        release.clear()
        outcomes = [kernel.handle_asgi(body(first + i), pairs) for i in range(32)]
        pending = [o for o in outcomes if isinstance(o, Pending)]
        tasks = [asyncio.ensure_future(p.complete(emit)) for p in pending]
        for _ in range(100):  # every admitted handler starts (bounded by count, not time)
            await asyncio.sleep(0)
        started = len(running)
        release.set()
        return started, [o for o in outcomes if isinstance(o, Reply)] + list(
            await asyncio.gather(*tasks))

    async def main() -> None:
        for n, first in enumerate((0, 32)):
            started, replies = await wave(first)
            assert started == 4 * (n + 1)
            answers = [(r.status, decode_message(r.body)) for r in replies]
            done = [a for status, a in answers if status == 200 and "result" in a]
            refused = [(status, a) for status, a in answers if "error" in a]
            assert len(done) == 4 and len(refused) == 28
            assert all(a["result"]["isError"] is False for a in done)
            assert {(status, a["error"]["code"], a["error"]["data"]["limit"])
                    for status, a in refused} == {(429, codes.RATE_LIMITED, "concurrency")}

    asyncio.run(main())


def test_a_handler_that_finishes_without_suspending_arms_no_timer_and_one_that_suspends_does(
        registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    calc_estate(registry)
    armed: list[float] = []
    timeout_at = asyncio.timeout_at

    def counting(when: float | None) -> asyncio.Timeout:
        armed.append(0.0 if when is None else when)
        return timeout_at(when)

    monkeypatch.setattr(asyncio, "timeout_at", counting)
    handlers = ToolHandlers()

    async def calc(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return "at once"

    async def vault(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "after a suspension"

    handlers.bind("calc", calc)
    handlers.bind("vault", vault)
    limits = build_limits(LimitsSettings(call_timeout_s=30.0))
    driver = Driver(gateway_for(registry, handlers, limits=limits).kernel)
    for _ in range(3):
        assert driver.call("calc", {"a": 1, "b": 2})["result"]["content"][0]["text"] == "at once"
    assert armed == []
    assert driver.call("vault", {"a": 1})["result"]["content"][0]["text"] == (
        "after a suspension")
    assert len(armed) == 1


def test_a_cancelled_handler_sees_the_cancellation_at_its_await_and_its_cleanup_runs(
        registry: Registry) -> None:
    calc_estate(registry)
    handlers = ToolHandlers()
    seen: list[str] = []

    async def calc(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(0)  # a first suspension, then the one the timeout ends
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            seen.append("cleanup")
        return "slept"

    handlers.bind("calc", calc)
    log = InMemoryCallLog()
    limits = build_limits(LimitsSettings(call_timeout_s=0.05))
    driver = Driver(gateway_for(registry, handlers, limits=limits, call_log=log).kernel)
    result = driver.call("calc", {"a": 1, "b": 2})["result"]
    assert result["_meta"][TIMEOUT_META_KEY] == {"timeoutS": 0.05}
    assert seen == ["cancelled", "cleanup"]
    assert [r.outcome for r in log.records] == ["timeout"]
