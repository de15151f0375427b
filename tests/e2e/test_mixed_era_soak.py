"""Soak hunt: the gateway over real HTTP (uvicorn on 127.0.0.1) under a bounded, mixed,
concurrent load of both protocol eras on one endpoint while ``soak.echo`` is published,
deprecated and retired through the Registry API.

Every reply is checked against what SPEC.md and mcp-wire.md say for its request: the era's
result fields (modern: ``resultType``; legacy: never ``resultType``/``ttlMs``/``cacheScope``),
the schema-version gate's error data (SPEC 3.4), freshness (a call is judged against the
registry as of when it arrived or later), and the call log (SPEC 3.4.4: exactly the dispatched
calls). The gateway's tables are measured by ``len()`` after N/2 and N requests: nothing may
grow with the request count. No 5xx, no traceback, no warning in the server's log.

Every phase is bounded by a count of operations, never by wall time, so the file passes on a
loaded machine: each worker runs a fixed number of requests, the registry changes at fixed
request counts, and every wait is a bounded number of polls or a join whose limit is the
worker's request count times the per-request timeout."""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from load_kit import LegacyClient, ModernClient, start_gateway, stop_gateway
from soak_kit import FAMILY, Soak, family_spec, loop_tasks, sizes, soak_server, sse

from toolkeeper.contracts.semver import Version
from toolkeeper.demo import install_demo
from toolkeeper.registry import Registry

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
REQUEST_TIMEOUT_S = 30.0
TIMEOUT = httpx.Timeout(REQUEST_TIMEOUT_S)
POLLS = 1000
"""The most polls of a condition (each a short wait); a count, not a deadline."""
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
DEMO = ["db.query", "payments.lookup", "soak.echo", "soak.probe", "soak.slow", "tickets.create"]
_ids = itertools.count(1)


# --- expectations --------------------------------------------------------------------------


@dataclass
class Tally:
    """What the load expects of the call log: one record per dispatched call."""

    dispatched: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    requests: int = 0
    abandoned: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, n: int = 1) -> None:
        with self.lock:
            self.requests += n

    def logged(self, tool: str, version: str, era: str) -> None:
        with self.lock:
            self.dispatched[(tool, version, era)] += 1


def _final(response: httpx.Response, request_id: Any) -> tuple[dict[str, Any],
                                                               list[dict[str, Any]]]:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    assert b"Traceback" not in response.content, response.text[:2000]
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        messages = sse(response.content)
    else:
        assert kind == "application/json", (response.status_code, kind, response.text[:300])
        messages = [response.json()]
    final = messages[-1]
    assert final.get("jsonrpc") == "2.0" and final.get("id") == request_id, final
    assert ("result" in final) != ("error" in final), final
    return final, messages[:-1]


def _era_fields(result: dict[str, Any], modern: bool) -> None:
    """mcp-wire 3: modern results carry ``resultType``; legacy ones never carry the 2026
    fields."""
    if modern:
        assert result.get("resultType") == "complete", result
        assert SERVER_INFO in result.get("_meta", {}), result
    else:
        for key in ("resultType", "ttlMs", "cacheScope"):
            assert key not in result, (key, result)
        assert SERVER_INFO not in result.get("_meta", {}), result


def _check_list(result: dict[str, Any], modern: bool, soak: Soak, sent: float,
                received: float) -> None:
    _era_fields(result, modern)
    if modern:
        assert result["ttlMs"] == 0 and result["cacheScope"] == "private", result
    names = [tool["name"] for tool in result["tools"]]
    assert names == DEMO, names
    served = next(t for t in result["tools"] if t["name"] == FAMILY)["_meta"]["schemaVersion"]
    _check_served(soak, served, sent, received)


def _check_served(soak: Soak, served: str, sent: float, received: float) -> None:
    """The served (newest active) ``soak.echo``: no older than the newest published before
    the request was sent, and published (begun) before its reply arrived."""
    minor = Version.parse(served).minor
    floor = soak.timeline.newest_published_before(sent)
    assert minor >= floor, f"served {served} but 1.{floor}.0 was published before the request"
    assert minor == 0 or soak.timeline.begun_before("publish", served, received), served


