"""A legacy HTTP ``initialize`` is under its principal's call rate (``Admission.take``, wired
by ``build_gateway`` into the kernel): it takes a token of the same bucket as ``tools/call``,
a refused one is RATE_LIMITED at HTTP 200 with ``Retry-After`` and opens no session,
concurrency does not apply to it, and stdio and stateless initialize are not counted (neither
opens a table session)."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_kit import USER

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import Reply, TransportFacts, codes
from toolkeeper.protocol.headers import HeaderView
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import build_gateway
from toolkeeper.server.limits import Admission, LimitsSettings, build_limits


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


OTHER = Principal("globex", USER.scopes, USER.clearance)
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')


def _refused(admission: Admission, principal: Any) -> dict[str, Any]:
    with pytest.raises(JsonRpcError) as caught:
        admission.take(principal)
    assert caught.value.rpc_code == codes.RATE_LIMITED
    data: dict[str, Any] = caught.value.rpc_data
    return data


def test_initialize_and_calls_share_one_bucket_per_principal() -> None:
    clock = Clock()
    admission = Admission(LimitsSettings(rate_per_s=1.0, burst=2), clock)
    admission.take(USER)
    admission.leave(admission.enter(USER))
    assert _refused(admission, USER) == {"retryAfterS": 1, "limit": "rate"}
    with pytest.raises(JsonRpcError):
        admission.enter(USER)
    admission.take(OTHER)  # its own bucket
    clock.now += 1
    admission.take(USER)


def test_concurrency_alone_never_refuses_an_initialize() -> None:
    admission = Admission(LimitsSettings(concurrency=1), Clock())
    held = admission.enter(USER)
    for _ in range(100):
        admission.take(USER)
    admission.leave(held)


def _facts() -> TransportFacts:
    return TransportFacts("http", HeaderView([("content-type", "application/json"),
                                              ("accept", "application/json, text/event-stream")]))


@pytest.mark.parametrize("mode", ["stateful", "stateless"])
def test_a_refused_http_initialize_is_rate_limited_at_200_and_opens_no_session(mode: str
                                                                               ) -> None:
    limits = build_limits(LimitsSettings(rate_per_s=0.001, burst=2), Clock())
    gateway = build_gateway(Registry.open("memory:"), resolve_principal=lambda facts: USER,
                            limits=limits, legacy_sessions=mode)
    replies = [gateway.kernel.handle_http(INIT, _facts()) for _ in range(4)]
    assert all(isinstance(r, Reply) for r in replies)
    answers = [r for r in replies if isinstance(r, Reply)]
    assert [r.status for r in answers] == [200] * 4
    errors = [r.message.get("error", {}).get("code") for r in answers]
    if mode == "stateless":  # no session is opened, nothing is counted
        assert errors == [None] * 4 and len(gateway.kernel.sessions) == 0
        return
    assert errors == [None, None, codes.RATE_LIMITED, codes.RATE_LIMITED]
    assert dict(answers[2].headers)["retry-after"] == "1000"
    assert [dict(r.headers).get("mcp-session-id") is not None for r in answers] == [
        True, True, False, False]
    assert len(gateway.kernel.sessions) == 2
