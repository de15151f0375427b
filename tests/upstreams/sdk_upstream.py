"""An upstream MCP server written with the official Python SDK (``mcp`` 2.3.0 MCPServer), for
the forwarding tests: ``python sdk_upstream.py http`` serves Streamable HTTP on 127.0.0.1 (an
ephemeral port, printed as ``PORT <n>`` once listening); ``... stdio`` serves stdio. Tools:

* ``echo(text)``: the text back, with ``structuredContent`` ``{"result": text}``;
* ``fails()``: raises, so the SDK answers an ``isError`` result;
* ``quota()``: raises ``MCPError(4001, "quota exceeded", {"retryAfterS": 7})``, a JSON-RPC
  error with a custom code;
* ``hang()``: never answers (waits on an event nothing sets);
* ``die()``: the process exits mid-call;
* ``pid()``: the server's process id;
* ``steps(count)``: reports progress ``1..count`` of ``count`` (message ``step N``), then
  answers ``done``;
* ``chatty()``: logs ``one``, ``two`` (info) and ``three`` (warning, logger ``chatty``)
  to its client, then answers ``said``;
* ``confirm()``: asks its client (``elicitation/create``, a form with a boolean ``ok``) and
  answers ``<action>:<ok>``;
* ``greet(greeting)``: the SDK's own resolver (``Resolve`` of an ``Elicit``) asks the
  client's name, answering ``<greeting>, <name>!``. On 2026-07-28 the SDK answers
  ``input_required`` with its own sealed ``requestState`` (bound to the request, refused
  -32602 when it does not come back as sent) and resumes on the retry; on 2025-11-25 it
  sends ``elicitation/create`` mid-call;
* ``introduce()``: two resolvers, the second depending on the first, so two rounds: the name,
  then ``<name>, your colour?``; answers ``<name> likes <colour>``;
* ``insists()`` (2026-07-28): answers ``input_required`` every round, asking ``Again?
  (round N)`` with ``requestState`` ``N`` (one more than the state it was given).
"""

from __future__ import annotations

import os
import socket
import sys
import warnings
from typing import Annotated

warnings.filterwarnings("ignore")

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
import uvicorn  # noqa: E402
from mcp.server import MCPServer  # noqa: E402
from mcp.server.mcpserver import Context, Elicit, Resolve  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from pydantic import BaseModel  # noqa: E402

server = MCPServer("forwarding-sdk-fixture", version="0.0.1")


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool()
def fails() -> str:
    """Always fails."""
    raise ValueError("the fixture's failure")


@server.tool()
def quota() -> str:
    """Always refused with a custom JSON-RPC error."""
    raise MCPError(4001, "quota exceeded", {"retryAfterS": 7})


@server.tool()
async def hang() -> str:
    """Never answers."""
    await anyio.Event().wait()
    return "unreachable"


@server.tool()
def die() -> str:
    """Exits the process mid-call."""
    os._exit(3)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def steps(count: int, ctx: Context) -> str:  # type: ignore[type-arg]
    """Reports progress, then answers."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step}")
    return "done"


@server.tool()
async def chatty(ctx: Context) -> str:  # type: ignore[type-arg]
    """Logs to its client, then answers."""
    await ctx.info("one")
    await ctx.info("two")
    await ctx.log("warning", "three", logger_name="chatty")
    return "said"


class Confirmation(BaseModel):
    ok: bool


@server.tool()
async def confirm(ctx: Context) -> str:  # type: ignore[type-arg]
    """Asks the client to confirm."""
    answer = await ctx.elicit("Proceed?", Confirmation)
    data = getattr(answer, "data", None)
    return f"{answer.action}:{data.ok if data is not None else '-'}"


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def greet(greeting: str, name: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greets the client by the name it gives."""
    return f"{greeting}, {name.name}!"


class Colour(BaseModel):
    colour: str


def ask_colour(name: Annotated[Name, Resolve(ask_name)]) -> Elicit[Colour]:
    return Elicit(f"{name.name}, your colour?", Colour)


@server.tool()
def introduce(name: Annotated[Name, Resolve(ask_name)],
              colour: Annotated[Colour, Resolve(ask_colour)]) -> str:
    """Asks the client's name, then its colour."""
    return f"{name.name} likes {colour.colour}"


@server.tool()
async def insists(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:  # type: ignore[type-arg]
    """Asks again, whatever it is answered."""
    state = ctx.request_state
    round_ = int(state) + 1 if state is not None and state.isdigit() else 1
    return types.InputRequiredResult.model_validate({
        "resultType": "input_required", "requestState": str(round_),
        "inputRequests": {"again": {"method": "elicitation/create", "params": {
            "mode": "form", "message": f"Again? (round {round_})",
            "requestedSchema": {"type": "object", "properties": {}}}}}})


def main() -> None:
    if sys.argv[1:2] == ["stdio"]:
        for line in sys.argv[2:]:  # ``stdio LINE...``: each written to stderr before serving
            print(line, file=sys.stderr, flush=True)
        server.run("stdio")
        return
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


if __name__ == "__main__":
    main()