def _check_pinned_family(soak: Soak, version: str, final: dict[str, Any], status: int,
                         sent: float, received: float, *, legacy: bool) -> bool:
    """A call pinned to ``soak.echo`` ``version``; True when it was dispatched."""
    line = soak.timeline
    error = final.get("error")
    if error is not None:
        # mcp-wire 4.5 and 10: 400 in the modern era, 200 in the legacy era.
        assert status == (200 if legacy else 400) and error["code"] == -32602, final
        data = error["data"]
        assert data["tool"] == FAMILY and data["requestedVersion"] == version, data
        assert data["action"] == "relist", data
        _check_served(soak, data["currentVersion"], sent, received)
        if data["reason"] == "schema_version_retired":
            assert line.begun_before("retire", version, received), (version, data)
        else:
            assert data["reason"] == "schema_version_unknown", data
            assert version != "1.0.0", data
            assert not line.returned_before("publish", version, sent), (version, data)
        return False
    result = final["result"]
    assert result["isError"] is False, result
    assert not line.returned_before("retire", version, sent), f"retired {version} ran"
    meta = {k: v for k, v in result["_meta"].items() if not k.startswith("io.")}
    assert meta["schemaVersion"] == version, meta
    if line.returned_before("deprecate", version, sent):
        assert meta.get("deprecation") == f"move on from {version}", meta
    if "deprecation" in meta:
        assert line.begun_before("deprecate", version, received), meta
    minor = Version.parse(version).minor
    if line.newest_published_before(sent) > minor:
        assert "successor" in meta, meta
    if "successor" in meta:
        assert Version.parse(meta["successor"]).minor > minor, meta
        assert line.begun_before("publish", meta["successor"], received), meta
    return True


# --- clients -------------------------------------------------------------------------------


