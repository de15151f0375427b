"""A rollout served by real ``toolkeeper serve`` processes: ``pay`` 1.0.0 (the target) and
2.0.0 (the candidate) published, API-key principals issued into the registry's store, a
rollout started with the target's signed rollback evidence, the gateway's configuration (its
``[gate]`` signing key: the gateway evaluates the rollout itself) and calls over HTTP with each
principal's key."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import httpx
from gateway_kit import OPEN, contract

from decision_kit import evidence
from toolkeeper.auth.keys import issue_key
from toolkeeper.contracts.semver import Version
from toolkeeper.gate.keys import SigningKey
from toolkeeper.gate.rollback import HMAC_SHA256
from toolkeeper.gate.rollback_evidence import build_evidence
from toolkeeper.registry import Registry
from toolkeeper.registry.apikeys import key_store
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollouts import BUCKETS, Rollout, bucket

MODERN = "2026-07-28"
SALT = "5a1t" * 8
KEY = SigningKey("release-controller", HMAC_SHA256, b"g" * 32)
POLICY = {"minSamples": 10, "maxErrorRate": 0.05, "baseline": {"maxErrorRateDelta": 0.05}}
DECIDED = "toolkeeper release: pay step "
HANDLERS = '''
from toolkeeper.server import ToolHandlers

HANDLERS = ToolHandlers()


def candidate(arguments):
    if FAILING and arguments["a"] % 4 == 0:
        raise RuntimeError("the candidate's defect")
    return {"ran": "2.0.0"}


HANDLERS.bind("pay", lambda arguments: {"ran": "1.0.0"}, version="1.0.0", inline=True)
HANDLERS.bind("pay", candidate, version="2.0.0", inline=True)
'''


def prepared(url: str, principals: int) -> dict[str, str]:
    """``pay`` 1.0.0 and 2.0.0 published in the registry at ``url`` and ``principals`` API
    keys issued (tenant acme): the tokens by key id."""
    with Registry.open(url) as registry:
        registry.publish(contract("pay", "1.0.0", OPEN))
        registry.publish(contract("pay", "2.0.0", OPEN))
        store = key_store(registry.store)
        tokens = {}
        for _ in range(principals):
            issued = issue_key(store, tenant="acme", scopes=[], clearance="internal")
            tokens[issued.record.id] = issued.token
    return tokens


def start_rollout(url: str, *, steps: tuple[int, ...], interval_s: int,
                  max_holds: int) -> Rollout:
    """A running rollout of 2.0.0 over 1.0.0, its rollback evidence signed with ``KEY``."""
    made = evidence()
    kept = {name: made[name] for name in ("transcripts", "sdkDiffs", "proxyEvidence")}
    with Registry.open(url) as registry:
        signed = build_evidence(registry, "pay", "1.0.0", KEY, healthy=True,
                                artifact=lambda spec: hashlib.sha256(b"pay").hexdigest())
        now = time.time_ns() // 1000
        return rollout_book(registry).start(Rollout(
            "pay", Version.parse("2.0.0"), Version.parse("1.0.0"), steps, 0, "running", SALT,
            POLICY, interval_s, max_holds, signed, now, now, now, extra={"evidence": kept}))


def gateway_config(tmp_path: Path, url: str, *, failing: bool, name: str = "gateway",
                   evaluate_every_s: float = 0.2) -> Path:
    """A keys-authenticated gateway on ``url`` serving ``pay`` (its candidate failing a
    quarter of its calls when ``failing``), evaluating its rollouts every
    ``evaluate_every_s``."""
    handlers = tmp_path / f"pay_handlers_{name}.py"
    handlers.write_text(f"FAILING = {failing}\n{HANDLERS}")
    key = tmp_path / "gate.key"
    key.write_text(KEY.secret.hex() if isinstance(KEY.secret, bytes) else "")
    config = tmp_path / f"{name}.toml"
    config.write_text(f'[registry]\nurl = "{url}"\n\n'
                      '[server]\nport = 0\njson_response = true\n\n'
                      f'[estate]\nhandlers = ["{handlers}:HANDLERS"]\n\n'
                      '[auth]\nmethods = ["keys"]\nresource = "http://127.0.0.1/mcp"\n\n'
                      '[calllog]\nflush_interval_ms = 100\n\n'
                      '[logging]\nlevel = "info"\n\n'
                      f'[gate]\nsigning_key_id = "{KEY.key_id}"\nsigning_key_file = "{key}"\n\n'
                      f'[release]\nevaluate_every_s = {evaluate_every_s}\n', encoding="utf-8")
    return config


def in_share(tokens: dict[str, str], share: int) -> set[str]:
    """The key ids the rollout routes to its candidate at ``share`` percent."""
    return {k for k in tokens if bucket(SALT, f"credential:{k}") < share * (BUCKETS // 100)}


def call(http: httpx.Client, url: str, token: str, a: int) -> dict[str, Any]:
    """An unpinned ``tools/call`` of ``pay`` with ``token``: the JSON-RPC reply."""
    response = http.post(url, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "pay"}, json={
        "jsonrpc": "2.0", "id": a, "method": "tools/call",
        "params": {"name": "pay", "arguments": {"a": a}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def served(reply: dict[str, Any]) -> str:
    """The version that answered ``reply``."""
    assert "result" in reply, reply
    return str(reply["result"]["_meta"]["schemaVersion"])
