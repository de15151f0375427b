"""Fixtures for proxy evidence: the nginx binary (skipped when absent outside CI, a failure
under CI) and the demo gateway over HTTP as the origin (one per module, stopped by its pid)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from nginx_kit import require_nginx

import toolkeeper
from process_kit import read_until

_SRC = str(Path(toolkeeper.__file__).resolve().parent.parent)
_URL = re.compile(rb"toolkeeper gateway on (http://127\.0\.0\.1:\d+/mcp)\r?\n")
START_TIMEOUT_S = 30.0


@pytest.fixture(scope="session")
def nginx() -> str:
    """The nginx binary. Absent: a skip on a workstation, a failure under CI (``.ci/run``
    installs it, so its absence there is a broken pipeline, not an optional test)."""
    return require_nginx()


@pytest.fixture(scope="module")
def demo_origin() -> Iterator[str]:
    """The URL of ``toolkeeper serve --demo`` on an ephemeral 127.0.0.1 port."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [_SRC, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkeeper", "serve", "--demo", "--registry", "memory:",
         "--port", "0", "--log-level", "warning"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    drain: threading.Thread | None = None
    try:
        url = read_until(proc.stderr, _URL, START_TIMEOUT_S).group(1).decode()
        drain = threading.Thread(target=proc.stderr.read, daemon=True)
        drain.start()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if drain is not None:
            drain.join(timeout=10)  # the pipe ends with the process: join, then close
        proc.stderr.close()