def _modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    out = {"Accept": ACCEPT, "Content-Type": "application/json",
           "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        out["Mcp-Name"] = name
    return out


class Worker(threading.Thread):
    """One client running ``budget`` randomly chosen operations of both eras."""

    def __init__(self, soak: Soak, tally: Tally, seed: int, budget: int) -> None:
        super().__init__(daemon=True)
        self.soak = soak
        self.tally = tally
        self.rng = random.Random(seed)
        self.budget = budget
        self.failure: BaseException | None = None
        self.http: httpx.Client | None = None

    def run(self) -> None:
        try:
            with httpx.Client(timeout=TIMEOUT) as http:
                self.http = http
                ops = list(OPERATIONS.values())
                weights = [w for w, _ in ops]
                while self.budget > 0:
                    _, op = self.rng.choices(ops, weights)[0]
                    op(self)
        except BaseException as exc:
            self.failure = exc

    def post(self, body: Any, headers: dict[str, str]) -> tuple[httpx.Response, float, float]:
        assert self.http is not None
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = time.monotonic()
        response = self.http.post(self.soak.url, content=content, headers=headers)
        received = time.monotonic()
        self.budget -= 1
        self.tally.count()
        return response, sent, received

    # --- modern ------------------------------------------------------------------------------

    def modern(self, method: str, params: dict[str, Any], name: str | None = None,
               meta: dict[str, Any] | None = None) -> tuple[httpx.Response, dict[str, Any],
                                                           list[dict[str, Any]], float, float]:
        request_id = next(_ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method,
                "params": {**params, "_meta": {**ENVELOPE, **(meta or {})}}}
        response, sent, received = self.post(body, _modern_headers(method, name))
        final, notes = _final(response, request_id)
        return response, final, notes, sent, received

    def modern_list(self) -> None:
        response, final, _, sent, received = self.modern("tools/list", {})
        assert response.status_code == 200
        _check_list(final["result"], True, self.soak, sent, received)

    def modern_db(self) -> None:
        arguments = {"sql": f"select {self.rng.randrange(99)}", "timeout": 5}
        _response, final, _, _, _ = self.modern(
            "tools/call", {"name": "db.query", "arguments": arguments}, "db.query")
        result = final["result"]
        _era_fields(result, True)
        assert result["isError"] is False and result["_meta"]["schemaVersion"] == "4.0.0"
        self.tally.logged("db.query", "4.0.0", "modern")

    def modern_invalid(self) -> None:
        arguments = {"sql": "", "timeout": "x", "extra": 1}
        _response, final, _, _, _ = self.modern(
            "tools/call", {"name": "db.query", "arguments": arguments}, "db.query")
        result = final["result"]
        _era_fields(result, True)
        assert result["isError"] is True
        paths = [e["path"] for e in result["structuredContent"]["errors"]]
        assert paths == ["$.extra", "$.sql", "$.timeout"], paths

    def modern_retired(self) -> None:
        response, final, _, _, _ = self.modern(
            "tools/call", {"name": "db.query", "arguments": {"sql": "s"}}, "db.query",
            {"schemaVersion": "3.0.0"})
        assert response.status_code == 400, response.status_code
        assert final["error"]["code"] == -32602
        assert final["error"]["data"] == {
            "reason": "schema_version_retired", "tool": "db.query", "requestedVersion": "3.0.0",
            "currentVersion": "4.0.0", "action": "relist"}, final

    def modern_unknown(self) -> None:
        name = f"no.such{self.rng.randrange(10_000)}"
        response, final, _, _, _ = self.modern(
            "tools/call", {"name": name, "arguments": {}}, name)
        assert response.status_code == 400
        assert final["error"]["code"] == -32602 and "data" not in final["error"], final

    def modern_progress(self) -> None:
        token = f"t{next(_ids)}"
        _response, final, notes, _, _ = self.modern(
            "tools/call", {"name": "payments.lookup", "arguments": {"reference": "PMT-772"}},
            "payments.lookup", {"progressToken": token})
        result = final["result"]
        _era_fields(result, True)
        assert result["isError"] is False, result
        progress = [n for n in notes if n.get("method") == "notifications/progress"]
        assert [p["params"]["progressToken"] for p in progress] == [token, token], notes
        for note in notes:
            assert "id" not in note, note
        self.tally.logged("payments.lookup", "1.0.0", "modern")

    def modern_family(self) -> None:
        pinned = self.rng.random() < 0.7
        if pinned:
            top = self.soak.timeline.newest_published_before(time.monotonic() + 1e9)
            version = f"1.{self.rng.randrange(top + 2)}.0"
            meta: dict[str, Any] | None = {"schemaVersion": version}
        else:
            meta = None
        response, final, _, sent, received = self.modern(
            "tools/call", {"name": FAMILY, "arguments": {"n": 7}}, FAMILY, meta)
        if pinned:
            if _check_pinned_family(self.soak, version, final, response.status_code, sent,
                                    received, legacy=False):
                _era_fields(final["result"], True)
                self.tally.logged(FAMILY, version, "modern")
            return
        result = final["result"]
        _era_fields(result, True)
        assert result["isError"] is False, result
        served = result["_meta"]["schemaVersion"]
        _check_served(self.soak, served, sent, received)
        self.tally.logged(FAMILY, served, "modern")

    def malformed(self) -> None:
        kind = self.rng.randrange(4)
        if kind == 0:
            response, _, _ = self.post(b"{nope", _modern_headers("tools/list"))
            final, _ = _final(response, None)
            assert response.status_code == 400 and final["error"]["code"] == -32700, final
        elif kind == 1:  # Mcp-Name disagrees with the body
            request_id = next(_ids)
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                    "params": {"name": "db.query", "arguments": {}, "_meta": ENVELOPE}}
            response, _, _ = self.post(body, _modern_headers("tools/call", "tickets.create"))
            final, _ = _final(response, request_id)
            assert response.status_code == 400 and final["error"]["code"] == -32020, final
        elif kind == 2:  # an unknown method
            request_id = next(_ids)
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/nothing",
                    "params": {"_meta": ENVELOPE}}
            response, _, _ = self.post(body, _modern_headers("tools/nothing"))
            final, _ = _final(response, request_id)
            assert final["error"]["code"] == -32601, final
        else:  # a legacy request with a session id nobody issued
            request_id = next(_ids)
            response, _, _ = self.post(
                {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"},
                {"Accept": ACCEPT, "Content-Type": "application/json",
                 "Mcp-Session-Id": f"x{request_id}", "MCP-Protocol-Version": LEGACY})
            final, _ = _final(response, request_id)
            assert response.status_code == 404 and final["error"]["code"] == -32600, final

    # --- legacy ------------------------------------------------------------------------------

    def legacy_session(self) -> None:
        request_id = next(_ids)
        response, _, _ = self.post(
            {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
             "params": {"protocolVersion": LEGACY, "capabilities": {},
                        "clientInfo": {"name": "soak", "version": "1"}}},
            {"Accept": ACCEPT, "Content-Type": "application/json"})
        final, _ = _final(response, request_id)
        assert final["result"]["protocolVersion"] == LEGACY, final
        session = response.headers["mcp-session-id"]
        headers = {"Accept": ACCEPT, "Content-Type": "application/json",
                   "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}
        response, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                   headers)
        assert response.status_code == 202 and response.content == b"", response.text
        for _ in range(self.rng.randrange(1, 5)):
            self.legacy_request(headers)
        if self.rng.random() < 0.9:
            assert self.http is not None
            deleted = self.http.delete(self.soak.url, headers=headers)
            self.budget -= 1
            self.tally.count()
            assert deleted.status_code == 200, deleted.status_code
            request_id = next(_ids)
            response, _, _ = self.post({"jsonrpc": "2.0", "id": request_id,
                                        "method": "tools/list"}, headers)
            final, _ = _final(response, request_id)
            assert response.status_code == 404 and final["error"]["code"] == -32600, final
        else:
            with self.tally.lock:
                self.tally.abandoned += 1

    def legacy_request(self, headers: dict[str, str]) -> None:
        request_id = next(_ids)
        kind = self.rng.randrange(5)
        params: dict[str, Any]
        if kind == 0:
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
            response, sent, received = self.post(body, headers)
            final, _ = _final(response, request_id)
            _check_list(final["result"], False, self.soak, sent, received)
            return
        if kind == 1:
            params = {"name": "db.query", "arguments": {"sql": "s"},
                      "_meta": {"schemaVersion": "3.0.0"}}
        elif kind == 2:
            params = {"name": "payments.lookup", "arguments": {"reference": "PMT-900"},
                      "_meta": {"progressToken": request_id}}
        elif kind == 3:
            params = {"name": "db.query", "arguments": {"sql": "s", "timeout": 1}}
        else:
            top = self.soak.timeline.newest_published_before(time.monotonic() + 1e9)
            params = {"name": FAMILY, "arguments": {"n": 3},
                      "_meta": {"schemaVersion": f"1.{self.rng.randrange(top + 2)}.0"}}
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        response, sent, received = self.post(body, headers)
        final, notes = _final(response, request_id)
        if kind == 1:
            assert response.status_code == 200 and final["error"]["data"] == {
                "reason": "schema_version_retired", "tool": "db.query",
                "requestedVersion": "3.0.0", "currentVersion": "4.0.0",
                "action": "relist"}, final
            return
        if kind == 4:
            version = params["_meta"]["schemaVersion"]
            if _check_pinned_family(self.soak, version, final, response.status_code, sent,
                                    received, legacy=True):
                _era_fields(final["result"], False)
                self.tally.logged(FAMILY, version, "legacy")
            return
        result = final["result"]
        _era_fields(result, False)
        assert result["isError"] is False, result
        if kind == 2:
            tokens = [n["params"]["progressToken"] for n in notes
                      if n.get("method") == "notifications/progress"]
            assert tokens == [request_id, request_id], notes
            self.tally.logged("payments.lookup", "1.0.0", "legacy")
        else:
            self.tally.logged("db.query", "4.0.0", "legacy")


OPERATIONS: dict[str, tuple[int, Callable[[Worker], None]]] = {
    "modern_list": (3, Worker.modern_list),
    "modern_db": (3, Worker.modern_db),
    "modern_invalid": (2, Worker.modern_invalid),
    "modern_retired": (2, Worker.modern_retired),
    "modern_unknown": (1, Worker.modern_unknown),
    "modern_progress": (2, Worker.modern_progress),
    "modern_family": (5, Worker.modern_family),
    "malformed": (2, Worker.malformed),
    "legacy_session": (2, Worker.legacy_session),
}


# --- the registry changing under the load ----------------------------------------------------


class Changer(threading.Thread):
    """Publishes ``soak.echo`` 1.k.0, deprecates 1.(k-1).0 and retires 1.(k-2).0 once the load
    has sent ``k * every`` requests, through the Registry API. The step points are absolute
    request counts, so a slow registry step does not push the later ones past the load's end;
    a step whose count the load already reached runs at once."""

    def __init__(self, soak: Soak, tally: Tally, steps: int, every: int) -> None:
        super().__init__(daemon=True)
        self.soak = soak
        self.tally = tally
        self.steps = steps
        self.every = every
        self.stop = threading.Event()
        self.failure: BaseException | None = None
        self.done = 0

    def run(self) -> None:
        registry, line = self.soak.registry, self.soak.timeline
        try:
            for k in range(1, self.steps + 1):
                target = k * self.every
                while self.tally.requests < target:
                    if self.stop.wait(0.005):
                        return
                version = f"1.{k}.0"
                line.began("publish", version)
                registry.publish(family_spec(k))
                line.ended("publish", version)
                old = f"1.{k - 1}.0"
                line.began("deprecate", old)
                registry.deprecate(FAMILY, Version.parse(old), message=f"move on from {old}",
                                   successor=Version.parse(version))
                line.ended("deprecate", old)
                if k >= 2:
                    gone = f"1.{k - 2}.0"
                    line.began("retire", gone)
                    registry.retire(FAMILY, Version.parse(gone))
                    line.ended("retire", gone)
                self.done = k
        except BaseException as exc:
            self.failure = exc


class Listener(threading.Thread):
    """A modern ``subscriptions/listen`` stream held open, counting list_changed events."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(daemon=True)
        self.soak = soak
        self.events: list[dict[str, Any]] = []
        self.failure: BaseException | None = None
        self.client = httpx.Client(timeout=TIMEOUT)
        self.acknowledged = threading.Event()

    def run(self) -> None:
        request_id = next(_ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
                "params": {"_meta": ENVELOPE, "notifications": {"toolsListChanged": True}}}
        try:
            with self.client.stream("POST", self.soak.url, json=body,
                                    headers=_modern_headers("subscriptions/listen")) as stream:
                assert stream.status_code == 200
                buffer = b""
                for chunk in stream.iter_raw():
                    buffer += chunk
                    while b"\r\n\r\n" in buffer:
                        frame, buffer = buffer.split(b"\r\n\r\n", 1)
                        if frame.startswith(b":"):
                            continue
                        self.events.extend(sse(frame + b"\r\n\r\n"))
                        if self.events:
                            self.acknowledged.set()
        except (httpx.ReadError, httpx.RemoteProtocolError, httpx.StreamClosed):
            pass
        except BaseException as exc:
            self.failure = exc

    def close(self) -> None:
        self.client.close()


def _join(thread: threading.Thread, requests: int) -> None:
    """Wait for ``thread``, which sends at most ``requests`` requests, each bounded by the
    client's timeout: the limit follows from the count, not from an expected speed."""
    thread.join((requests + 1) * REQUEST_TIMEOUT_S)
    assert not thread.is_alive(), f"a thread of {requests} requests did not end"


def _run_load(soak: Soak, tally: Tally, *, workers: int, budget: int, seed: int,
              changer: Changer | None = None) -> None:
    threads = [Worker(soak, tally, seed * 100 + i, budget) for i in range(workers)]
    if changer is not None:
        changer.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        _join(thread, budget)
    if changer is not None:
        changer.stop.set()
        _join(changer, 3 * changer.steps)
        assert changer.failure is None, changer.failure
    for thread in threads:
        if thread.failure is not None:
            raise thread.failure


def _logged(soak: Soak, start: int) -> Counter[tuple[str, str, str]]:
    records = soak.gateway.call_log.records  # type: ignore[attr-defined]
    return Counter((r.tool, r.version, r.era) for r in records[start:])


# --- tests ---------------------------------------------------------------------------------


def test_a_mixed_two_era_load_is_answered_right_while_soak_echo_is_published_deprecated_and_retired(
) -> None:
    with soak_server() as soak:
        tally = Tally()
        listeners = [Listener(soak) for _ in range(2)]
        for listener in listeners:
            listener.start()
        for listener in listeners:  # each stream is open before the first change
            assert _polled(listener.acknowledged.is_set), listener.failure
        changer = Changer(soak, tally, steps=12, every=250)
        _run_load(soak, tally, workers=6, budget=600, seed=1, changer=changer)
        assert changer.done == 12, changer.done
        for listener in listeners:
            listener.close()
            _join(listener, 1)
            assert listener.failure is None, listener.failure
            assert listener.events, "the listen stream saw nothing"
            assert listener.events[0]["method"] == "notifications/subscriptions/acknowledged"
            changed = [e for e in listener.events[1:]
                       if e.get("method") == "notifications/tools/list_changed"]
            assert changed, listener.events[:3]
        assert _logged(soak, 0) == tally.dispatched
        assert soak.log.lines() == []


def test_the_gateway_tables_do_not_grow_with_the_request_count() -> None:
    with soak_server() as soak:
        tally = Tally()
        _run_load(soak, tally, workers=4, budget=500, seed=2)
        probe(soak)
        half, half_tasks = sizes(soak), loop_tasks()
        _run_load(soak, tally, workers=4, budget=500, seed=3)
        probe(soak)
        full, full_tasks = sizes(soak), loop_tasks()
        grown = {k: (half[k], full[k]) for k in full
                 if k not in ("call_log", "sessions") and full[k] > half[k] + 2}
        assert grown == {}, (grown, half, full)
        assert full["sessions"] == tally.abandoned, (full["sessions"], tally.abandoned)
        assert full_tasks <= half_tasks + 2, (half_tasks, full_tasks)
        assert full["call_log"] == sum(tally.dispatched.values()) + 2
        assert soak.log.lines() == []


def probe(soak: Soak) -> None:
    with httpx.Client(timeout=TIMEOUT) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "soak.probe", "arguments": {"n": 1}, "_meta": ENVELOPE}}
        response = http.post(soak.url, json=body, headers=_modern_headers("tools/call",
                                                                          "soak.probe"))
        assert response.status_code == 200, response.text


