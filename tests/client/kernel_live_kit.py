"""Real ``toolkeeper serve`` processes for the kernel's live acceptance tests: start one on
127.0.0.1 (ephemeral port) over a SQLite registry file, run the operator's CLI against the
same file, and read the durable call log. Every wait is bounded; processes stop by pid."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import toolkeeper
from process_kit import keep_draining, read_until, stop_process
from toolkeeper.client import ClientTimeouts

__all__ = ["BOUNDS", "ENV", "call_log", "gateway", "toolkeeper_cli"]

_SRC = str(Path(toolkeeper.__file__).resolve().parent.parent)
_URL = re.compile(rb"toolkeeper gateway on (http://127\.0\.0\.1:\d+/mcp)\r?\n")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_SRC,
                                                                 os.environ.get("PYTHONPATH")]))}
BOUNDS = ClientTimeouts(probe_s=20.0, request_s=20.0, close_s=10.0)


@contextmanager
def gateway(registry: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``toolkeeper serve`` over ``registry`` with ``extra`` flags; yields its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkeeper", "serve", "--registry", f"sqlite:///{registry}",
         "--port", "0", "--log-level", "warning", *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**ENV, **(env or {})})
    try:
        assert proc.stderr is not None
        url = read_until(proc.stderr, _URL, 30).group(1).decode()
        keep_draining(proc.stderr)
        yield url
    finally:
        stop_process(proc)


def toolkeeper_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run the ``toolkeeper`` CLI (the operator's, or a script's) to completion."""
    return subprocess.run([sys.executable, "-m", "toolkeeper", *args], capture_output=True,
                          timeout=60, check=False, env=ENV)


def call_log(registry: Path, tool: str, *, at_least: int, timeout: float = 20.0
             ) -> list[dict[str, Any]]:
    """The call log's rows for ``tool`` (``toolkeeper calls --json``), polled until it holds
    ``at_least`` rows or ``timeout`` passes (the gateway writes it behind the calls)."""
    deadline = time.monotonic() + timeout
    while True:
        done = toolkeeper_cli("calls", "--registry", f"sqlite:///{registry}", "--tool", tool,
                              "--json")
        assert done.returncode == 0, done.stderr.decode()
        rows: list[dict[str, Any]] = json.loads(done.stdout)
        if len(rows) >= at_least or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)
