"""An MCP server written with the official Python SDK 1.x (``mcp`` 1.30.0, its FastMCP; run by the
interpreter of the virtualenv the ``peers`` fixture installs), for the conformance panel:
``python mcp1_panel_server.py http`` serves stateful Streamable HTTP on 127.0.0.1 (an ephemeral
port, printed as ``PORT <n>`` once listening); ``... stdio`` serves stdio. One read-only tool,
``lookup(reference: str)``, and the SDK's defaults for everything else."""

from __future__ import annotations

import socket
import sys
import warnings

warnings.filterwarnings("ignore")

import uvicorn  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

server = FastMCP("conformance-panel-mcp1", host="127.0.0.1", log_level="WARNING")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(reference: str) -> str:
    """Look up a payment by reference."""
    return f"payment {reference}"


def main() -> None:
    if sys.argv[1:] == ["stdio"]:
        server.run("stdio")
        return
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)  # connections made before uvicorn serves wait in the backlog
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    app = server.streamable_http_app()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


if __name__ == "__main__":
    main()