# --- churn: streams that are abandoned, cancelled or ended ----------------------------------


def _first_event(stream: Any) -> dict[str, Any]:
    buffer = b""
    for chunk in stream.iter_raw():
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            frame, buffer = buffer.split(b"\r\n\r\n", 1)
            messages = [] if frame.startswith(b":") else sse(frame + b"\r\n\r\n")
            if messages:  # none in a comment or a resumable legacy stream's priming event
                return messages[0]
    raise AssertionError("the stream ended before its first event")


def _abandon_slow_call(soak: Soak, modern: bool, session: str | None) -> None:
    """Start ``soak.slow`` (progress streamed), read its first event, hang up."""
    request_id = next(_ids)
    params: dict[str, Any] = {"name": "soak.slow", "arguments": {"n": 1}}
    if modern:
        params["_meta"] = {**ENVELOPE, "progressToken": request_id}
        headers = _modern_headers("tools/call", "soak.slow")
    else:
        params["_meta"] = {"progressToken": request_id}
        assert session is not None
        headers = {"Accept": ACCEPT, "Content-Type": "application/json",
                   "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    with httpx.Client(timeout=TIMEOUT) as http, http.stream(
            "POST", soak.url, json=body, headers=headers) as stream:
        assert stream.status_code == 200
        event = _first_event(stream)
        assert event["method"] == "notifications/progress", event


