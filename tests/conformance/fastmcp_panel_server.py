"""An MCP server written with FastMCP (the newest, pinned by the interop kit), for the
conformance panel: ``python fastmcp_panel_server.py http`` serves Streamable HTTP on 127.0.0.1
(an ephemeral port, printed as ``PORT <n>`` once listening); ``... stdio`` serves stdio. One
read-only tool, ``lookup(reference: str)``, and its defaults for everything else."""

from __future__ import annotations

import socket
import sys
import warnings

warnings.filterwarnings("ignore")

import uvicorn  # noqa: E402
from fastmcp import FastMCP  # noqa: E402

server = FastMCP("conformance-panel-fastmcp")


@server.tool(annotations={"readOnlyHint": True})
def lookup(reference: str) -> str:
    """Look up a payment by reference."""
    return f"payment {reference}"


def main() -> None:
    if sys.argv[1:] == ["stdio"]:
        server.run("stdio", show_banner=False)
        return
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)  # connections made before uvicorn serves wait in the backlog
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    app = server.http_app(path="/mcp")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


if __name__ == "__main__":
    main()
