"""Refused calls on the record: every call refused before dispatch (invalid arguments, an
unknown or unentitled tool, a retired or unknown pin, a rate or concurrency limit, a failed
authentication) is a row of the refusal log, apart from the call log, with its reason, tenant,
credential id, tool and version as asked, era and request id; the wire answers stay as they
were (an unentitled tool and a nonexistent one answer alike).

Each gateway is the real assembly (``build_observability``'s call recorder over the registry's
database, the real API-key resolver, real limits) served over real HTTP on 127.0.0.1, on SQLite
and on PostgreSQL (the embedded server of ``tests/conftest.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_kit import contract
from tenant_kit import HttpPeer, modern_headers, modern_meta

from toolkeeper.auth.keys import issue_key, revoke_key
from toolkeeper.auth.resolver import build_resolver
from toolkeeper.config.model import AuthSettings
from toolkeeper.contracts.semver import Version
from toolkeeper.observability.build import CallLogSettings, MetricsSettings, build_observability
from toolkeeper.observability.recorder import CallRecorder
from toolkeeper.protocol.codes import INVALID_PARAMS, RATE_LIMITED
from toolkeeper.registry import Registry
from toolkeeper.registry.apikeys import key_store
from toolkeeper.registry.call_rows import (
    CallQuery,
    RefusalQuery,
    RefusalRow,
    open_call_rows,
    open_refusal_rows,
)
from toolkeeper.server import ToolHandlers, build_app
from toolkeeper.server.calllog import ASKED_TEXT_LIMIT, RefusalRecord
from toolkeeper.server.limits import LimitsSettings, TenantLimits, build_limits
from toolkeeper.transports import serve_in_thread

CALC = {"type": "object", "properties": {"a": {"type": "integer"}, "password": {"type": "string"}},
        "required": ["a"]}
TENANTS = ("acme", "globex", "hasty", "busy")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'registry.db'}"
    return str(request.getfixturevalue("pg_url"))


@dataclass
class Served:
    url: str
    http: httpx.Client
    tokens: dict[str, str]
    key_ids: dict[str, str]
    entered: threading.Event
    release: threading.Event

    def call(self, token: str | None, request_id: Any, name: Any,
             arguments: Any = None, version: str | None = None) -> httpx.Response:
        meta = modern_meta() if version is None else modern_meta(schemaVersion=version)
        params: dict[str, Any] = {"name": name, "_meta": meta,
                                  "arguments": {"a": 1} if arguments is None else arguments}
        return self.http.post(self.url, headers=modern_headers(
                                  "tools/call", name if isinstance(name, str) else None, token),
                              json={"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                    "params": params})


def _estate(registry: Registry) -> None:
    """``calc`` 1.0.0 retired, 2.0.0 served, for every tenant; ``vault`` for acme only;
    ``ledger`` 1.0.0 for every tenant, 2.0.0 for acme only."""
    registry.publish(contract("calc", "1.0.0", CALC))
    registry.publish(contract("calc", "2.0.0", CALC))
    registry.retire("calc", Version.parse("1.0.0"))
    registry.publish(contract("vault", "1.0.0", CALC, tenants=["acme"]))
    registry.publish(contract("ledger", "1.0.0", CALC))
    registry.publish(contract("ledger", "2.0.0", CALC, tenants=["acme"]))


@contextmanager
def served(url: str) -> Iterator[Served]:
    """The gateway over ``url``'s registry, served for the block; its logs are flushed and
    closed when the block ends. Keys: one per tenant of :data:`TENANTS`, and ``revoked``
    (acme's, revoked). hasty may call once in 1,000 s, busy once at a time."""
    registry = Registry.open(url)
    _estate(registry)
    keys = key_store(registry.store)
    issued = {tenant: issue_key(keys, tenant=tenant, scopes=[], clearance="internal")
              for tenant in (*TENANTS, "revoked")}
    revoke_key(keys, issued["revoked"].record.id)
    entered, release = threading.Event(), threading.Event()

    def calc(arguments: dict[str, Any], ctx: Any) -> dict[str, Any]:
        if ctx.principal.tenant == "busy":
            entered.set()
            assert release.wait(30)  # bounded: the test sets it right after its one refusal
        return {"ok": True}

    handlers = ToolHandlers()
    handlers.bind("calc", calc)
    handlers.bind("vault", lambda arguments, ctx: {"ok": True})
    handlers.bind("ledger", lambda arguments, ctx: {"ok": True})
    obs = build_observability(CallLogSettings(), MetricsSettings(), registry=registry,
                              registry_url=url)
    limits = build_limits(LimitsSettings(tenants={
        "hasty": TenantLimits(rate_per_s=0.001, burst=1),
        "busy": TenantLimits(concurrency=1)}))
    resolver = build_resolver(AuthSettings(methods=("keys",), resource="http://127.0.0.1/mcp"),
                              registry)
    app, _ = build_app(registry, handlers, call_log=obs.call_log, resolve_principal=resolver,
                       limits=limits)
    try:
        with serve_in_thread(app) as running, httpx.Client(timeout=30) as http:
            yield Served(running.url, http, {t: k.token for t, k in issued.items()},
                         {t: k.record.id for t, k in issued.items()}, entered, release)
    finally:
        release.set()
        obs.stop()
        registry.close()


def refusals(url: str, **filters: Any) -> list[RefusalRow]:
    rows = open_refusal_rows(url, read_only=True)
    try:
        return list(reversed(rows.query(RefusalQuery(limit=1000, **filters))))
    finally:
        rows.close()


def fields(row: RefusalRow) -> tuple[Any, ...]:
    return (row.reason, row.tenant, row.credential, row.tool, row.version, row.era,
            row.request_id)


def test_each_refusal_kind_is_recorded_with_its_reason_and_principal(url: str) -> None:
    with served(url) as gw:
        acme, kid = gw.tokens["acme"], gw.key_ids["acme"]
        invalid = gw.call(acme, 1, "calc", {"a": "x"})
        assert invalid.json()["result"]["isError"] is True
        assert gw.call(acme, 2, "nope").json()["error"]["code"] == INVALID_PARAMS
        assert gw.call(gw.tokens["globex"], 3, "vault").json()["error"]["code"] == INVALID_PARAMS
        assert gw.call(acme, 4, "calc", version="1.0.0").json()["error"]["data"]["reason"] == (
            "schema_version_retired")
        assert gw.call(acme, 5, "calc", version="9.9.9").json()["error"]["data"]["reason"] == (
            "schema_version_unknown")
        assert gw.call(gw.tokens["globex"], "v", "ledger", version="2.0.0"
                       ).json()["error"]["data"]["reason"] == "schema_version_unknown"
        hasty = gw.tokens["hasty"]
        assert "result" in gw.call(hasty, 6, "calc").json()
        limited = gw.call(hasty, 7, "calc")
        assert (limited.status_code, limited.json()["error"]["code"]) == (429, RATE_LIMITED)
        # busy's first call holds its one slot while the second is refused.
        first: list[httpx.Response] = []
        holder = threading.Thread(target=lambda: first.append(
            gw.call(gw.tokens["busy"], 8, "calc")))
        holder.start()
        assert gw.entered.wait(30)
        busy = gw.call(gw.tokens["busy"], 9, "calc").json()
        gw.release.set()
        holder.join(30)
        assert busy["error"]["data"]["limit"] == "concurrency"
        assert "result" in first[0].json()
        assert gw.call(None, 10, "calc").status_code == 401
        assert gw.call(gw.tokens["revoked"], 11, "calc").status_code == 401
        wrong_secret = acme[:-4] + ("AAAA" if not acme.endswith("AAAA") else "BBBB")
        assert gw.call(wrong_secret, 12, "calc").status_code == 401
        legacy = HttpPeer(gw.url, gw.http, acme, legacy=True)
        assert legacy.initialize().status_code == 200
        assert legacy.post("tools/call", "nope").json()["error"]["code"] == INVALID_PARAMS
    assert [fields(row) for row in refusals(url)] == [
        ("invalid_arguments", "acme", kid, "calc", "2.0.0", "modern", "1"),
        ("unknown_tool", "acme", kid, "nope", None, "modern", "2"),
        ("unentitled_tool", "globex", gw.key_ids["globex"], "vault", None, "modern", "3"),
        ("schema_version_retired", "acme", kid, "calc", "1.0.0", "modern", "4"),
        ("schema_version_unknown", "acme", kid, "calc", "9.9.9", "modern", "5"),
        ("unentitled_version", "globex", gw.key_ids["globex"], "ledger", "2.0.0", "modern",
         '"v"'),
        ("rate_limited", "hasty", gw.key_ids["hasty"], "calc", None, "modern", "7"),
        ("concurrency_limited", "busy", gw.key_ids["busy"], "calc", None, "modern", "9"),
        ("auth.missing", None, None, None, None, "modern", None),
        ("auth.revoked", None, gw.key_ids["revoked"], None, None, "modern", None),
        ("auth.unknown_key", None, kid, None, None, "modern", None),
        ("unknown_tool", "acme", kid, "nope", None, "legacy", "1"),
    ]
    assert [row.to_dict()["request_id"] for row in refusals(url, reason="unentitled_version")
            ] == ["v"]


def test_the_wire_answers_an_unentitled_tool_as_a_nonexistent_one_only_the_record_differs(
        url: str) -> None:
    with served(url) as gw:
        globex = gw.tokens["globex"]
        unentitled = gw.call(globex, 1, "vault")
        unknown = gw.call(globex, 1, "nosuch")
        pinned_unentitled = gw.call(globex, 2, "vault", version="1.0.0")
        pinned_unknown = gw.call(globex, 2, "nosuch", version="1.0.0")
        version_unentitled = gw.call(globex, 3, "ledger", version="2.0.0")
        version_unknown = gw.call(globex, 3, "ledger", version="9.0.0")
    assert unentitled.status_code == unknown.status_code
    assert unentitled.json() == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": INVALID_PARAMS, "message": "Unknown tool: vault"}}
    assert unknown.json() == {"jsonrpc": "2.0", "id": 1, "error": {
        "code": INVALID_PARAMS, "message": "Unknown tool: nosuch"}}
    assert pinned_unentitled.status_code == pinned_unknown.status_code
    assert (pinned_unentitled.json()["error"]["message"].replace("vault", "X")
            == pinned_unknown.json()["error"]["message"].replace("nosuch", "X"))
    assert version_unentitled.status_code == version_unknown.status_code
    one, other = version_unentitled.json()["error"], version_unknown.json()["error"]
    assert one["data"] == {**other["data"], "requestedVersion": "2.0.0"}
    assert one["message"].replace("2.0.0", "X") == other["message"].replace("9.0.0", "X")
    assert [(row.reason, row.tool, row.version) for row in refusals(url)] == [
        ("unentitled_tool", "vault", None), ("unknown_tool", "nosuch", None),
        ("unentitled_tool", "vault", "1.0.0"), ("unknown_tool", "nosuch", "1.0.0"),
        ("unentitled_version", "ledger", "2.0.0"), ("schema_version_unknown", "ledger", "9.0.0")]


def test_a_schema_violation_leaves_the_call_log_untouched(url: str) -> None:
    with served(url) as gw:
        acme = gw.tokens["acme"]
        assert gw.call(acme, 1, "calc", {"a": "not an integer"}).json()["result"]["isError"]
        assert gw.call(acme, 2, "calc", {"a": 1, "extra": True}).json()["result"]["isError"]
        assert "result" in gw.call(acme, 3, "calc", {"a": 1}).json()
    calls = open_call_rows(url, read_only=True)
    try:
        logged = calls.query(CallQuery(limit=100))
    finally:
        calls.close()
    assert [(row.request_id, row.outcome) for row in logged] == [("3", "ok")]
    assert [(row.reason, row.request_id) for row in refusals(url)] == [
        ("invalid_arguments", "1"), ("invalid_arguments", "2")]


def test_refusals_are_redacted_as_the_call_log_is(url: str) -> None:
    with served(url) as gw:
        acme = gw.tokens["acme"]
        gw.call(acme, 1, "calc", {"a": "x", "password": "hunter2"})
        gw.call(acme, 2, "calc", {"a": "x", "password": "swordfish"})
        gw.call(acme, 3, "calc", {"a": "y", "password": "hunter2"})
        gw.call(acme, 4, "password=hunter2")
        gw.call(acme, 5, "x" * 1000)
    rows = refusals(url)
    digests = [row.arguments_digest for row in rows]
    assert digests[0] == digests[1] != digests[2]  # the password never moves the digest
    assert digests[0] is not None and digests[0].startswith("sha256:")
    assert rows[3].tool is not None and "hunter2" not in rows[3].tool
    assert rows[3].tool.startswith("password")
    assert rows[4].tool is not None and len(rows[4].tool) == ASKED_TEXT_LIMIT


def test_retention_purges_refusals_by_age_and_by_rows(url: str) -> None:
    Registry.open(url).close()
    day_ns = 86_400 * 10**9
    now = 1_900_000_000 * 10**9
    clock = iter([now - 40 * day_ns, now - 2 * day_ns, now - day_ns, now - 1000, now, now,
                  now])
    recorder = CallRecorder(open_call_rows(url), refusal_rows=open_refusal_rows(url),
                            retention_days=30, retention_rows=2, clock_ns=lambda: next(clock))
    for index in range(5):
        recorder.refused(RefusalRecord("unknown_tool", tool=f"t{index}", request_id=index))
    recorder.stop()  # writes them, then prunes: the 40-day-old one by age, one more by rows
    assert [row.tool for row in refusals(url)] == ["t3", "t4"]


def test_a_refusal_flood_is_held_in_a_bounded_buffer_the_oldest_dropped_and_counted(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    Registry.open(url).close()
    recorder = CallRecorder(open_call_rows(url), refusal_rows=open_refusal_rows(url),
                            max_batch=3)  # the flusher is not started: nothing is written
    for index in range(3 * 100 + 25):
        recorder.refused(RefusalRecord("rate_limited", tool="calc", request_id=index))
    assert recorder.refusals_dropped == 25
    recorder.stop()
    kept = refusals(url)
    assert len(kept) == 300
    assert (kept[0].request_id, kept[-1].request_id) == ("25", "324")