def _abandon_listen(soak: Soak) -> None:
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": "subscriptions/listen",
            "params": {"_meta": ENVELOPE, "notifications": {"toolsListChanged": True}}}
    with httpx.Client(timeout=TIMEOUT) as http, http.stream(
            "POST", soak.url, json=body, headers=_modern_headers("subscriptions/listen")
    ) as stream:
        assert stream.status_code == 200
        assert _first_event(stream)["method"] == "notifications/subscriptions/acknowledged"


def _legacy_session(http: httpx.Client, soak: Soak) -> str:
    response = http.post(soak.url, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {},
                   "clientInfo": {"name": "soak", "version": "1"}}},
        headers={"Accept": ACCEPT, "Content-Type": "application/json"})
    session = response.headers["mcp-session-id"]
    done = http.post(soak.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                     headers={"Accept": ACCEPT, "Content-Type": "application/json",
                              "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY})
    assert done.status_code == 202
    return session


def _polled(condition: Callable[[], bool], polls: int = POLLS) -> bool:
    """Whether ``condition`` holds within ``polls`` checks, 20 ms apart."""
    waiter = threading.Event()
    for _ in range(polls):
        if condition():
            return True
        waiter.wait(0.02)
    return condition()


def _settled(soak: Soak, want: Callable[[dict[str, int]], bool]) -> dict[str, int]:
    """Poll the tables until ``want`` holds (at most ``POLLS`` times)."""
    latest = [sizes(soak)]

    def holds() -> bool:
        latest[0] = sizes(soak)
        return want(latest[0])

    _polled(holds)
    return latest[0]


def _churn(soak: Soak, rounds: int) -> None:
    with httpx.Client(timeout=TIMEOUT) as http:
        session = _legacy_session(http, soak)
        for _ in range(rounds):
            _abandon_slow_call(soak, True, None)
            _abandon_slow_call(soak, False, session)
            _abandon_listen(soak)
        headers = {"Accept": ACCEPT, "Content-Type": "application/json",
                   "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}
        assert http.delete(soak.url, headers=headers).status_code == 200


def test_abandoned_streamed_calls_and_listen_streams_leave_nothing_behind() -> None:
    with soak_server() as soak:
        probe(soak)
        base_tasks = loop_tasks()
        _churn(soak, 30)
        half = _settled(soak, lambda s: s["hub_streams"] == 0 and s["in_flight"] == 0)
        probe(soak)
        half_tasks = loop_tasks()
        _churn(soak, 30)
        full = _settled(soak, lambda s: s["hub_streams"] == 0 and s["in_flight"] == 0)
        probe(soak)
        full_tasks = loop_tasks()
        assert (half["hub_streams"], full["hub_streams"]) == (0, 0), (half, full)
        assert (half["in_flight"], full["in_flight"]) == (0, 0), (half, full)
        assert full["sessions"] == 0, full
        assert full_tasks <= base_tasks + 2 and half_tasks <= base_tasks + 2, (
            base_tasks, half_tasks, full_tasks)
        records = soak.gateway.call_log.records  # type: ignore[attr-defined]
        slow = [r for r in records if r.tool == "soak.slow"]
        assert len(slow) == 120, len(slow)
        # A modern client hanging up cancels its call. A legacy one does not (2025-11-25: a
        # disconnect is not a cancellation; the stream stays resumable for
        # legacy.resume_window_s), so its call runs on and ends with its session's DELETE or
        # by itself, whichever comes first; either way nothing is left in flight (above).
        modern = Counter(r.outcome for r in slow if r.era == "modern")
        legacy = Counter(r.outcome for r in slow if r.era == "legacy")
        assert modern == {"cancelled": 60}, (modern, {r.era for r in slow})
        assert legacy.total() == 60 and set(legacy) <= {"ok", "cancelled"}, legacy
        assert soak.log.lines() == []


# --- the server process's memory ---------------------------------------------------------------


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _undispatched_phase(url: str, per_worker: int) -> None:
    """Requests that never reach a handler (so the call log, bounded by design at 100,000
    records, does not grow): tools/list, the retired db.query 3.0.0, unknown tools, and legacy
    sessions opened, used and deleted."""
    failures: list[BaseException] = []

    def work() -> None:
        try:
            with httpx.Client(timeout=TIMEOUT) as http:
                modern = ModernClient(http, url)
                for j in range(per_worker):
                    kind = j % 4
                    if kind == 0:
                        modern.list()
                    elif kind == 1:
                        assert modern.call("db.query", {"sql": "s"}, "3.0.0").error
                    elif kind == 2:
                        assert modern.call(f"no.such{j}", {}).error
                    else:
                        legacy = LegacyClient(http, url)
                        legacy.list()
                        assert http.delete(url, headers=legacy.headers()).status_code == 200
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        _join(thread, 4 * per_worker)  # a legacy step sends four requests
    if failures:
        raise failures[0]


def test_the_server_process_memory_is_flat_from_n_half_to_n_requests(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with Registry.open(url) as registry:
        install_demo(registry)
    gateway = start_gateway(url, tmp_path / "gateway.log")
    try:
        _undispatched_phase(gateway.url, 250)  # warm-up: caches, allocator arenas
        _undispatched_phase(gateway.url, 500)
        half = _rss_kib(gateway.proc.pid)
        _undispatched_phase(gateway.url, 500)
        full = _rss_kib(gateway.proc.pid)
    finally:
        code = stop_gateway(gateway)
    assert full - half <= 512, (half, full)
    assert code == 0
    assert "Traceback" not in gateway.stderr_text(), gateway.stderr_text()[-2000:]
