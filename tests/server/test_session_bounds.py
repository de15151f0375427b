"""One tenant cannot end another's legacy sessions: a principal that opens more sessions than
its bounds (``[legacy] max_sessions_per_credential``, ``max_sessions_per_tenant``) ends its own
least recently used ones, never another tenant's, and a legacy ``initialize`` takes a token of
the principal's call bucket (``[limits]``), so a flood of them is refused with RATE_LIMITED.

Each gateway is a real ``python -m toolkeeper serve --config FILE`` process on 127.0.0.1 over a
SQLite registry holding API keys of two tenants (acme and globex), stopped by its pid; the
clients speak 2025-11-25 over real HTTP with their own keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import httpx
from tenant_kit import HttpPeer

from process_kit import serving_gateway
from toolkeeper.auth.keys import issue_key
from toolkeeper.protocol.codes import INVALID_REQUEST, RATE_LIMITED
from toolkeeper.registry import Registry
from toolkeeper.registry.apikeys import key_store

PER_CREDENTIAL: Final = 5
PER_TENANT: Final = 8
FLOOD: Final = 40


@contextmanager
def gateway(tmp_path: Path, tables: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A keys-authenticated gateway configured with ``tables`` (TOML); yields its URL and the
    tokens: ``acme`` (tenant acme), ``globex`` and ``globex-2`` (two keys of tenant globex)."""
    database = tmp_path / "registry.db"
    registry = Registry.open(f"sqlite:///{database}")
    try:
        keys = key_store(registry.store)
        tokens = {name: issue_key(keys, tenant=tenant, scopes=[], clearance="public").token
                  for name, tenant in (("acme", "acme"), ("globex", "globex"),
                                       ("globex-2", "globex"))}
    finally:
        registry.close()
    config = tmp_path / "gateway.toml"
    config.write_text(f'[registry]\nurl = "sqlite:///{database}"\n\n'
                      '[server]\nhost = "127.0.0.1"\nport = 0\n\n'
                      '[auth]\nmethods = ["keys"]\nresource = "http://127.0.0.1/mcp"\n\n'
                      '[logging]\nlevel = "warning"\n\n' + tables)
    with serving_gateway(["--config", str(config)]) as url:
        yield url, tokens


def opened(peer: HttpPeer) -> str:
    """``peer`` initialized (and its session ready): its session id."""
    response = peer.initialize()
    assert response.status_code == 200, response.text
    assert "result" in response.json()
    assert peer.session is not None
    return peer.session


def status_of(url: str, http: httpx.Client, token: str, session: str) -> tuple[int, int | None]:
    """A ``tools/list`` in ``session`` with ``token``: the HTTP status and the error code (None
    for a result)."""
    peer = HttpPeer(url, http, token, legacy=True, session=session)
    response = peer.post("tools/list")
    error = response.json().get("error")
    return response.status_code, None if error is None else error["code"]


def test_a_tenant_over_its_session_bounds_loses_its_own_oldest_sessions_never_another_tenants(
        tmp_path: Path) -> None:
    tables = (f"[legacy]\nmax_sessions_per_credential = {PER_CREDENTIAL}\n"
              f"max_sessions_per_tenant = {PER_TENANT}\nmax_sessions = 12\n")
    with gateway(tmp_path, tables) as (url, tokens), httpx.Client(timeout=10) as http:
        acme = opened(HttpPeer(url, http, tokens["acme"], legacy=True))
        globex = [opened(HttpPeer(url, http, tokens["globex"], legacy=True))
                  for _ in range(FLOOD)]
        # The credential's bound: only its own newest five are left.
        assert [status_of(url, http, tokens["globex"], s)[0] for s in globex[:-PER_CREDENTIAL]
                ] == [404] * (FLOOD - PER_CREDENTIAL)
        assert status_of(url, http, tokens["acme"], acme) == (200, None)
        # The tenant's bound: a second key of the tenant pushes out the tenant's oldest.
        second = [opened(HttpPeer(url, http, tokens["globex-2"], legacy=True))
                  for _ in range(PER_CREDENTIAL)]
        left = PER_TENANT - PER_CREDENTIAL
        assert [status_of(url, http, tokens["globex"], s) for s in globex[-PER_CREDENTIAL:]] == (
            [(404, INVALID_REQUEST)] * (PER_CREDENTIAL - left) + [(200, None)] * left)
        assert [status_of(url, http, tokens["globex-2"], s)[0] for s in second] == [
            200] * PER_CREDENTIAL
        # The other tenant's idle session outlived all of it.
        assert status_of(url, http, tokens["acme"], acme) == (200, None)


def test_initialize_takes_a_token_of_the_principals_call_bucket_and_is_refused_when_empty(
        tmp_path: Path) -> None:
    burst = 3
    tables = f"[limits]\nrate_per_s = 0.001\nburst = {burst}\n"  # no token back for 1000 s
    with gateway(tmp_path, tables) as (url, tokens), httpx.Client(timeout=10) as http:
        acme = opened(HttpPeer(url, http, tokens["acme"], legacy=True))
        answers = [HttpPeer(url, http, tokens["globex"], legacy=True).initialize()
                   for _ in range(20)]
        assert [a.status_code for a in answers] == [200] * 20
        assert ["mcp-session-id" in a.headers for a in answers] == [True] * burst + [False] * 17
        errors = [a.json().get("error") for a in answers[burst:]]
        assert {(e["code"], e["data"]["limit"]) for e in errors} == {(RATE_LIMITED, "rate")}
        assert {int(a.headers["retry-after"]) > 0 for a in answers[burst:]} == {True}
        # The same bucket as its calls: globex's next call is refused too ...
        peer = HttpPeer(url, http, tokens["globex"], legacy=True,
                        session=answers[0].headers["mcp-session-id"])
        assert peer.http.post(url, headers=peer.headers("x"), json={
            "jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
        call = peer.post("tools/call", "anything").json()
        assert call["error"]["code"] == RATE_LIMITED
        # ... while acme's session and its own bucket are untouched.
        assert status_of(url, http, tokens["acme"], acme) == (200, None)
        assert HttpPeer(url, http, tokens["acme"], legacy=True).initialize().status_code == 200
        assert "mcp-session-id" in HttpPeer(url, http, tokens["acme"], legacy=True
                                            ).initialize().headers
