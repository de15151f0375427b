"""Whose credential an upstream sees and which session a call rides: the upstream's own
credential (``token_file`` as Bearer, or ``header_file`` lines), never the caller's, and an
upstream configured with no credential gets none (the caller's token appears nowhere in what
it receives, in either caller era); a legacy-era upstream session is never shared by two
principals (one per caller credential, kept across that caller's calls), over HTTP and stdio
(one process per principal)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from forwarding_kit import SDK_STDIO, Imported, by_token, serving_forwarder
from raw_upstream import SESSION_PREFIX, RawUpstream

from toolkeeper.client import ClientTimeouts, Target, connect
from toolkeeper.upstreams import UpstreamDefinition

BOUNDS = ClientTimeouts(probe_s=10, request_s=20)
TOKENS = {"alice-secret": "key-alice", "bob-secret": "key-bob"}


async def _whoami(url: str, token: str, era: str, times: int) -> list[str]:
    async with await connect(Target.from_url(url), era=era, token=token,  # type: ignore[arg-type]
                             legacy_allowed=True, timeouts=BOUNDS) as session:
        texts = []
        for _ in range(times):
            reply = await session.call_tool("raw.whoami", {})
            assert reply.result is not None and reply.result["isError"] is False
            texts.append(reply.result["content"][0]["text"])
        return texts


def test_two_principals_never_share_a_legacy_upstream_session(
        raw: tuple[RawUpstream, str], tmp_path: Path) -> None:
    app, url = raw
    token_file = tmp_path / "upstream.token"
    token_file.write_text("upstream-secret\n")
    defn = UpstreamDefinition("raw", url=url, prefix="raw.", era="legacy",
                              token_file=str(token_file), call_timeout_s=10)
    before = len(app.calls())
    with serving_forwarder([defn], [Imported("raw", "whoami", prefix="raw.")],
                           resolve_principal=by_token(TOKENS)) as served:
        alice = anyio.run(_whoami, served.url, "alice-secret", "modern", 2)
        bob = anyio.run(_whoami, served.url, "bob-secret", "legacy", 2)
        alice_again = anyio.run(_whoami, served.url, "alice-secret", "legacy", 1)
        assert served.status("raw")["sessions"] == 2
    assert alice[0].startswith(SESSION_PREFIX) and bob[0].startswith(SESSION_PREFIX)
    assert alice[0] == alice[1] == alice_again[0]  # one session per caller, kept
    assert bob[0] == bob[1]
    assert alice[0] != bob[0]  # never shared between principals
    calls = app.calls()[before:]
    assert len(calls) == 5
    # the upstream's own credential on every call; the callers' tokens never
    assert {call["authorization"] for call in calls} == {"Bearer upstream-secret"}


def test_a_header_file_credential_is_sent_and_the_callers_token_is_not(
        raw: tuple[RawUpstream, str], tmp_path: Path) -> None:
    app, url = raw
    header_file = tmp_path / "upstream.headers"
    header_file.write_text("# the upstream's key\nX-Api-Key: k-123\n")
    defn = UpstreamDefinition("raw", url=url, prefix="raw.", era="legacy",
                              header_file=str(header_file), call_timeout_s=10)
    before = len(app.seen)
    with serving_forwarder([defn], [Imported("raw", "whoami", prefix="raw.")],
                           resolve_principal=by_token(TOKENS)) as served:
        anyio.run(_whoami, served.url, "alice-secret", "modern", 1)
    requests = app.seen[before:]
    assert [r["method"] for r in requests][:3] == ["initialize", "notifications/initialized",
                                                  "tools/call"]
    assert {r["apiKey"] for r in requests} == {"k-123"}
    assert {r["authorization"] for r in requests} == {None}


def test_an_unreadable_credential_file_is_an_error_result_naming_the_upstream(
        raw: tuple[RawUpstream, str], tmp_path: Path) -> None:
    defn = UpstreamDefinition("raw", url=raw[1], prefix="raw.", era="legacy",
                              token_file=str(tmp_path / "missing.token"), call_timeout_s=10)
    with serving_forwarder([defn], [Imported("raw", "whoami", prefix="raw.")]) as served:
        result = anyio.run(_call_result, served.url)
    assert result["isError"] is True
    assert result["_meta"]["io.toolkeeper/upstream"] == {
        "upstream": "raw", "code": "upstream.credential_unreadable"}


async def _call_result(url: str) -> dict[str, object]:
    async with await connect(Target.from_url(url), era="modern", timeouts=BOUNDS) as session:
        reply = await session.call_tool("raw.whoami", {})
        assert reply.result is not None
        return reply.result


def test_an_upstream_configured_with_no_credential_never_gets_the_callers_token(
        raw: tuple[RawUpstream, str]) -> None:
    app, url = raw
    defn = UpstreamDefinition("raw", url=url, prefix="raw.", era="legacy", call_timeout_s=10)
    before = len(app.seen)
    with serving_forwarder([defn], [Imported("raw", "whoami", prefix="raw.")],
                           resolve_principal=by_token(TOKENS)) as served:
        anyio.run(_whoami, served.url, "alice-secret", "modern", 1)
        anyio.run(_whoami, served.url, "bob-secret", "legacy", 1)
    requests = app.seen[before:]
    assert [r["method"] for r in requests].count("tools/call") == 2
    assert {r["authorization"] for r in requests} == {None}
    seen = json.dumps(requests)
    assert "alice-secret" not in seen and "bob-secret" not in seen


async def _pids(url: str, tokens: list[str]) -> list[str]:
    out = []
    for token in tokens:
        async with await connect(Target.from_url(url), era="modern", token=token,
                                 timeouts=BOUNDS) as session:
            reply = await session.call_tool("local.pid", {})
            assert reply.result is not None and reply.result["isError"] is False, reply
            out.append(reply.result["content"][0]["text"])
    return out


def test_two_principals_never_share_a_legacy_stdio_upstream_process() -> None:
    defn = UpstreamDefinition("local", command=SDK_STDIO, prefix="local.", era="legacy",
                              call_timeout_s=20)
    with serving_forwarder([defn], [Imported("local", "pid", prefix="local.")],
                           resolve_principal=by_token(TOKENS)) as served:
        alice, bob, alice_again = anyio.run(
            _pids, served.url, ["alice-secret", "bob-secret", "alice-secret"])
        status = served.status("local")
    assert alice == alice_again  # the caller's own process, kept
    assert alice != bob  # never shared between principals
    assert status["sessions"] == 2 and len(status["pids"]) == 2
    assert sorted(status["pids"]) == sorted(int(p) for p in (alice, bob))
