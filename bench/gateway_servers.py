"""The three servers of ``bench/gateway.py`` part (b), one per process, under identical uvicorn
settings: ``python bench/gateway_servers.py {toolkeeper|sdk|echo}`` binds 127.0.0.1 on an
ephemeral port, prints ``PORT <n>`` on stdout, then serves until SIGTERM/SIGINT.

* ``toolkeeper``: the demo gateway over an in-memory registry, ``json_response=True``;
* ``sdk``: the official ``mcp`` SDK's ``MCPServer`` with one tool ``payments.lookup`` of the same
  input schema (a reference matching ``^PMT-\\d{3,}$``, optional ``include_legs``) and the same
  result (one text block and the same structured content), served by
  ``streamable_http_app(stateless_http=True, json_response=True)``;
* ``sdk-stateful``: the same SDK server with sessions (``stateless_http=False``), for the
  legacy era's rows;
* ``anonymous``, ``demo``, ``deploy``, ``deploy-jwt``: the configurations of
  ``bench/deployment.py``, served through ``toolkeeper serve``'s own runner (its connection
  bounds and head timeout included); they print ``PORT <n> TOKEN <token or ->``;
* ``echo``: a bare ASGI app that reads the body and answers a fixed small JSON (the ceiling of
  the server stack);
* ``forwarded``: the demo's ``payments.lookup`` contract served by forwarding to the
  upstream at ``BENCH_UPSTREAM_URL`` (``bench/forwarding.py``);
* ``fastmcp-proxy``: FastMCP's ``create_proxy`` in front of ``BENCH_UPSTREAM_URL`` (run with
  an interpreter that has ``fastmcp``);
* ``floor``: a bare ASGI app like the echo that answers with the floor of the work
  (``bench/gateway_floor.py``: toolkeeper's reply from one flat function, no checks beyond
  what the answer needs), the least any Python gateway on this stack can cost.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any

import uvicorn
from mcp_types import CallToolResult, TextContent
from pydantic import Field

__all__ = ["KINDS", "UVICORN_SETTINGS", "build", "echo_app", "main"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

UVICORN_SETTINGS: dict[str, Any] = {
    "loop": "uvloop", "http": "httptools", "ws": "none", "lifespan": "on",
    "log_level": "warning", "access_log": False, "workers": 1,
}
"""The same for every server: one worker, one loop and HTTP implementation, quiet logs."""

ECHO_BODY = b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _read(receive: Receive) -> bytes | None:
    """The whole request body (None if the client left)."""
    chunks: list[bytes] = []
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Read the whole body, answer :data:`ECHO_BODY` (and run the lifespan protocol)."""
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    if await _read(receive) is not None:
        await _answer(send, 200, ECHO_BODY)


def _toolkeeper_app() -> Any:
    from toolkeeper.demo import demo_handlers, install_demo
    from toolkeeper.registry import Registry
    from toolkeeper.server import build_app
    from toolkeeper.transports.http import HttpConfig

    registry = Registry.open("memory:")
    install_demo(registry)
    app, _ = build_app(registry, demo_handlers(), http=HttpConfig(json_response=True))
    return app


def _floor_app() -> Any:
    from gateway_floor import Floor

    from toolkeeper.demo import demo_handlers, install_demo
    from toolkeeper.protocol import TransportFacts
    from toolkeeper.registry import Registry
    from toolkeeper.server import InMemoryCallLog
    from toolkeeper.server.principal import LocalPrincipal

    registry = Registry.open("memory:")
    install_demo(registry)
    floor = Floor(registry, demo_handlers(), LocalPrincipal(registry)(TransportFacts("http", None)),
                  InMemoryCallLog())

    async def emit(message: dict[str, Any]) -> None:
        return None

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        body = await _read(receive)
        if body is not None:
            reply = await floor.dispatch(body, scope["headers"], emit)
            await _answer(send, 400, b"{}") if reply is None else await _answer(send, 200, reply)

    return app


