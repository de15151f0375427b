"""``@modelcontextprotocol/server-everything`` for the kernel's interop tests, run over
Streamable HTTP on 127.0.0.1 or over stdio. Its install (pinned, with Node 22 from the ``node``
package) is the shared ``peers`` fixture's (``tests/peer_kit.py``): a test takes the install
directory from ``peers.everything()``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from peer_kit import EVERYTHING_PACKAGE, EVERYTHING_VERSION
from process_kit import read_until, stop_process

__all__ = ["PACKAGE", "VERSION", "everything_argv", "everything_http"]

VERSION = EVERYTHING_VERSION
PACKAGE = EVERYTHING_PACKAGE


_LOOPBACK = Path(__file__).resolve().parent / "kernel_loopback.cjs"


def everything_argv(root: Path, transport: str) -> list[str]:
    """Node 22 running server-everything over ``transport`` (``stdio``, ``streamableHttp``),
    with a preload that keeps its HTTP listener on 127.0.0.1."""
    node = root / "node_modules" / ".bin" / "node"
    script = root / "node_modules" / PACKAGE / "dist" / "index.js"
    return [str(node), "--require", str(_LOOPBACK), str(script), transport]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def everything_http(root: Path) -> Iterator[str]:
    """server-everything's Streamable HTTP transport on a loopback port; yields its URL."""
    port = _free_port()
    proc = subprocess.Popen(everything_argv(root, "streamableHttp"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PORT": str(port)})
    try:
        assert proc.stdout is not None
        read_until(proc.stdout, re.compile(rb"listening on port \d+"), 30)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)
        if proc.stdout is not None:
            proc.stdout.close()
