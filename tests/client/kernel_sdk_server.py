"""An MCP server written with the official Python SDK (``mcp`` MCPServer), for the kernel's
interop tests: ``python kernel_sdk_server.py http`` serves Streamable HTTP on 127.0.0.1 (an
ephemeral port, printed as ``PORT <n>`` once listening); ``... stdio`` serves stdio. It knows
nothing of contract versions. Tools:

* ``lookup(reference: str matching ^PMT-\\d{3,}$, include_legs: bool = False)``, read-only;
* ``add(a: int, b: int) -> int``, without annotations (so: destructive, never retried).
"""

from __future__ import annotations

import socket
import sys
import warnings
from typing import Annotated, Any

warnings.filterwarnings("ignore")

import mcp_types as types  # noqa: E402
import uvicorn  # noqa: E402
from mcp.server import MCPServer  # noqa: E402
from pydantic import Field  # noqa: E402

server = MCPServer("kernel-sdk-fixture", version="0.0.1")


@server.tool(annotations=types.ToolAnnotations(readOnlyHint=True))
def lookup(reference: Annotated[str, Field(pattern=r"^PMT-\d{3,}$")],
           include_legs: bool = False) -> dict[str, Any]:
    """Look up a payment by reference."""
    return {"reference": reference, "legs": 2 if include_legs else 0}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def main() -> None:
    if sys.argv[1:] == ["stdio"]:
        server.run("stdio")
        return
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)  # connections made before uvicorn serves wait in the backlog
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


if __name__ == "__main__":
    main()
