"""``@modelcontextprotocol/server-everything`` for the kernel's interop tests: installed once
with npm (pinned, with Node 22 from the ``node`` package, as the interop matrix installs its
Node clients) into the shared interop cache through the interop kit's ``cached_dir`` (a lock,
and a ready marker written last); run over Streamable HTTP on 127.0.0.1 or over stdio."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from process_kit import read_until, stop_process

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "interop"))

from interop_kit import InstallError, cache_root, cached_dir, run_install

__all__ = ["VERSION", "InstallError", "everything_argv", "everything_http", "install",
           "install_or_skip"]

VERSION = "2026.8.31"
NODE = "22.23.3"
PACKAGE = "@modelcontextprotocol/server-everything"


def _build(target: Path) -> None:
    target.mkdir(parents=True)
    (target / "package.json").write_text(json.dumps({
        "name": "toolkeeper-kernel-server-everything", "private": True,
        "dependencies": {PACKAGE: VERSION, "node": NODE}}, indent=2))
    run_install(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target)


def install() -> Path:
    """The install directory (InstallError when npm cannot install it)."""
    return cached_dir(cache_root(), f"server-everything-{VERSION}-node{NODE}", _build)


def install_or_skip() -> Path:
    """:func:`install`, or the calling test (fixture) skipped where npm cannot install it."""
    try:
        return install()
    except InstallError as exc:
        pytest.skip(f"server-everything cannot be installed here: {str(exc)[:300]}")


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