def _sdk_app(stateless: bool = True) -> Any:
    from mcp.server import MCPServer

    server: MCPServer[Any] = MCPServer("sdk-bench")
    payments = {"PMT-771": ("HELD", 250000, "AED", "ACME TRADING LLC")}

    @server.tool(name="payments.lookup", title="Look up a payment",
                 description="Look up a payment by its reference (PMT-NNN) and return its "
                             "status, amount and currency; optionally include the settlement "
                             "legs.")
    def lookup(reference: Annotated[str, Field(pattern=r"^PMT-\d{3,}$",
                                               description="Payment reference, e.g. PMT-771")],
               include_legs: Annotated[bool, Field(description="Include settlement legs")]
               = False) -> CallToolResult:
        status, amount, currency, beneficiary = payments.get(
            reference, ("PENDING", 0, "AED", "UNKNOWN BENEFICIARY"))
        line = f"{reference}: {status}, {amount} {currency}, beneficiary {beneficiary}"
        data: dict[str, Any] = {"reference": reference, "status": status, "amount": amount,
                                "currency": currency, "beneficiary": beneficiary}
        return CallToolResult(content=[TextContent(type="text", text=line)],
                              structured_content=data)

    return server.streamable_http_app(stateless_http=stateless, json_response=True,
                                      host="127.0.0.1")


def _forwarded_app() -> Any:
    """The demo's ``payments.lookup`` contract (1.0.0) served by forwarding each call to the
    same tool of the upstream at ``BENCH_UPSTREAM_URL`` (the ``sdk`` server), modern era: the
    gateway's gate, validation and call log as for ``toolkeeper``, then the upstream call in
    place of the handler."""
    import os

    from toolkeeper.demo import install_demo
    from toolkeeper.registry import Registry
    from toolkeeper.server import build_app
    from toolkeeper.transports.http import HttpConfig
    from toolkeeper.upstreams import UpstreamBinding, UpstreamDefinition
    from toolkeeper.upstreams.connections import UpstreamConnections
    from toolkeeper.upstreams.forwarding import UpstreamTools

    registry = Registry.open("memory:")
    install_demo(registry)
    upstream = UpstreamDefinition(name="sdk", url=os.environ["BENCH_UPSTREAM_URL"],
                                  era="modern")
    definitions = {upstream.name: upstream}
    binding = UpstreamBinding("sdk", "payments.lookup", "payments.lookup", "1.0.0", "-")
    tools = UpstreamTools(definitions, lambda: [binding], UpstreamConnections(definitions))
    app, _ = build_app(registry, http=HttpConfig(json_response=True), sources=[tools])
    return app


def _fastmcp_proxy_app() -> Any:
    """FastMCP's proxy (``create_proxy``) in front of the upstream at ``BENCH_UPSTREAM_URL``,
    stateless with JSON responses like the others; run with an interpreter that has
    ``fastmcp`` (``bench/forwarding.py`` uses the pinned one of the interop cache)."""
    import os

    from fastmcp.server import create_proxy

    proxy = create_proxy(os.environ["BENCH_UPSTREAM_URL"], name="fastmcp-proxy-bench")
    return proxy.http_app(path="/mcp", stateless_http=True, json_response=True)


KINDS: dict[str, Callable[[], Any]] = {
    "toolkeeper": _toolkeeper_app,
    "sdk": _sdk_app,
    "sdk-stateful": lambda: _sdk_app(stateless=False),
    "echo": lambda: echo_app,
    "floor": _floor_app,
    "forwarded": _forwarded_app,
    "fastmcp-proxy": _fastmcp_proxy_app,
}


def build(kind: str) -> Any:
    """The ASGI app of one server kind."""
    return KINDS[kind]()


DEPLOYED = ("anonymous", "demo", "deploy", "deploy-jwt")
"""Served as ``toolkeeper serve`` serves them (``bench/deployment.py``: the configuration file
loaded, the features built, serve's runner); ``PORT <n> TOKEN <bearer token or ->``."""


def main(argv: list[str]) -> int:
    if len(argv) == 1 and argv[0] in DEPLOYED:
        import tempfile
        from pathlib import Path

        from deployment import serve_http

        with tempfile.TemporaryDirectory() as folder:
            def announce(port: int) -> None:
                token = (Path(folder) / "token").read_text() or "-"
                print(f"PORT {port} TOKEN {token}", flush=True)

            serve_http(argv[0], Path(folder), announce)
        return 0
    if len(argv) != 1 or argv[0] not in KINDS:
        print(f"usage: gateway_servers.py {{{'|'.join((*KINDS, *DEPLOYED))}}}", file=sys.stderr)
        return 2
    app = build(argv[0])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    settings = {k: v for k, v in UVICORN_SETTINGS.items() if k != "workers"}
    uvicorn.Server(uvicorn.Config(app, **settings)).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
