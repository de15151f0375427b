"""The gateway configurations the benches measure, assembled as ``toolkeeper serve`` assembles
them from a configuration file, and the requests of one ``tools/call`` of the demo's
``payments.lookup`` in either era.

Configurations (:data:`CONFIGS`), each with ``server.json_response = true``:

* ``anonymous``: the demo estate in a ``memory:`` registry, the anonymous local principal, the
  in-memory call log (``calllog.durable = false``), no metrics, no limits;
* ``demo``: what ``toolkeeper serve --demo`` runs: a SQLite registry file and the durable call
  log written to it (the defaults);
* ``deploy``: ``demo`` with an API key (``auth.methods = ["keys"]``, one key issued for the
  demo's tenant with every scope the estate requires), Prometheus metrics on a free loopback
  port, and limits that never refuse at this load but are all in force: a rate of 1,000,000
  calls per second per principal, concurrency 1,000 and a call timeout of 30 s;
* ``deploy-jwt``: ``deploy`` with an RS256 JWT (``auth.methods = ["jwt"]``, a PEM public key)
  instead of the key.

:func:`assemble` writes the TOML file into a folder, loads it with the configuration loader
and builds the features, the gateway and the ASGI app the way ``serve`` does
(``toolkeeper.cli.serve_cmd``): the app served is ``observability.wrap_app`` of the transport's
app. :func:`legacy_session` opens a legacy (2025-11-25) session through the app in process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkeeper.protocol import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY, encode_message

__all__ = ["CONFIGS", "ERAS", "Assembled", "assemble", "call_body", "call_headers",
           "checked_call", "exchanger", "legacy_session_asgi", "serve_http", "start_lifespan"]

CONFIGS = ("anonymous", "demo", "deploy", "deploy-jwt")
ERAS = ("modern", "legacy")
MODERN, LEGACY = "2026-07-28", "2025-11-25"
TOOL = "payments.lookup"
ISSUER = "https://idp.bench"
KEY_ENV = "TOOLKEEPER_BENCH_RSA_KEY"
"""A PEM private key file shared by every run (an RSA key search costs a varying number of
instructions, which would not cancel out between two callgrind runs)."""


def call_body(era: str) -> bytes:
    params: dict[str, Any] = {"name": TOOL, "arguments": {"reference": "PMT-771"}}
    if era == "modern":
        params["_meta"] = {PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: {}}
    return encode_message({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": params})


def call_headers(era: str, token: str | None, session_id: str | None = None
                 ) -> list[tuple[str, str]]:
    """The request's headers (as a client sends them; the ASGI pairs are these lowercased)."""
    out = [("Content-Type", "application/json"),
           ("Accept", "application/json, text/event-stream"),
           ("MCP-Protocol-Version", MODERN if era == "modern" else LEGACY)]
    if era == "modern":
        out += [("Mcp-Method", "tools/call"), ("Mcp-Name", TOOL)]
    if session_id is not None:
        out.append(("Mcp-Session-Id", session_id))
    if token is not None:
        out.append(("Authorization", f"Bearer {token}"))
    return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def rsa_key() -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = os.environ.get(KEY_ENV)
    if path:
        return serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def share_rsa_key(folder: str) -> None:
    """Make the key once and name it in the environment for child processes."""
    from cryptography.hazmat.primitives import serialization

    path = Path(folder) / "bench-key.pem"
    path.write_bytes(rsa_key().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    os.environ[KEY_ENV] = str(path)


def config_text(name: str, folder: Path, port: int, flush_interval_ms: int | None = None
                ) -> str:
    lines = ["[server]", "json_response = true", f"port = {port}", ""]
    registry = "memory:" if name == "anonymous" else f"sqlite:///{folder}/registry.db"
    lines += ["[registry]", f'url = "{registry}"', "", "[estate]", "demo = true", ""]
    if name == "anonymous":
        lines += ["[calllog]", "durable = false", ""]
    elif flush_interval_ms is not None:
        lines += ["[calllog]", f"flush_interval_ms = {flush_interval_ms}", ""]
    if name.startswith("deploy"):
        lines += ["[metrics]", f"port = {_free_port()}", "",
                  "[limits]", "rate_per_s = 1000000.0", "burst = 1000000",
                  "concurrency = 1000", "call_timeout_s = 30.0", ""]
    if name == "deploy":
        lines += ["[auth]", 'methods = ["keys"]', ""]
    if name == "deploy-jwt":
        lines += ["[auth]", 'methods = ["jwt"]', "", "[[auth.jwt.issuers]]",
                  f'issuer = "{ISSUER}"', 'public_key_file = "jwt-public.pem"', ""]
    return "\n".join(lines)


@dataclass
class Assembled:
    """One configuration, built: ``app`` is what ``serve`` serves."""

    name: str
    app: Any
    gateway: Any
    features: Any
    registry: Any
    token: str | None
    http: Any
    logging: Any
    """The configuration's ``[logging]`` settings (serve's defaults: ``info``, access lines
    of errors only)."""

    def stop(self) -> None:
        self.features.stop()
        self.registry.close()


def assemble(name: str, folder: Path, port: int = 8000, *,
             flush_interval_ms: int | None = None) -> Assembled:
    """Build configuration ``name`` in ``folder`` (its registry file, keys and TOML file);
    ``flush_interval_ms`` replaces the call log's default (200)."""
    from toolkeeper.cli import serve_cmd
    from toolkeeper.cli.serve_features import build_features
    from toolkeeper.config.loader import parse_config
    from toolkeeper.demo import demo_handlers, install_demo
    from toolkeeper.registry import Registry
    from toolkeeper.server import ToolHandlers, build_gateway
    from toolkeeper.transports import HttpConfig, create_asgi_app

    if name not in CONFIGS:
        raise ValueError(f"unknown configuration {name!r}")
    folder.mkdir(parents=True, exist_ok=True)
    token: str | None = None
    if name == "deploy-jwt":
        from cryptography.hazmat.primitives import serialization

        private = rsa_key()
        (folder / "jwt-public.pem").write_bytes(private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    text = config_text(name, folder, port, flush_interval_ms)
    (folder / f"{name}.toml").write_text(text)
    config = parse_config(text, {}, base=folder)
    registry = Registry.open(config.registry.url or None)
    install_demo(registry)
    handlers = ToolHandlers()
    handlers.merge(demo_handlers())
    scopes = sorted(registry.required_scopes())
    features = build_features(config, registry, stdio=False)
    if name == "deploy":
        from toolkeeper.auth.keys import issue_key
        from toolkeeper.registry.apikeys import key_store

        token = issue_key(key_store(registry.store), tenant="local", scopes=scopes,
                          clearance="restricted").token
    elif name == "deploy-jwt":
        import jwt

        from toolkeeper.auth import default_resource

        resource = config.auth.resource or default_resource(config.server.host, port,
                                                            config.server.path)
        token = jwt.encode({"iss": ISSUER, "aud": resource,
                            "sub": "bench", "tenant": "local", "scope": " ".join(scopes),
                            "clearance": "restricted", "iat": int(time.time()),
                            "exp": int(time.time()) + 3600}, private, algorithm="RS256")
    server, legacy = config.server, config.legacy
    # Only what this checkout's build_gateway and HttpConfig take (``--src`` runs an older one).
    options: dict[str, Any] = {
        "call_log": features.observability.call_log, "resolve_principal": features.resolver,
        "limits": features.limits, "legacy_sessions": server.legacy_sessions,
        "sealer": features.sealer, "list_page_size": server.list_page_size,
        "list_cursor_ttl_s": server.list_cursor_ttl_s,
        "request_state_ttl_s": getattr(getattr(config, "sealing", None),
                                       "request_state_ttl_s", None)}
    if hasattr(serve_cmd, "_sessions"):
        options["sessions"] = serve_cmd._sessions(legacy)
    accepted = inspect.signature(build_gateway).parameters
    gateway = build_gateway(registry, handlers, **{k: v for k, v in options.items()
                                                   if k in accepted and v is not None})
    http_options: dict[str, Any] = {
        "path": server.path,
        "policy": serve_cmd._policy(server.host, server.allowed_hosts, server.allowed_origins),
        "documents": dict(features.documents), "replay": serve_cmd._replay(legacy),
        "ask_timeout_s": legacy.ask_timeout_s, "max_pending_asks": legacy.max_pending_asks,
        "max_pending_asks_per_session": getattr(legacy, "max_pending_asks_per_session", None)}
    for key in ("json_response", "max_body_bytes", "body_timeout_s", "head_timeout_s",
                "idle_timeout_s", "max_connections", "max_connections_per_ip", "backlog"):
        http_options[key] = getattr(server, key, None)
    fields = {f.name for f in dataclasses.fields(HttpConfig)}
    http = HttpConfig(**{k: v for k, v in http_options.items()
                         if k in fields and v is not None})
    app = features.observability.wrap_app(create_asgi_app(gateway.kernel, http,
                                                          changes=gateway.changes))
    return Assembled(name, app, gateway, features, registry, token, http, config.logging)


# --- in process: one request through the ASGI app ---------------------------------------------


def scope_of(headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
    pairs = [(b"host", b"127.0.0.1:8000"),
             *((n.lower().encode(), v.encode()) for n, v in headers),
             (b"content-length", str(len(body)).encode())]
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
            "query_string": b"", "root_path": "", "headers": pairs,
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}


Exchange = Callable[[dict[str, Any], bytes], Awaitable[tuple[int, dict[bytes, bytes], bytes]]]


def checked_call(app: Any, expected: bytes) -> Callable[[], Awaitable[None]]:
    """One modern ``tools/call`` of the lookup through ``app`` (a client that stays connected
    until its answer is complete): AssertionError unless the status is 200 and the body holds
    ``expected``."""
    exchange = exchanger(app, connected=True)
    body = call_body("modern")
    scope = scope_of(call_headers("modern", None), body)

    async def call() -> None:
        status, _, reply = await exchange(scope, body)
        if status != 200 or expected not in reply:
            raise AssertionError(f"not the lookup's answer: {status} {reply[:300]!r}")

    return call


async def start_lifespan(app: Any) -> Callable[[], Awaitable[None]]:
    """Start ``app``'s lifespan (the SDK's session manager, the forwarding's connections);
    returns the coroutine function that shuts it down."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    task = asyncio.ensure_future(app({"type": "lifespan", "asgi": {"version": "3.0"}},
                                     inbox.get, outbox.put))
    started = await outbox.get()
    if started["type"] != "lifespan.startup.complete":
        raise AssertionError(f"the app did not start: {started}")

    async def stop() -> None:
        await inbox.put({"type": "lifespan.shutdown"})
        await task

    return stop


def exchanger(app: Any, *, connected: bool = False) -> Exchange:
    """One request through ``app``: (status, response headers, body). ``connected``: the
    client stays connected until its answer is complete (a handler that waits is then not
    cancelled by an early disconnect); else it has left once the request is read."""

    async def exchange(scope: dict[str, Any], body: bytes
                       ) -> tuple[int, dict[bytes, bytes], bytes]:
        sent: list[dict[str, Any]] = []
        request = {"type": "http.request", "body": body, "more_body": False}
        answered = asyncio.Event() if connected else None
        given = False

        async def receive() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return request
            if answered is not None:
                await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if (answered is not None and message["type"] == "http.response.body"
                    and not message.get("more_body")):
                answered.set()

        await app(dict(scope), receive, send)
        if answered is not None:
            answered.set()
        start = sent[0]
        return (start["status"], dict(start.get("headers", ())),
                b"".join(m.get("body", b"") for m in sent[1:]))

    return exchange


async def legacy_session_asgi(app: Any, token: str | None) -> str:
    """Open a legacy session through ``app`` (initialize, notifications/initialized)."""
    exchange = exchanger(app)
    init = encode_message({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    headers = [h for h in call_headers("legacy", token) if h[0] != "MCP-Protocol-Version"]
    status, sent, body = await exchange(scope_of(headers, init), init)
    if status != 200:
        raise AssertionError(f"initialize answered {status}: {body[:300]!r}")
    session = sent[b"mcp-session-id"].decode()
    done = encode_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    status, _, body = await exchange(scope_of(call_headers("legacy", token, session), done),
                                     done)
    if status != 202:
        raise AssertionError(f"notifications/initialized answered {status}: {body[:300]!r}")
    return session


# --- over HTTP: the same through serve's runner -----------------------------------------------


def serve_http(name: str, folder: Path, announce: Callable[[int], None]) -> None:
    """Serve configuration ``name`` through ``serve``'s runner on a free loopback port
    (``announce`` learns it) until SIGTERM; the token is written to ``folder/token``. Its
    logging is configured as ``serve`` configures it (the configuration's ``[logging]``, to
    standard error), so the per-request cost of uvicorn's access log is measured too."""
    import sys

    from toolkeeper.server.logs import configure_logging
    from toolkeeper.transports.runner import run_foreground

    port = _free_port()
    built = assemble(name, folder, port)
    (folder / "token").write_text(built.token or "")
    settings = built.logging
    configure_logging(settings.level, sys.stderr, log_format=settings.format,
                      access=settings.access)
    # ``access`` only where this checkout's runner takes it (``--src`` runs an older one).
    access = ({"access": settings.access}
              if "access" in inspect.signature(run_foreground).parameters else {})
    try:
        run_foreground(built.app, host="127.0.0.1", port=port, path="/mcp",
                       log_level=settings.level, on_ready=lambda running: announce(running.port),
                       **access)
    finally:
        built.stop()


def legacy_session_http(url: str, token: str | None) -> str:
    """Open a legacy session over HTTP (initialize, notifications/initialized): its id."""
    import urllib.request

    init = encode_message({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    headers = dict(h for h in call_headers("legacy", token) if h[0] != "MCP-Protocol-Version")
    with urllib.request.urlopen(urllib.request.Request(url, init, headers), timeout=30) as r:
        session: str = r.headers["mcp-session-id"]
        r.read()
    done = encode_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    with urllib.request.urlopen(urllib.request.Request(
            url, done, dict(call_headers("legacy", token, session))), timeout=30) as r:
        r.read()
    return session


def check_reply(body: bytes) -> None:
    message = json.loads(body)
    result = message.get("result") if isinstance(message, dict) else None
    if (not isinstance(result, dict) or result.get("isError") is not False
            or "PMT-771: HELD" not in result["content"][0]["text"]):
        raise AssertionError(f"unexpected reply: {body[:300]!r}")
